//! Leveled compaction picking.
//!
//! Why leveled and not tiered for Flink state: reads are point gets (value state, map entries)
//! and prefix scans (map iteration) over keys that are updated again and again; leveled keeps at
//! most one file per level in a key's way and little dead data, so a get on the DFS costs at most
//! one block read per level (bloom filters skip the rest) and the DFS holds about 1.1x the live
//! state, which is also what checkpoints retain. The price, more rewriting, is paid by background
//! threads, and trivial moves avoid it whenever a file overlaps nothing below.

use std::sync::Arc;

use crate::lsm::compaction::in_flight::InFlight;
use crate::lsm::compaction::level_targets::LevelTargets;
use crate::lsm::options::{DbOptions, NUM_LEVELS};
use crate::lsm::version::{TableFile, Version};

/// Range-delete fragments in a version from which every file they still apply to gets rewritten.
const TOMBSTONE_COMPACTION_FRAGMENTS: usize = 1024;
/// A file gets rewritten once the unapplied fragments over it number 1/TOMBSTONE_DENSITY of its
/// entries: a `MapState.clear()` deletes a map's entries, so with maps of 16 entries a quarter of
/// the file would be dead. A delete or two over a big file waits for size-driven compactions.
const TOMBSTONE_DENSITY: u64 = 64;

#[derive(Debug)]
pub struct CompactionJob {
    /// Input files per level; level 0 inputs newest first.
    pub inputs: Vec<(usize, Vec<Arc<TableFile>>)>,
    pub output_level: usize,
}

impl CompactionJob {
    fn new(inputs: Vec<(usize, Vec<Arc<TableFile>>)>, output_level: usize) -> Self {
        let inputs = inputs.into_iter().filter(|(_, files)| !files.is_empty()).collect();
        CompactionJob { inputs, output_level }
    }

    /// A single file with nothing to merge with below can move down without a rewrite.
    pub fn is_trivial_move(&self) -> bool {
        self.output_level > 1
            && self.inputs.len() == 1
            && self.inputs[0].1.len() == 1
            && self.inputs[0].0 + 1 == self.output_level
    }

    pub fn input_files(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.inputs.iter().flat_map(|(_, files)| files)
    }

    /// Smallest and largest user key over all inputs.
    pub fn key_range(&self) -> (Vec<u8>, Vec<u8>) {
        key_range(self.input_files())
    }
}

pub fn key_range<'a>(files: impl Iterator<Item = &'a Arc<TableFile>>) -> (Vec<u8>, Vec<u8>) {
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    for f in files {
        range = Some(match range {
            None => (f.smallest().to_vec(), f.largest().to_vec()),
            Some((lo, hi)) => (lo.min(f.smallest().to_vec()), hi.max(f.largest().to_vec())),
        });
    }
    range.unwrap_or_default()
}

/// Every L0 file and what it overlaps in the base level (L1 unless level sizes are dynamic).
fn level0_job(version: &Version, targets: &LevelTargets) -> CompactionJob {
    let base = targets.base_level();
    let l0 = version.levels[0].clone();
    let (lo, hi) = key_range(l0.iter());
    let below = version.overlapping(base, &lo, &hi);
    CompactionJob::new(vec![(0, l0), (base, below)], base)
}

/// Range deletes stay in the version until every file that may hold entries they delete has been
/// rewritten; size-driven compactions get there in time. Many of them (each costs memory and
/// manifest bytes), or many over one file (which then holds much dead data), make the file that
/// the most of them still apply to worth rewriting now. A sorted level's file is rewritten in
/// place: its outputs stay in its key range, and it needs no merge with the level below. Files
/// other compactions hold are passed over for the next one.
fn pick_for_tombstones(
    version: &Version,
    targets: &LevelTargets,
    in_flight: &InFlight,
) -> Option<CompactionJob> {
    let tombstones = &version.tombstones;
    if tombstones.is_empty() {
        return None;
    }
    let many = tombstones.len() >= TOMBSTONE_COMPACTION_FRAGMENTS;
    let mut candidates: Vec<_> = (0..NUM_LEVELS)
        .flat_map(|l| version.levels[l].iter().map(move |f| (l, f)))
        .map(|(l, f)| (l, f, f.unapplied_tombstones(tombstones)))
        .filter(|&(_, f, n)| n > 0 && (many || n as u64 * TOMBSTONE_DENSITY >= f.props().entries))
        .collect();
    // Most fragments first; of equals the last, as `max_by_key` would.
    candidates.reverse();
    candidates.sort_by_key(|c| std::cmp::Reverse(c.2));
    candidates
        .into_iter()
        .filter(|(_, file, _)| !in_flight.is_busy(file))
        .map(|(level, file, _)| match level {
            0 => level0_job(version, targets),
            _ => CompactionJob::new(vec![(level, vec![file.clone()])], level),
        })
        .find(|job| in_flight.admits(job))
}

/// How many bytes compaction is behind: the excess of each level over its target, and all of
/// level 0 once it has enough files to trigger a compaction.
pub fn pending_bytes(version: &Version, options: &DbOptions) -> u64 {
    let level0 = if version.levels[0].len() >= options.l0_compaction_trigger {
        version.level_bytes(0)
    } else {
        0
    };
    let targets = LevelTargets::new(version, options);
    let excess =
        (1..NUM_LEVELS - 1).map(|l| targets.excess(l, version.level_bytes(l))).sum::<u64>();
    level0 + excess
}

fn overlap_ratio(file: &TableFile, below: &[Arc<TableFile>]) -> f64 {
    let below: u64 = below.iter().map(|f| f.size).sum();
    below as f64 / file.size.max(1) as f64
}

/// How far each level is over its trigger: L0 by files against the compaction trigger, a sorted
/// level by bytes against its target. The last level has no target.
fn level_scores<'a>(
    version: &'a Version,
    options: &'a DbOptions,
    targets: &'a LevelTargets,
) -> impl Iterator<Item = (usize, f64)> + 'a {
    let level0 = version.levels[0].len() as f64 / options.l0_compaction_trigger.max(1) as f64;
    let sorted =
        (1..NUM_LEVELS - 1).map(|l| (l, targets.score(l, version.level_bytes(l), options)));
    std::iter::once((0, level0)).chain(sorted)
}

/// The level furthest over its trigger goes first, L0 included (RocksDB's compaction score). If
/// L0 always went first, a DB loaded faster than compaction runs would keep merging L0 into an
/// L1 grown far past its target, rewriting all of that L1 each time. A job `in_flight` does not
/// admit (it would read a file another compaction reads, or write where another writes) gives way
/// to the level's next-best file, then to the next level; with nothing in flight the first choice
/// always runs.
pub fn pick(version: &Version, options: &DbOptions, in_flight: &InFlight) -> Option<CompactionJob> {
    let targets = LevelTargets::new(version, options);
    let mut due: Vec<(usize, f64)> =
        level_scores(version, options, &targets).filter(|l| l.1 >= 1.0).collect();
    // Highest score first; of equals the deeper level, as `max_by` would.
    due.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    for (level, _) in due {
        let job = match level {
            0 => Some(level0_job(version, &targets)).filter(|job| in_flight.admits(job)),
            _ => pick_in_level(version, options, level, in_flight),
        };
        if job.is_some() {
            return job;
        }
    }
    pick_for_tombstones(version, &targets, in_flight)
}

/// A job moving a file of sorted `level` down: the file that rewrites the fewest bytes below per
/// byte it moves down (RocksDB's kMinOverlappingRatio: it keeps write amplification low), with
/// its free neighbours if that runs beside the compactions in flight, else alone, else the next
/// file.
fn pick_in_level(
    version: &Version,
    options: &DbOptions,
    level: usize,
    in_flight: &InFlight,
) -> Option<CompactionJob> {
    let mut candidates: Vec<_> = version.levels[level]
        .iter()
        .filter(|f| !in_flight.is_busy(f))
        .map(|f| (f, version.overlapping(level + 1, f.smallest(), f.largest())))
        .collect();
    candidates.sort_by(|(a, a_below), (b, b_below)| {
        overlap_ratio(a, a_below).total_cmp(&overlap_ratio(b, b_below))
    });
    for (file, below) in candidates {
        let inputs = with_free_neighbours(version, options, level, file, &below);
        let alone = inputs.len() == 1;
        let (lo, hi) = key_range(inputs.iter());
        let below_all = version.overlapping(level + 1, &lo, &hi);
        let job = CompactionJob::new(vec![(level, inputs), (level + 1, below_all)], level + 1);
        if in_flight.admits(&job) {
            return Some(job);
        }
        if !alone {
            let job = CompactionJob::new(
                vec![(level, vec![file.clone()]), (level + 1, below)],
                level + 1,
            );
            if in_flight.admits(&job) {
                return Some(job);
            }
        }
    }
    None
}

/// Most bytes one size-driven compaction takes in, in target file sizes (RocksDB's
/// `max_compaction_bytes`).
const MAX_COMPACTION_FILES: u64 = 25;

/// `file` and the files of its level that lie wholly within the key range of `file` and what it
/// overlaps below (RocksDB's input expansion). They overlap nothing more below, so they move down
/// for the price of their own bytes instead of rewriting the same files below again later.
fn with_free_neighbours(
    version: &Version,
    options: &DbOptions,
    level: usize,
    file: &Arc<TableFile>,
    below: &[Arc<TableFile>],
) -> Vec<Arc<TableFile>> {
    let (lo, hi) = key_range(below.iter().chain(std::iter::once(file)));
    let within: Vec<_> = version.levels[level]
        .iter()
        .filter(|f| f.smallest() >= lo.as_slice() && f.largest() <= hi.as_slice())
        .cloned()
        .collect();
    let bytes: u64 = within.iter().chain(below).map(|f| f.size).sum();
    if bytes <= MAX_COMPACTION_FILES * options.target_file_bytes {
        within
    } else {
        vec![file.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::compaction::in_flight::Compactions;
    use crate::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};

    /// A file of `size` bytes over [lo, hi] (no table behind it: the picker reads none).
    fn file(number: u64, lo: &str, hi: &str, size: u64) -> Arc<TableFile> {
        TableFile::without_table(number, lo, hi, size, None)
    }

    fn options() -> DbOptions {
        DbOptions {
            l0_compaction_trigger: 2,
            l1_target_bytes: 100,
            level_size_multiplier: 10,
            target_file_bytes: 100,
            ..DbOptions::default()
        }
    }

    fn numbers(job: &CompactionJob) -> Vec<u64> {
        job.input_files().map(|f| f.number).collect()
    }

    /// L1 three times over its target; below each L1 file a file of its own, with overlap ratios
    /// 0.1 (file 1), 0.5 (file 2) and 2 (file 3).
    fn three_disjoint_jobs() -> Version {
        let mut version = Version::default();
        version.levels[1] =
            vec![file(1, "a", "c", 100), file(2, "d", "f", 100), file(3, "g", "i", 100)];
        version.levels[2] =
            vec![file(11, "a", "b", 10), file(12, "d", "f", 50), file(13, "g", "i", 200)];
        version
    }

    #[test]
    fn a_busy_file_gives_way_to_the_next_disjoint_job_or_none() {
        let (version, options, compactions) =
            (three_disjoint_jobs(), options(), Compactions::default());
        let mut in_flight = compactions.lock();
        let mut claims = Vec::new();
        for expected in [[1, 11], [2, 12], [3, 13]] {
            let job = pick(&version, &options, &in_flight).expect("a disjoint job");
            assert_eq!(numbers(&job), expected);
            assert_eq!(job.output_level, 2);
            claims.push(compactions.claim_job(&mut in_flight, &job));
        }
        assert!(pick(&version, &options, &in_flight).is_none(), "every file is busy");
        assert_eq!((in_flight.running(), in_flight.max_running()), (3, 3));
        drop(in_flight);
        // Letting the second job go frees exactly its files.
        claims.remove(1);
        let in_flight = compactions.lock();
        let job = pick(&version, &options, &in_flight).unwrap();
        assert_eq!(numbers(&job), [2, 12]);
        assert_eq!(in_flight.running(), 2);
    }

    #[test]
    fn a_file_below_that_is_busy_blocks_every_job_that_would_read_it() {
        let mut version = three_disjoint_jobs();
        // File 2 now also lies over file 11: both jobs need it.
        version.levels[1][1] = file(2, "b", "f", 100);
        version.levels[2][1] = file(12, "e", "f", 50);
        let (options, compactions) = (options(), Compactions::default());
        let mut in_flight = compactions.lock();
        let first = pick(&version, &options, &in_flight).unwrap();
        assert_eq!(numbers(&first), [1, 11]);
        let _claim = compactions.claim_job(&mut in_flight, &first);
        let second = pick(&version, &options, &in_flight).unwrap();
        assert_eq!(numbers(&second), [3, 13], "file 2 would read the busy file 11");
        drop(in_flight); // before the claim, which takes the lock to let go
    }

    #[test]
    fn a_job_writing_into_a_range_in_flight_at_its_output_level_waits() {
        let (version, compactions) = (three_disjoint_jobs(), Compactions::default());
        let mut in_flight = compactions.lock();
        // A move of a file into L2 over [a, e] (files of its own, none of the version's).
        let moving = CompactionJob::new(vec![(1, vec![file(90, "a", "e", 10)])], 2);
        let _claim = compactions.claim_job(&mut in_flight, &moving);
        let into_l2 = CompactionJob::new(vec![(1, vec![file(91, "e", "e", 10)])], 2);
        let into_l3 = CompactionJob::new(vec![(2, vec![file(92, "e", "e", 10)])], 3);
        let beside = CompactionJob::new(vec![(1, vec![file(93, "f", "f", 10)])], 2);
        assert!(!in_flight.admits(&into_l2));
        assert!(in_flight.admits(&into_l3));
        assert!(in_flight.admits(&beside));
        // Of the version's jobs, those of files 1 and 2 write into [a, e] at L2.
        let job = pick(&version, &options(), &in_flight).unwrap();
        assert_eq!(numbers(&job), [3, 13]);
        drop(in_flight);
    }

    #[test]
    fn level0_compacts_one_job_at_a_time() {
        let mut version = Version::default();
        version.levels[0] = vec![file(3, "a", "z", 10), file(2, "a", "m", 10)];
        version.levels[1] = vec![file(1, "b", "c", 10)];
        let (options, compactions) = (options(), Compactions::default());
        let mut in_flight = compactions.lock();
        let first = pick(&version, &options, &in_flight).unwrap();
        assert_eq!((numbers(&first), first.output_level), (vec![3, 2, 1], 1));
        let claim = compactions.claim_job(&mut in_flight, &first);
        // Flushes add files while it runs: L0 is over its trigger again, with files no job holds.
        version.levels[0].insert(0, file(5, "n", "p", 10));
        version.levels[0].insert(0, file(4, "x", "y", 10));
        assert!(pick(&version, &options, &in_flight).is_none());
        let fresh = Version {
            levels: [
                vec![file(4, "x", "y", 10), file(5, "n", "p", 10)],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
            ],
            ..Version::default()
        };
        assert!(pick(&fresh, &options, &in_flight).is_none(), "a second L0 job");
        drop(in_flight);
        drop(claim);
        let in_flight = compactions.lock();
        let next = pick(&fresh, &options, &in_flight).unwrap();
        assert_eq!(numbers(&next), [4, 5]);
    }

    #[test]
    fn tombstone_picks_skip_busy_files_and_a_second_level0_job() {
        let mut version = Version::default();
        version.levels[0] = vec![file(1, "a", "b", 10)];
        version.levels[2] = vec![file(2, "c", "d", 10), file(3, "e", "f", 10)];
        let tombstone = |start: &str, end: &str| RangeTombstone {
            start: start.to_string().into(),
            end: end.to_string().into(),
            seq: 5,
        };
        version.tombstones = Arc::new(FragmentedTombstones::new([
            tombstone("a", "aa"),
            tombstone("c", "cc"),
            tombstone("e", "ee"),
        ]));
        let (options, compactions) = (options(), Compactions::default());
        let mut in_flight = compactions.lock();
        let mut claims = Vec::new();
        let mut picked = Vec::new();
        while let Some(job) = pick(&version, &options, &in_flight) {
            picked.push((numbers(&job), job.output_level));
            claims.push(compactions.claim_job(&mut in_flight, &job));
        }
        picked.sort();
        assert_eq!(picked, [(vec![1], 1), (vec![2], 2), (vec![3], 2)]);
        // A new L0 file with a tombstone over it: L0 is busy.
        version.levels[0].insert(0, file(4, "a", "b", 10));
        assert!(pick(&version, &options, &in_flight).is_none());
        drop(in_flight);
    }
}
