//! What the engine counts, and the one table that exports it: `Db::stats` takes a `DbStats`
//! snapshot, `EXPORTED_STATS` names each exported value once (the JNI layer hands Java the names
//! and the values in this order, so Java never spells a name of its own).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::lsm::options::NUM_LEVELS;
use crate::storage::{DiskCacheStats, IoStats};

/// Cumulative counters of one open database, bumped by the write path, flush and compaction.
#[derive(Default)]
pub(crate) struct EngineCounters {
    flushes: AtomicU64,
    flush_bytes_written: AtomicU64,
    compactions: AtomicU64,
    compaction_bytes_read: AtomicU64,
    compaction_bytes_written: AtomicU64,
    /// By output level: where a write amplification comes from.
    compaction_bytes_written_per_level: [AtomicU64; NUM_LEVELS],
    user_bytes_written: AtomicU64,
    stall_micros: AtomicU64,
    batches: AtomicU64,
    batch_requests: AtomicU64,
    batch_micros: AtomicU64,
}

impl EngineCounters {
    pub(crate) fn flushed(&self, bytes_written: u64) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.flush_bytes_written.fetch_add(bytes_written, Ordering::Relaxed);
    }

    pub(crate) fn compacted(&self, output_level: usize, bytes_read: u64, bytes_written: u64) {
        self.compactions.fetch_add(1, Ordering::Relaxed);
        self.compaction_bytes_read.fetch_add(bytes_read, Ordering::Relaxed);
        self.compaction_bytes_written.fetch_add(bytes_written, Ordering::Relaxed);
        self.compaction_bytes_written_per_level[output_level]
            .fetch_add(bytes_written, Ordering::Relaxed);
    }

    pub(crate) fn written(&self, bytes: u64) {
        self.user_bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn stalled(&self, waited: Duration) {
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.stall_micros.fetch_add(micros, Ordering::Relaxed);
    }

    pub(crate) fn batch(&self, requests: usize, took: Duration) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.batch_requests.fetch_add(requests as u64, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.batch_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// Copies the counters into `stats`.
    pub(crate) fn fill(&self, stats: &mut DbStats) {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        stats.flushes = load(&self.flushes);
        stats.flush_bytes_written = load(&self.flush_bytes_written);
        stats.compactions = load(&self.compactions);
        stats.compaction_bytes_read = load(&self.compaction_bytes_read);
        stats.compaction_bytes_written = load(&self.compaction_bytes_written);
        stats.compaction_bytes_written_per_level =
            self.compaction_bytes_written_per_level.iter().map(load).collect();
        stats.user_bytes_written = load(&self.user_bytes_written);
        stats.stall_micros = load(&self.stall_micros);
        stats.batches = load(&self.batches);
        stats.batch_requests = load(&self.batch_requests);
        stats.batch_micros = load(&self.batch_micros);
    }
}

/// A snapshot of a database's statistics (`Db::stats`). Counters count since open.
#[derive(Debug, Clone, Default)]
pub struct DbStats {
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_bytes: u64,
    /// The cache's whole capacity: blocks of every kind plus the readers charged to it.
    pub block_cache_capacity: u64,
    /// Data blocks in the cache.
    pub block_cache_data_bytes: u64,
    /// Index and filter partitions in the cache (also those in the memtables' idle room).
    pub block_cache_index_filter_bytes: u64,
    /// Room the memtables leave idle for index and filter partitions now (0 when memtables are
    /// charged to the cache).
    pub index_filter_room_bytes: u64,
    /// Bytes of index and filter partitions loaded into the cache since open.
    pub index_filter_bytes_loaded: u64,
    /// Open table readers (footer, top-level index, properties), charged to the cache.
    pub table_reader_bytes: u64,
    /// I/O buffers charged to the cache: compaction's readahead (together at most 1/4 of it) and
    /// the output flush and compaction build before it goes to storage.
    pub io_buffer_bytes: u64,
    /// Heap of the version's range tombstones (fragments and their search structures).
    pub range_tombstone_bytes: u64,
    /// Blocks, index partitions and readahead buffers live iterators hold (the blocks usually
    /// also in the cache).
    pub iterator_pinned_bytes: u64,
    /// Active plus frozen memtables.
    pub memtable_bytes: u64,
    pub active_memtable_bytes: u64,
    pub active_memtable_entries: u64,
    pub frozen_memtable_entries: u64,
    pub frozen_memtables: usize,
    /// Writers waiting right now for a flush to make room in memory.
    pub stalled_writers: usize,
    /// Time writers spent waiting for room in memory.
    pub stall_micros: u64,
    pub files_per_level: Vec<usize>,
    pub bytes_per_level: Vec<u64>,
    /// Entries in the live SST files (versions of keys, not distinct keys).
    pub sst_entries: u64,
    /// Entries compaction removed because their TTL expired (a whole list: every element).
    pub ttl_removed_entries: u64,
    /// Lists compaction cut the expired head off.
    pub ttl_trimmed_lists: u64,
    /// Fragments of flushed range deletes in the version (spent ones stay until their tombstone
    /// file goes, see `lsm::tombstone_files`).
    pub range_tombstones: usize,
    /// Files holding them on storage (`lsm::tombstone_files`).
    pub range_tombstone_files: usize,
    pub flushes: u64,
    pub flush_bytes_written: u64,
    /// Compactions that rewrote files (moves of a file to the next level are not counted).
    pub compactions: u64,
    pub compaction_bytes_read: u64,
    pub compaction_bytes_written: u64,
    /// `compaction_bytes_written` by the level compaction wrote to.
    pub compaction_bytes_written_per_level: Vec<u64>,
    /// Key and value bytes of the writes applied.
    pub user_bytes_written: u64,
    /// Compactions running now (a file drop or move counts while it is installed).
    pub running_compactions: usize,
    /// Most compactions that ran at once since open.
    pub max_running_compactions: usize,
    /// Whether the compaction picker would pick a job now.
    pub compaction_pending: bool,
    /// Bytes by which levels exceed their targets (all of level 0 once it triggers compaction).
    pub pending_compaction_bytes: u64,
    /// Whether background work failed the database (every call fails from then on).
    pub failed: bool,
    /// Batches the executor ran, their requests, and the time they took (`batch-micros /
    /// batches` is the mean latency, `batch-requests / batches` the mean size).
    pub batches: u64,
    pub batch_requests: u64,
    pub batch_micros: u64,
    /// What the database asked of its storage.
    pub io: IoStats,
    /// The local disk cache under its storage (zero without one). The cache is shared by every
    /// database of the process using its directory, and so are these counters.
    pub disk_cache: DiskCacheStats,
}

impl DbStats {
    pub fn live_sst_files(&self) -> u64 {
        self.files_per_level.iter().sum::<usize>() as u64
    }

    pub fn live_sst_bytes(&self) -> u64 {
        self.bytes_per_level.iter().sum()
    }

    /// Memory the engine accounts for: memtables, cached blocks of every kind, open readers, I/O
    /// buffers, the version's range tombstones.
    pub fn memory_usage_bytes(&self) -> u64 {
        self.memtable_bytes
            + self.block_cache_bytes
            + self.table_reader_bytes
            + self.io_buffer_bytes
            + self.range_tombstone_bytes
    }

    /// The exported values, in the order of `EXPORTED_STATS`.
    pub fn exported_values(&self) -> impl Iterator<Item = u64> + '_ {
        EXPORTED_STATS.iter().map(move |(_, value)| value(self))
    }
}

type Exported = (&'static str, fn(&DbStats) -> u64);

/// Every exported statistic: its name and how to read it from a snapshot, in export order.
pub static EXPORTED_STATS: &[Exported] = &[
    ("block-cache-hits", |s| s.block_cache_hits),
    ("block-cache-misses", |s| s.block_cache_misses),
    ("block-cache-usage-bytes", |s| s.block_cache_bytes),
    ("block-cache-capacity-bytes", |s| s.block_cache_capacity),
    ("block-cache-data-bytes", |s| s.block_cache_data_bytes),
    ("block-cache-index-filter-bytes", |s| s.block_cache_index_filter_bytes),
    ("index-filter-bytes-loaded", |s| s.index_filter_bytes_loaded),
    ("index-filter-room-bytes", |s| s.index_filter_room_bytes),
    ("table-reader-bytes", |s| s.table_reader_bytes),
    ("io-buffer-bytes", |s| s.io_buffer_bytes),
    ("range-tombstone-bytes", |s| s.range_tombstone_bytes),
    ("iterator-pinned-bytes", |s| s.iterator_pinned_bytes),
    ("memory-usage-bytes", DbStats::memory_usage_bytes),
    ("memtable-bytes", |s| s.memtable_bytes),
    ("active-memtable-bytes", |s| s.active_memtable_bytes),
    ("active-memtable-entries", |s| s.active_memtable_entries),
    ("frozen-memtable-entries", |s| s.frozen_memtable_entries),
    ("frozen-memtables", |s| s.frozen_memtables as u64),
    ("flush-pending", |s| u64::from(s.frozen_memtables > 0)),
    ("stalled-writers", |s| s.stalled_writers as u64),
    ("write-stopped", |s| u64::from(s.stalled_writers > 0)),
    ("stall-micros", |s| s.stall_micros),
    ("live-sst-files", DbStats::live_sst_files),
    ("live-sst-bytes", DbStats::live_sst_bytes),
    ("estimated-keys", |s| s.sst_entries + s.active_memtable_entries + s.frozen_memtable_entries),
    ("range-tombstones", |s| s.range_tombstones as u64),
    ("ttl-removed-entries", |s| s.ttl_removed_entries),
    ("ttl-trimmed-lists", |s| s.ttl_trimmed_lists),
    ("flushes", |s| s.flushes),
    ("flush-bytes-written", |s| s.flush_bytes_written),
    ("compactions", |s| s.compactions),
    ("compaction-bytes-read", |s| s.compaction_bytes_read),
    ("compaction-bytes-written", |s| s.compaction_bytes_written),
    ("compaction-pending", |s| u64::from(s.compaction_pending)),
    ("running-compactions", |s| s.running_compactions as u64),
    ("max-running-compactions", |s| s.max_running_compactions as u64),
    ("pending-compaction-bytes", |s| s.pending_compaction_bytes),
    ("user-bytes-written", |s| s.user_bytes_written),
    ("background-errors", |s| u64::from(s.failed)),
    ("batches", |s| s.batches),
    ("batch-requests", |s| s.batch_requests),
    ("batch-micros", |s| s.batch_micros),
    ("storage-reads", |s| s.io.reads),
    ("storage-bytes-read", |s| s.io.bytes_read),
    ("storage-read-micros", |s| s.io.read_micros),
    ("storage-writes", |s| s.io.writes),
    ("storage-bytes-written", |s| s.io.bytes_written),
    ("storage-write-micros", |s| s.io.write_micros),
    ("storage-other-requests", |s| s.io.other_requests),
    ("storage-other-micros", |s| s.io.other_micros),
    ("disk-cache-hits", |s| s.disk_cache.hits),
    ("disk-cache-misses", |s| s.disk_cache.misses),
    ("disk-cache-inserts", |s| s.disk_cache.inserts),
    ("disk-cache-downloads", |s| s.disk_cache.downloads),
    ("disk-cache-evictions", |s| s.disk_cache.evictions),
    ("disk-cache-corrupt", |s| s.disk_cache.corrupt),
    ("disk-cache-entries", |s| s.disk_cache.entries),
    ("disk-cache-used-bytes", |s| s.disk_cache.used_bytes),
    ("files-at-level0", |s| level_files(s, 0)),
    ("files-at-level1", |s| level_files(s, 1)),
    ("files-at-level2", |s| level_files(s, 2)),
    ("files-at-level3", |s| level_files(s, 3)),
    ("files-at-level4", |s| level_files(s, 4)),
    ("files-at-level5", |s| level_files(s, 5)),
    ("files-at-level6", |s| level_files(s, 6)),
    ("bytes-at-level0", |s| level_bytes(s, 0)),
    ("bytes-at-level1", |s| level_bytes(s, 1)),
    ("bytes-at-level2", |s| level_bytes(s, 2)),
    ("bytes-at-level3", |s| level_bytes(s, 3)),
    ("bytes-at-level4", |s| level_bytes(s, 4)),
    ("bytes-at-level5", |s| level_bytes(s, 5)),
    ("bytes-at-level6", |s| level_bytes(s, 6)),
];

fn level_files(s: &DbStats, level: usize) -> u64 {
    s.files_per_level.get(level).map_or(0, |&n| n as u64)
}

fn level_bytes(s: &DbStats, level: usize) -> u64 {
    s.bytes_per_level.get(level).copied().unwrap_or(0)
}
