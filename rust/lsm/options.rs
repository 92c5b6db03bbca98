//! Engine options. Defaults suit a Flink task manager slot; tests shrink them to force flushes
//! and compactions.

use std::time::Duration;

use crate::lsm::sst::TableOptions;

#[derive(Debug, Clone)]
pub struct DbOptions {
    /// A memtable is frozen and flushed once it holds this many bytes.
    pub memtable_bytes: u64,
    /// Writers stall while this many frozen memtables wait for flush: memory stays bounded by
    /// about `(max_frozen_memtables + 1) * memtable_bytes`.
    pub max_frozen_memtables: usize,
    /// Capacity of the in-memory block cache.
    pub block_cache_bytes: u64,
    /// Target size of SST files written by flush and compaction.
    pub target_file_bytes: u64,
    /// Number of L0 files that triggers an L0 -> L1 compaction.
    pub l0_compaction_trigger: usize,
    /// Flushes wait while L0 holds this many files (so writers stall behind them) until compaction
    /// catches up: reads stay bounded by the number of L0 files.
    pub l0_stop_trigger: usize,
    /// Target size of L1; each deeper level is `level_size_multiplier` times larger.
    pub l1_target_bytes: u64,
    pub level_size_multiplier: u64,
    /// Bytes per storage request when compaction scans input files.
    pub compaction_readahead_bytes: usize,
    /// Run background compactions (tests turn this off to control when they happen).
    pub auto_compaction: bool,
    /// A background flush or compaction failing with a transient error is retried this many
    /// times, after `retry_backoff`, doubled for each next retry up to `max_retry_backoff`. A
    /// permanent error, or one that outlasts the retries, fails the database.
    pub background_retries: u32,
    pub retry_backoff: Duration,
    pub max_retry_backoff: Duration,
    pub table: TableOptions,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            memtable_bytes: 64 << 20,
            max_frozen_memtables: 2,
            block_cache_bytes: 256 << 20,
            target_file_bytes: 32 << 20,
            l0_compaction_trigger: 4,
            l0_stop_trigger: 24,
            l1_target_bytes: 128 << 20,
            level_size_multiplier: 10,
            compaction_readahead_bytes: 2 << 20,
            auto_compaction: true,
            // About 20 s of retries: a storage hiccup passes, an outage fails the task.
            background_retries: 8,
            retry_backoff: Duration::from_millis(100),
            max_retry_backoff: Duration::from_secs(10),
            table: TableOptions::default(),
        }
    }
}

/// Number of levels (L0 plus six sorted levels).
pub const NUM_LEVELS: usize = 7;
