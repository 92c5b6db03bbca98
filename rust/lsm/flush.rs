//! The flush worker: writes the oldest frozen memtable as L0 files and installs them. A failed
//! flush keeps the memtable and leaves the last manifest current; a transient failure is retried,
//! any other fails the database (`lsm::retry`), as a panic does (`DbInner::spawn_worker`).

use std::sync::Arc;

use crate::Result;
use crate::lsm::collapse::collapse_into;
use crate::lsm::db_state::DbInner;
use crate::lsm::locks::Recover;
use crate::lsm::memtable::MemTable;
use crate::lsm::native_heap;
use crate::lsm::retry::Backoff;
use crate::lsm::table_sink::TableSink;
use crate::lsm::version::Version;

pub(crate) fn run_flush_worker(db: &DbInner) {
    let mut backoff = Backoff::default();
    loop {
        let oldest = {
            let mut background = db.background.lock().recover();
            loop {
                if db.stopped(&background) {
                    return;
                }
                if let Some(oldest) = next_to_flush(db) {
                    break oldest;
                }
                background = db.background_changed.wait(background).recover();
            }
        };
        let flushed = flush_memtable(db, &oldest);
        // Let go of the memtable (and the version it was flushed into) before reporting, so a
        // waiter that returns holds the last references to what the flush replaced.
        drop(oldest);
        match flushed {
            Ok(()) => {
                native_heap::release_free_memory();
                backoff.succeeded();
                db.background.lock().recover().flushes_done += 1;
                db.background_changed.notify_all();
            }
            Err(e) => match backoff.after(&e, &db.options) {
                Some(delay) => {
                    tracing::warn!("flush failed, retrying in {delay:?}: {e}");
                    if !db.pause_before_retry(delay) {
                        return;
                    }
                }
                None => return db.fail(e),
            },
        }
    }
}

/// The oldest frozen memtable, unless level 0 is too full. The super version is not kept: an idle
/// flush thread must not keep an old version's files alive.
fn next_to_flush(db: &DbInner) -> Option<Arc<MemTable>> {
    let sv = db.current();
    let level0_full =
        db.options.auto_compaction && sv.version.levels[0].len() >= db.options.l0_stop_trigger;
    sv.frozen.last().filter(|_| !level0_full).cloned()
}

fn flush_memtable(db: &DbInner, memtable: &Arc<MemTable>) -> Result<()> {
    let tombstones = memtable.frozen_tombstones();
    let mut sink = TableSink::for_flush(db, tombstones.max_seq());
    // Not bottommost: older versions of these keys may live in files. No TTL filter (see `ttl`).
    collapse_into(&mut memtable.iter(), tombstones, false, None, &mut sink)?;
    let files = sink.finish()?;
    #[cfg(feature = "failpoints")]
    crate::lsm::failpoints::FLUSH.hit();
    let bytes_written = files.iter().map(|f| f.size).sum();
    let edit = |version: &mut Version| {
        // Newest first; files of one flush do not overlap, so their order among them is free.
        let older = std::mem::replace(&mut version.levels[0], files);
        version.levels[0].extend(older);
        if !tombstones.is_empty() {
            version.tombstones = Arc::new(version.tombstones.merged_with(tombstones));
        }
    };
    db.install_version(edit, Some(memtable))?;
    db.counters.flushed(bytes_written);
    // New range deletes may make files worth rewriting (see `compaction::picker`).
    if db.current().version.levels[0].len() >= db.options.l0_compaction_trigger
        || !tombstones.is_empty()
    {
        db.request_compaction();
    }
    Ok(())
}
