//! The flush worker: writes the oldest frozen memtable as L0 files and installs them. A failed
//! flush keeps the memtable (readers still see it) and is retried; `Db::flush` reports it.

use std::sync::Arc;
use std::time::Duration;

use crate::Result;
use crate::lsm::collapse::collapse_into;
use crate::lsm::db::DbInner;
use crate::lsm::memtable::MemTable;
use crate::lsm::table_sink::TableSink;
use crate::lsm::version::Version;

const RETRY_DELAY: Duration = Duration::from_millis(100);

pub(crate) fn run_flush_worker(db: &DbInner) {
    loop {
        let oldest = {
            let mut background = db.background.lock().unwrap();
            loop {
                if background.shutdown {
                    return;
                }
                let sv = db.current();
                let level0_full = db.options.auto_compaction
                    && sv.version.levels[0].len() >= db.options.l0_stop_trigger;
                if let Some(oldest) = sv.frozen.last().filter(|_| !level0_full) {
                    break oldest.clone();
                }
                background = db.background_changed.wait(background).unwrap();
            }
        };
        if let Err(e) = flush_memtable(db, &oldest) {
            tracing::warn!("flush failed, will retry: {e}");
            let mut background = db.background.lock().unwrap();
            background.flush_failures += 1;
            background.last_flush_error = Some(e.to_string());
            db.background_changed.notify_all();
            let _ = db.background_changed.wait_timeout(background, RETRY_DELAY);
        }
    }
}

fn flush_memtable(db: &DbInner, memtable: &Arc<MemTable>) -> Result<()> {
    let tombstones = memtable.frozen_tombstones();
    let mut sink = TableSink::new(db, tombstones.max_seq());
    // Not bottommost: older versions of these keys may live in files.
    collapse_into(&mut memtable.iter(), tombstones, false, &mut sink)?;
    let files = sink.finish()?;
    let edit = |version: &mut Version| {
        // Newest first; files of one flush do not overlap, so their order among them is free.
        let older = std::mem::replace(&mut version.levels[0], files);
        version.levels[0].extend(older);
        if !tombstones.is_empty() {
            version.tombstones = Arc::new(version.tombstones.merged_with(tombstones));
        }
    };
    db.install_version(edit, Some(memtable))?;
    // New range deletes may make files worth rewriting (see `compaction::picker`).
    if db.current().version.levels[0].len() >= db.options.l0_compaction_trigger
        || !tombstones.is_empty()
    {
        db.request_compaction();
    }
    Ok(())
}
