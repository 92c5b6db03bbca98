//! Level targets and where compactions go, static and dynamic, over versions of files that are
//! never opened (only their key ranges and sizes matter to the picker).

use std::sync::Arc;

use bytes::Bytes;

use crate::lsm::cache::BlockCache;
use crate::lsm::compaction::in_flight::InFlight;
use crate::lsm::compaction::level_targets::LevelTargets;
use crate::lsm::compaction::picker::{pending_bytes, pick};
use crate::lsm::options::{DbOptions, NUM_LEVELS};
use crate::lsm::sst::TableProperties;
use crate::lsm::version::manifest::FileRecord;
use crate::lsm::version::{ObsoleteFiles, TableFile, Version};
use crate::storage::{StorageOptions, open_storage};

const LAST: usize = NUM_LEVELS - 1;

fn options(dynamic: bool) -> DbOptions {
    DbOptions {
        l0_compaction_trigger: 2,
        l1_target_bytes: 1000,
        level_size_multiplier: 10,
        target_file_bytes: 100,
        dynamic_level_sizes: dynamic,
        ..DbOptions::default()
    }
}

/// A file over keys [lo, hi] of `size` bytes; its number orders it (L0 lists newest first).
fn file(number: u64, lo: &str, hi: &str, size: u64) -> Arc<TableFile> {
    let storage = open_storage("memory://level-targets-tests", &StorageOptions::default()).unwrap();
    let record = FileRecord {
        level: 0,
        number,
        path: format!("{number}.sst"),
        size,
        props: TableProperties {
            smallest_key: Bytes::copy_from_slice(lo.as_bytes()),
            largest_key: Bytes::copy_from_slice(hi.as_bytes()),
            min_seq: number,
            max_seq: number,
            entries: 1,
            size,
        },
        tombstones_applied_through: 0,
        bounds: None,
        owned: true,
        location: None,
    };
    let cache = Arc::new(BlockCache::new(1 << 20));
    Arc::new(TableFile::from_record(&record, storage, cache, Arc::new(ObsoleteFiles::default())))
}

/// A version with `level0` files (each over all keys) and one file of `bytes` per listed level.
fn version(level0: usize, levels: &[(usize, u64)]) -> Version {
    let mut v = Version::default();
    v.levels[0] = (0..level0 as u64).rev().map(|n| file(1000 + n, "a", "z", 10)).collect();
    for (i, &(level, bytes)) in levels.iter().enumerate() {
        v.levels[level].push(file(i as u64 + 1, "a", "z", bytes));
    }
    v
}

fn output_and_input_levels(v: &Version, options: &DbOptions) -> (usize, Vec<usize>) {
    let job = pick(v, options, &InFlight::default()).expect("a compaction is due");
    (job.output_level, job.inputs.iter().map(|(l, _)| *l).collect())
}

#[test]
fn static_targets_grow_from_l1_and_level0_goes_to_l1() {
    let v = version(2, &[(LAST, 1_000_000)]);
    let targets = LevelTargets::new(&v, &options(false));
    assert_eq!(targets.base_level(), 1);
    let expected =
        [None, Some(1000), Some(10_000), Some(100_000), Some(1_000_000), Some(10_000_000)];
    for (level, want) in expected.iter().enumerate() {
        assert_eq!(targets.target(level), *want, "L{level}");
    }
    assert_eq!(targets.target(LAST), None);
    assert_eq!(output_and_input_levels(&v, &options(false)), (1, vec![0]));
}

#[test]
fn an_empty_or_small_db_compacts_level0_into_the_last_level() {
    let empty = version(2, &[]);
    let targets = LevelTargets::new(&empty, &options(true));
    assert_eq!(targets.base_level(), LAST);
    assert_eq!(output_and_input_levels(&empty, &options(true)), (LAST, vec![0]));

    // The last level within L1's target: still the base level; L0 merges with what it overlaps.
    let small = version(2, &[(LAST, 900)]);
    assert_eq!(LevelTargets::new(&small, &options(true)).base_level(), LAST);
    assert_eq!(output_and_input_levels(&small, &options(true)), (LAST, vec![0, LAST]));
    assert_eq!(pending_bytes(&small, &options(true)), 20, "only L0 is behind");
}

#[test]
fn targets_derive_from_the_last_levels_size_and_the_base_level_is_the_deepest_within_l1s() {
    // 150k at the last level: L5 15k, L4 1.5k (over L1's 1000: not the base), L3 150 -> L3 is the
    // base, with L1's target; L1 and L2 stay empty.
    let v = version(2, &[(LAST, 150_000)]);
    let targets = LevelTargets::new(&v, &options(true));
    assert_eq!(targets.base_level(), 3);
    assert_eq!(targets.target(5), Some(15_000));
    assert_eq!(targets.target(4), Some(1_500));
    assert_eq!(targets.target(3), Some(1_000), "the base level's target is L1's");
    assert_eq!(targets.target(2), Some(0), "above the base: empty");
    assert_eq!(targets.target(1), Some(0));
    assert_eq!(output_and_input_levels(&v, &options(true)), (3, vec![0]));

    // Exactly at the limit, a level is the base: 100k makes L4 (1000) the base.
    let at_limit = version(0, &[(LAST, 100_000)]);
    assert_eq!(LevelTargets::new(&at_limit, &options(true)).base_level(), 4);

    // The targets follow the last level as it grows: 20k over L5's 15k is due, into L6.
    let v = version(0, &[(5, 20_000), (LAST, 150_000)]);
    let targets = LevelTargets::new(&v, &options(true));
    assert_eq!(targets.target(5), Some(15_000));
    assert_eq!(output_and_input_levels(&v, &options(true)), (LAST, vec![5, LAST]));
    assert_eq!(pending_bytes(&v, &options(true)), 5_000);
    let grown = version(0, &[(5, 20_000), (LAST, 250_000)]);
    assert!(
        pick(&grown, &options(true), &InFlight::default()).is_none(),
        "L5's target grew to 25k"
    );
}

#[test]
fn past_the_static_shape_the_targets_are_the_static_ones() {
    // The last level larger than L1's target times multiplier^5: L1 is the base, and its target
    // stays L1's.
    let v = version(0, &[(LAST, 500_000_000)]);
    let targets = LevelTargets::new(&v, &options(true));
    assert_eq!(targets.base_level(), 1);
    for level in 1..LAST {
        assert_eq!(targets.target(level), LevelTargets::new(&v, &options(false)).target(level));
    }
}

#[test]
fn data_above_the_base_level_moves_down_and_level0_never_skips_it() {
    // L2 holds data from before (static targets, or more data before deletes shrank it): L0 may
    // not compact below it (L0 is newer), and L2 is due although small.
    let v = version(3, &[(2, 50), (LAST, 150_000)]);
    let targets = LevelTargets::new(&v, &options(true));
    assert_eq!(targets.base_level(), 2);
    assert_eq!(output_and_input_levels(&v, &options(true)), (2, vec![0, 2]));
    let below_trigger = version(1, &[(2, 50), (LAST, 150_000)]);
    assert_eq!(output_and_input_levels(&below_trigger, &options(true)), (3, vec![2]));
    assert_eq!(pending_bytes(&below_trigger, &options(true)), 50);
    // Once it is empty, L0 goes to the base level again.
    let drained = version(2, &[(3, 50), (LAST, 150_000)]);
    assert_eq!(output_and_input_levels(&drained, &options(true)), (3, vec![0, 3]));
}

#[test]
fn a_level_larger_than_the_last_sets_the_targets() {
    // Turned on over a DB loaded with static targets: L2 holds all data, the last level none.
    let v = version(0, &[(2, 150_000)]);
    let targets = LevelTargets::new(&v, &options(true));
    assert_eq!(targets.target(5), Some(15_000));
    assert_eq!(targets.target(3), Some(1_000));
    assert_eq!(targets.base_level(), 2, "L2 holds data: nothing from L0 may skip it");
    assert_eq!(output_and_input_levels(&v, &options(true)), (3, vec![2]), "L2 drains");
}
