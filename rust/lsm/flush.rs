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
use crate::lsm::range_tombstone::FragmentedTombstones;
use crate::lsm::retry::Backoff;
use crate::lsm::table_sink::TableSink;
use crate::lsm::tombstone_files::{self, TombstoneFile};
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
    // A failed flush leaves nothing behind.
    let write_tombstones = || {
        file_tombstones(db, tombstones)
            .inspect_err(|_| files.iter().for_each(|f| f.mark_obsolete()))
    };
    let mut filed = write_tombstones()?;
    #[cfg(feature = "failpoints")]
    crate::lsm::failpoints::FLUSH.hit();
    let data_bytes = files.iter().map(|f| f.size).sum::<u64>();
    loop {
        let edit = |version: &mut Version| {
            if filed.replaces.as_ref().is_some_and(|replaced| !replaced.is_listed_by(version)) {
                return false;
            }
            // Newest first; files of one flush do not overlap, so their order among them is free.
            let older = std::mem::replace(&mut version.levels[0], files.clone());
            version.levels[0].extend(older);
            if filed.replaces.is_some() {
                version.tombstone_files.clear();
                version.unfiled_tombstones = Arc::default();
                version.tombstones =
                    filed.file.as_ref().map(|t| t.tombstones.clone()).unwrap_or_default();
            } else if let Some(new) = &filed.file {
                version.tombstones = Arc::new(version.tombstones.merged_with(&new.tombstones));
            }
            version.tombstone_files.extend(filed.file.clone());
            true
        };
        if db.try_install_version(edit, Some(memtable))? {
            break;
        }
        // A compaction forgot a tombstone file meanwhile: the new file may hold spent fragments
        // of it, which must never come back (see `lsm::tombstone_files`). Written again.
        filed.file.iter().for_each(|t| t.file.mark_obsolete());
        filed = write_tombstones()?;
    }
    let tombstone_bytes = filed.file.as_ref().map_or(0, |t| t.file.size);
    let bytes_written = data_bytes + tombstone_bytes;
    db.counters.flushed(bytes_written);
    // New range deletes may make files worth rewriting (see `compaction::picker`).
    if db.current().version.levels[0].len() >= db.options.l0_compaction_trigger
        || !tombstones.is_empty()
    {
        db.request_compaction();
    }
    Ok(())
}

/// The tombstone file a flush writes (`lsm::tombstone_files`).
struct Filed {
    /// None when no range delete needs one.
    file: Option<TombstoneFile>,
    /// Set when the file holds every live range delete: it replaces these.
    replaces: Option<Replaced>,
}

/// The range deletes of a version that a new tombstone file replaces: its tombstone files and
/// unfiled tombstones.
struct Replaced {
    files: Vec<u64>,
    unfiled: Arc<FragmentedTombstones>,
}

impl Replaced {
    fn of(version: &Version) -> Replaced {
        let files = version.tombstone_files.iter().map(|t| t.file.number).collect();
        Replaced { files, unfiled: version.unfiled_tombstones.clone() }
    }

    /// Whether `version` lists exactly these. Only flushes (one at a time) add tombstone files,
    /// and installs only forget some, so a version that still lists them all holds every range
    /// delete the new file was written from.
    fn is_listed_by(&self, version: &Version) -> bool {
        version.tombstone_files.iter().map(|t| t.file.number).eq(self.files.iter().copied())
            && Arc::ptr_eq(&version.unfiled_tombstones, &self.unfiled)
    }
}

/// Writes the flushed memtable's range deletes that files still need into a new tombstone file;
/// when `MAX_FILES` are listed already, the spent fragments outnumber the live ones (past
/// `MAX_SPENT_FRAGMENTS`) or the version holds range deletes no file does, every live one
/// instead, into one file that replaces them all.
fn file_tombstones(db: &DbInner, tombstones: &Arc<FragmentedTombstones>) -> Result<Filed> {
    let current = db.current().version.clone();
    // New deletes over no file that holds older entries are spent at once (the flush's own
    // files hold only entries newer than them). Compactions meanwhile write no entry older
    // than them that their inputs did not hold, so a delete spent here stays spent.
    let probe = Version {
        levels: current.levels.clone(),
        tombstones: tombstones.clone(),
        ..Version::default()
    };
    let new = Arc::new(probe.live_tombstones());
    let live = current.live_tombstones();
    let spent = current.tombstones.len() - live.len();
    let replaces_all = !current.unfiled_tombstones.is_empty()
        || (!new.is_empty() && current.tombstone_files.len() >= tombstone_files::MAX_FILES)
        || spent >= tombstone_files::MAX_SPENT_FRAGMENTS.max(live.len());
    let (content, replaces) = match replaces_all {
        true => (Arc::new(live.merged_with(&new)), Some(Replaced::of(&current))),
        false => (new, None),
    };
    let file = match content.is_empty() {
        true => None,
        false => Some(tombstone_files::write(db, content.clone())?),
    };
    Ok(Filed { file, replaces })
}
