//! Compaction: the background workers (`max_background_compactions` of them), and running one
//! job (merge inputs, write outputs, install). Jobs run side by side when their inputs and output
//! ranges are apart (`in_flight`). A panic in a compaction fails the database, whichever thread
//! runs it (`DbInner::run_supervised`).

pub mod in_flight;
pub mod level_targets;
#[cfg(test)]
mod level_targets_tests;
pub mod picker;

use std::sync::Arc;

use crate::Result;
use crate::lsm::collapse::collapse_into;
use crate::lsm::db_state::DbInner;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::iterators::level::LevelIterator;
use crate::lsm::iterators::merging::MergingIterator;
use crate::lsm::locks::Recover;
use crate::lsm::native_heap;
use crate::lsm::options::NUM_LEVELS;
use crate::lsm::retry::Backoff;
use crate::lsm::table_sink::TableSink;
use crate::lsm::version::{TableFile, Version};

pub(crate) fn run_compaction_worker(db: &DbInner) {
    let mut backoff = Backoff::default();
    loop {
        {
            let mut background = db.background.lock().recover();
            while !background.compaction_requested && !db.stopped(&background) {
                background = db.background_changed.wait(background).recover();
            }
            if db.stopped(&background) {
                return;
            }
            background.compaction_requested = false;
        }
        loop {
            if db.stopped(&db.background.lock().recover()) {
                return;
            }
            match run_one_compaction(db) {
                Ok(true) => backoff.succeeded(),
                Ok(false) => break,
                Err(e) => match backoff.after(&e, &db.options) {
                    Some(delay) => {
                        tracing::warn!("compaction failed, retrying in {delay:?}: {e}");
                        if !db.pause_before_retry(delay) {
                            return;
                        }
                    }
                    None => return db.fail(e),
                },
            }
        }
    }
}

/// Picks and runs one compaction; false if none is needed or every one needed would touch what
/// compactions running on other threads hold.
pub(crate) fn run_one_compaction(db: &DbInner) -> Result<bool> {
    let beside_others = db.compaction_lock.read().recover();
    let (version, work, claim) = {
        let mut in_flight = db.compactions.lock();
        // The version is read under the claims' lock: claims are let go only after their
        // results are installed, so every file it lists that no claim holds is free.
        let version = db.current().version.clone();
        let deleted: Vec<_> = version
            .files_deleted_by_tombstones()
            .into_iter()
            .filter(|f| !in_flight.is_busy(f))
            .collect();
        let (work, claim) = if !deleted.is_empty() {
            let claim = db.compactions.claim_files(&mut in_flight, &deleted);
            (Work::Drop(deleted), claim)
        } else {
            match picker::pick(&version, &db.options, &in_flight) {
                Some(job) => {
                    let claim = db.compactions.claim_job(&mut in_flight, &job);
                    (Work::Job(job), claim)
                }
                None => return Ok(false),
            }
        };
        (version, work, claim)
    };
    // Another job may be free beside this one: let a sleeping worker look.
    db.request_compaction();
    // A panic fails the database while the claims and the lock are still held: nobody waiting
    // for them (`compact_until_settled`, a full compaction) can run in the meantime on what the
    // panic left behind.
    let done = db.run_supervised("compaction", || match &work {
        Work::Drop(deleted) => drop_deleted_files(db, deleted),
        Work::Job(job) => run_job(db, &version, job),
    });
    let ran_job = matches!(work, Work::Job(..));
    // What a job read and wrote through is freed once its inputs go with the old version; the
    // trim walks the whole heap, so it waits for no lock another worker or a full compaction
    // could be waiting on.
    drop((claim, work, beside_others, version));
    done?;
    if ran_job {
        native_heap::release_free_memory();
    }
    Ok(true)
}

/// What a worker claimed: files to drop, or a job to run. The claim on them is let go after the
/// result is installed or the work failed.
enum Work {
    Drop(Vec<Arc<TableFile>>),
    Job(picker::CompactionJob),
}

fn run_job(db: &DbInner, version: &Version, job: &picker::CompactionJob) -> Result<()> {
    if job.is_trivial_move() {
        let (level, file) = (job.inputs[0].0, job.inputs[0].1[0].clone());
        return db.install_version(
            |v| {
                remove_files(v, std::slice::from_ref(&file));
                insert_sorted(v, level + 1, vec![file.clone()]);
            },
            None,
        );
    }
    let (lo, hi) = job.key_range();
    // No job in flight can bring keys of [lo, hi] below the output level meanwhile: they would
    // pass through it, where this job holds the range.
    let bottommost =
        (job.output_level + 1..NUM_LEVELS).all(|l| version.overlapping(l, &lo, &hi).is_empty());
    let readahead = readahead_per_input(db, streams(job.inputs.iter().map(|(l, f)| (*l, &f[..]))));
    let mut children = Vec::new();
    for (level, files) in &job.inputs {
        children.extend(input_iterators(*level, files, readahead)?);
    }
    let inputs: Vec<_> = job.input_files().cloned().collect();
    merge_and_install(db, children, version, bottommost, &inputs, job.output_level)
}

/// Drops files that range deletes wholly cover, without reading them. The caller claimed them,
/// so no running job is merging them into its outputs.
fn drop_deleted_files(db: &DbInner, deleted: &[Arc<TableFile>]) -> Result<()> {
    db.install_version(|v| remove_files(v, deleted), None)
}

/// Rewrites every file into the last level.
pub(crate) fn compact_all(db: &DbInner) -> Result<()> {
    // Alone: waits for the running compactions, and none starts meanwhile. A panic fails the
    // database while the lock is held (see `run_one_compaction`).
    let _alone = db.compaction_lock.write().recover();
    db.run_supervised("compaction", || compact_everything(db))
}

fn compact_everything(db: &DbInner) -> Result<()> {
    let version = db.current().version.clone();
    let inputs: Vec<_> = version.files().cloned().collect();
    if inputs.is_empty() {
        return Ok(());
    }
    let levels = version.levels.iter().enumerate().map(|(l, files)| (l, &files[..]));
    let readahead = readahead_per_input(db, streams(levels));
    let mut children = Vec::new();
    for level in 0..NUM_LEVELS {
        children.extend(input_iterators(level, &version.levels[level], readahead)?);
    }
    merge_and_install(db, children, &version, true, &inputs, NUM_LEVELS - 1)
}

/// Share of the block cache that the readahead buffers of all compactions may take together (they
/// are charged to it): many L0 inputs, or many compactions at once, read in smaller requests
/// rather than past the memory budget.
const READAHEAD_CACHE_SHARE: u64 = 4;
/// One small block per request at the least.
const MIN_READAHEAD: u64 = 4 << 10;

/// Files read at once: each L0 file, one file per sorted level.
fn streams<'a>(inputs: impl Iterator<Item = (usize, &'a [Arc<TableFile>])>) -> usize {
    inputs
        .map(|(level, files)| if level == 0 { files.len() } else { usize::from(!files.is_empty()) })
        .sum()
}

/// Bytes per request for each of a compaction's `streams` inputs read at once. Each input holds
/// two spans: the one it reads from and the next, read in the background. Each compaction thread
/// gets an equal part of the share.
fn readahead_per_input(db: &DbInner, streams: usize) -> usize {
    let threads = db.options.max_background_compactions.max(1) as u64;
    let share = db.cache.capacity() / READAHEAD_CACHE_SHARE / threads / (2 * streams.max(1) as u64);
    let configured = db.options.compaction_readahead_bytes.max(1) as u64;
    share.clamp(MIN_READAHEAD.min(configured), configured) as usize
}

/// L0 files overlap, so each gets its own iterator; a sorted level is one concatenation.
fn input_iterators(
    level: usize,
    files: &[Arc<TableFile>],
    readahead: usize,
) -> Result<Vec<Box<dyn InternalIterator>>> {
    if files.is_empty() {
        Ok(Vec::new())
    } else if level == 0 {
        files
            .iter()
            .map(|f| Ok(Box::new(f.iter(readahead)?) as Box<dyn InternalIterator>))
            .collect()
    } else {
        Ok(vec![Box::new(LevelIterator::new(files.to_vec(), readahead))])
    }
}

fn merge_and_install(
    db: &DbInner,
    children: Vec<Box<dyn InternalIterator>>,
    version: &Version,
    bottommost: bool,
    inputs: &[Arc<TableFile>],
    output_level: usize,
) -> Result<()> {
    let mut merged = MergingIterator::new(children);
    let mut sink = TableSink::new(db, version.max_tombstone_seq());
    let mut ttl = db.ttl.pass();
    collapse_into(&mut merged, &version.tombstones, bottommost, Some(&mut ttl), &mut sink)?;
    let outputs = sink.finish()?;
    #[cfg(feature = "failpoints")]
    crate::lsm::failpoints::COMPACTION.hit();
    let installed = db.install_version(
        |v| {
            remove_files(v, inputs);
            insert_sorted(v, output_level, outputs.clone());
        },
        None,
    );
    match installed {
        Ok(()) => {
            let size = |files: &[Arc<TableFile>]| files.iter().map(|f| f.size).sum();
            db.counters.compacted(output_level, size(inputs), size(&outputs));
            Ok(())
        }
        Err(e) => {
            outputs.iter().for_each(|f| f.mark_obsolete());
            Err(e)
        }
    }
}

fn remove_files(version: &mut Version, files: &[Arc<TableFile>]) {
    for level in version.levels.iter_mut() {
        level.retain(|f| !files.iter().any(|g| g.number == f.number));
    }
}

fn insert_sorted(version: &mut Version, level: usize, files: Vec<Arc<TableFile>>) {
    version.levels[level].extend(files);
    version.levels[level].sort_by(|a, b| a.smallest().cmp(b.smallest()));
}
