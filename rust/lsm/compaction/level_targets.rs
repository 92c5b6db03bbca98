//! How many bytes each sorted level should hold, and which level L0 compacts into.
//!
//! Static targets (the default): L1's is `l1_target_bytes`, each deeper level's
//! `level_size_multiplier` times larger, and L0 compacts into L1. Until the data fills every
//! level, the deepest one holding data is far below its target and the levels above it hold a
//! large share of the data: at 2.5 GB with the defaults, L1 and L2 (256 MB + 2.3 GB) hold it all.
//!
//! Dynamic targets (`dynamic_level_sizes`, RocksDB's `level_compaction_dynamic_level_bytes`)
//! derive from the data instead: the last level's target is the size of the largest sorted level
//! (the last one once data reached it; a level above may be larger for a while, e.g. just after
//! the option was turned on), each level above is 1/multiplier of the one below, and the base
//! level, where L0 compacts into, is the deepest level whose target is at most `l1_target_bytes`:
//! the levels above it stay empty, and an empty or small DB compacts L0 into the last level. So every level holds about 1/multiplier of the next, and the data beside the last level
//! adds about 1/(multiplier - 1) to it at any size (~1.11x with 10): less space on the DFS and
//! in checkpoints, and (RocksDB's experience) less rewriting.

use crate::lsm::options::{DbOptions, NUM_LEVELS};
use crate::lsm::version::Version;

const LAST: usize = NUM_LEVELS - 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelTargets {
    base_level: usize,
    /// Per sorted level above the last: its target in bytes, or `Drain` for a level above the
    /// dynamic base level, which should be empty.
    targets: [Target; NUM_LEVELS],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// L0 (scored by files) and the last level (which has no size limit).
    None,
    Bytes(u64),
    /// Whatever the level holds moves down. Data lands there only from before: a DB opened with
    /// static targets before, a restored checkpoint of one, or a DB whose data shrank (deletes)
    /// so that its base level moved down.
    Drain,
}

impl LevelTargets {
    pub fn new(version: &Version, options: &DbOptions) -> Self {
        if options.dynamic_level_sizes {
            Self::dynamic(version, options)
        } else {
            Self::fixed(options)
        }
    }

    fn fixed(options: &DbOptions) -> Self {
        let mut targets = [Target::None; NUM_LEVELS];
        for (level, target) in targets.iter_mut().enumerate().take(LAST).skip(1) {
            *target = Target::Bytes(static_target(options, level));
        }
        LevelTargets { base_level: 1, targets }
    }

    fn dynamic(version: &Version, options: &DbOptions) -> Self {
        let multiplier = options.level_size_multiplier.max(2);
        let largest = (1..NUM_LEVELS).map(|l| version.level_bytes(l)).max().unwrap_or(0);
        // The deepest level whose target is within `l1_target_bytes`, walking up from the last.
        let (mut ideal_base, mut size) = (LAST, largest);
        while ideal_base > 1 && size > options.l1_target_bytes {
            ideal_base -= 1;
            size /= multiplier;
        }
        let mut targets = [Target::None; NUM_LEVELS];
        for (level, target) in targets.iter_mut().enumerate().take(LAST).skip(1) {
            *target = if level < ideal_base {
                Target::Drain
            } else {
                let dynamic = largest / multiplier.saturating_pow((LAST - level) as u32);
                // Past `l1_target_bytes * multiplier^(LAST - 1)` L1 is the base and its target
                // cannot grow: the targets are the static ones. Below `l1_target_bytes`, a level
                // would be due for compaction while still smaller than the base level's limit.
                let bytes = dynamic.min(static_target(options, level));
                Target::Bytes(bytes.max(options.l1_target_bytes))
            };
        }
        // L0's data is newer than all below: it may not skip a level that holds data.
        let first_holding_data = (1..NUM_LEVELS).find(|&l| !version.levels[l].is_empty());
        let base_level = ideal_base.min(first_holding_data.unwrap_or(LAST));
        LevelTargets { base_level, targets }
    }

    /// The level L0 compacts into.
    pub fn base_level(&self) -> usize {
        self.base_level
    }

    /// The target of sorted level `level`; None for L0 and the last level, 0 for a level that
    /// should be empty.
    pub fn target(&self, level: usize) -> Option<u64> {
        match self.targets[level] {
            Target::None => None,
            Target::Bytes(bytes) => Some(bytes),
            Target::Drain => Some(0),
        }
    }

    /// How far a sorted level holding `bytes` is over its target (1.0: due). A level that should
    /// be empty is due once it holds anything, and ranks by its size against the base level's
    /// limit, like the level L0 compacts into in the static shape.
    pub fn score(&self, level: usize, bytes: u64, options: &DbOptions) -> f64 {
        match self.targets[level] {
            Target::None => 0.0,
            Target::Bytes(target) => bytes as f64 / target as f64,
            Target::Drain if bytes == 0 => 0.0,
            Target::Drain => (bytes as f64 / options.l1_target_bytes.max(1) as f64).max(1.0),
        }
    }

    /// Bytes of a sorted level holding `bytes` that compaction has to move down.
    pub fn excess(&self, level: usize, bytes: u64) -> u64 {
        self.target(level).map_or(0, |target| bytes.saturating_sub(target))
    }
}

fn static_target(options: &DbOptions, level: usize) -> u64 {
    let mut target = options.l1_target_bytes;
    for _ in 1..level {
        target = target.saturating_mul(options.level_size_multiplier);
    }
    target
}
