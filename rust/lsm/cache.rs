//! The block cache of one database: every block the engine reads from its SST files — data
//! blocks, index partitions and filter partitions — keyed by (table cache id, block offset) and
//! weighted by its size in bytes, so their memory is bounded by the cache's capacity however many
//! tables are open. Open table readers (footer, top-level index, properties) are charged by
//! shrinking the capacity left for blocks, as RocksDB's cache reservations do.
//!
//! Memtables can be charged the same way (`DbOptions::memtables_charged_to_cache`, as RocksDB's
//! write buffer manager costed to the cache): the cache's capacity is then the whole memory
//! budget, blocks give way while memtables fill and take the room back once they are flushed.
//!
//! The cache also measures what it holds per kind (data, index/filter), what readers reserve, and
//! what iterators pin, for `Db::stats`.

use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use quick_cache::sync::Cache;
use quick_cache::{Lifecycle, Weighter};

use crate::Result;
use crate::lsm::sst::{Block, Bloom, Index};

/// Average block size assumed when sizing the cache's item table.
const TYPICAL_BLOCK: u64 = 4096;
/// Reader reservations move the block capacity in steps of 1/64 of the cache (4 KiB to 1 MiB),
/// so opening and closing tables rarely resizes the cache.
const RESERVATION_STEPS: u64 = 64;
/// Reservations never take the block capacity below this share of the cache (1/4): with more
/// open readers than that, blocks still get some room and the overshoot shows in the stats.
const MIN_BLOCK_SHARE_DIVISOR: u64 = 4;
/// Charged memtables (capped by their own limit) take their room from what reservations leave,
/// down to this share (1/16), so that reads still find some room for blocks.
const MIN_BLOCK_SHARE_UNDER_MEMTABLES_DIVISOR: u64 = 16;

/// One cached block, decoded.
#[derive(Clone)]
pub(crate) enum CachedBlock {
    Data(Arc<Block>),
    Index(Arc<Index>),
    Filter(Arc<Bloom>),
}

impl CachedBlock {
    fn weight(&self) -> u64 {
        let bytes = match self {
            CachedBlock::Data(b) => b.memory_size(),
            CachedBlock::Index(i) => i.memory_size(),
            CachedBlock::Filter(f) => f.memory_size(),
        };
        bytes as u64
    }

    fn is_data(&self) -> bool {
        matches!(self, CachedBlock::Data(_))
    }
}

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<(u64, u64), CachedBlock> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), block: &CachedBlock) -> u64 {
        block.weight()
    }
}

/// Bytes held per kind. Signed: an eviction by another thread may be counted before the insert
/// that admitted the block; readers clamp at zero.
#[derive(Default)]
struct KindBytes {
    data: AtomicI64,
    index_filter: AtomicI64,
    /// Bytes ever admitted, per kind.
    data_inserted: AtomicU64,
    index_filter_inserted: AtomicU64,
}

impl KindBytes {
    fn add(&self, block: &CachedBlock, sign: i64) {
        let counter = if block.is_data() { &self.data } else { &self.index_filter };
        counter.fetch_add(sign * block.weight() as i64, Ordering::Relaxed);
    }

    fn inserted(&self, block: &CachedBlock) {
        let counter =
            if block.is_data() { &self.data_inserted } else { &self.index_filter_inserted };
        counter.fetch_add(block.weight(), Ordering::Relaxed);
        self.add(block, 1);
    }

    fn read(counter: &AtomicI64) -> u64 {
        counter.load(Ordering::Relaxed).max(0) as u64
    }
}

/// Counts evictions: the cache reports each evicted block here, inside the request that evicted
/// it (an insert, a capacity change).
#[derive(Clone)]
struct EvictionCounter(Arc<KindBytes>);

impl Lifecycle<(u64, u64), CachedBlock> for EvictionCounter {
    type RequestState = ();

    fn begin_request(&self) -> Self::RequestState {}

    fn on_evict(&self, _state: &mut (), _key: (u64, u64), block: CachedBlock) {
        self.0.add(&block, -1);
    }
}

pub struct BlockCache {
    cache: Cache<
        (u64, u64),
        CachedBlock,
        BlockWeighter,
        quick_cache::DefaultHashBuilder,
        EvictionCounter,
    >,
    /// The configured capacity: blocks plus reader reservations.
    capacity: u64,
    kinds: Arc<KindBytes>,
    /// Bytes open table readers reserve.
    reserved: AtomicU64,
    /// Bytes of I/O buffers (compaction's readahead, flush and compaction output), charged like
    /// reservations.
    buffers: AtomicU64,
    resize_lock: Mutex<()>,
    /// Bytes of memtables charged to the cache.
    memtables: AtomicU64,
    /// Bytes of blocks and buffers live iterators hold.
    pinned: AtomicI64,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Ids are never reused within a process, so a reopened or replaced file never sees another
/// file's cached blocks.
static NEXT_TABLE_ID: AtomicU64 = AtomicU64::new(1);

impl BlockCache {
    pub fn new(capacity_bytes: u64) -> Self {
        let items = (capacity_bytes / TYPICAL_BLOCK).clamp(64, 1 << 24) as usize;
        let kinds = Arc::new(KindBytes::default());
        BlockCache {
            cache: Cache::with(
                items,
                capacity_bytes,
                BlockWeighter,
                quick_cache::DefaultHashBuilder::default(),
                EvictionCounter(Arc::clone(&kinds)),
            ),
            capacity: capacity_bytes,
            kinds,
            reserved: AtomicU64::new(0),
            buffers: AtomicU64::new(0),
            memtables: AtomicU64::new(0),
            resize_lock: Mutex::new(()),
            pinned: AtomicI64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Lookups answered from memory, including waits on another reader's in-flight load.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that read storage.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Bytes of cached blocks of all kinds.
    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// Bytes of cached data blocks.
    pub fn data_bytes(&self) -> u64 {
        KindBytes::read(&self.kinds.data)
    }

    /// Bytes of cached index and filter partitions.
    pub fn index_filter_bytes(&self) -> u64 {
        KindBytes::read(&self.kinds.index_filter)
    }

    /// Bytes of data blocks ever loaded into the cache.
    pub fn data_bytes_inserted(&self) -> u64 {
        self.kinds.data_inserted.load(Ordering::Relaxed)
    }

    /// Bytes of index and filter partitions ever loaded into the cache.
    pub fn index_filter_bytes_inserted(&self) -> u64 {
        self.kinds.index_filter_inserted.load(Ordering::Relaxed)
    }

    /// The configured capacity: blocks plus what is charged to the cache.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes open table readers hold (charged against the capacity).
    pub fn reserved_bytes(&self) -> u64 {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Bytes live iterators hold: their current blocks and index partitions (usually also in the
    /// cache) and their readahead buffers (never in it).
    pub fn pinned_bytes(&self) -> u64 {
        self.pinned.load(Ordering::Relaxed).max(0) as u64
    }

    /// Capacity left for blocks once reader reservations are charged.
    pub fn block_capacity(&self) -> u64 {
        self.cache.capacity()
    }

    pub(crate) fn next_table_id() -> u64 {
        NEXT_TABLE_ID.fetch_add(1, Ordering::Relaxed)
    }

    /// Charges an open reader's `bytes` to the cache (released with `release`).
    pub(crate) fn reserve(&self, bytes: u64) {
        self.reserved.fetch_add(bytes, Ordering::Relaxed);
        self.resize();
    }

    pub(crate) fn release(&self, bytes: u64) {
        self.reserved.fetch_sub(bytes, Ordering::Relaxed);
        self.resize();
    }

    /// Bytes of I/O buffers charged to the cache.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffers.load(Ordering::Relaxed)
    }

    /// Moves the charge of an I/O buffer from `old` bytes to `new`.
    pub(crate) fn charge_buffer(&self, old: u64, new: u64) {
        self.move_charge(&self.buffers, old, new);
    }

    /// Bytes of memtables charged to the cache.
    pub fn memtable_bytes(&self) -> u64 {
        self.memtables.load(Ordering::Relaxed)
    }

    /// Moves the charge of memtables from `old` bytes to `new`.
    pub(crate) fn charge_memtables(&self, old: u64, new: u64) {
        self.move_charge(&self.memtables, old, new);
    }

    /// Moves `charge` from `old` bytes to `new` (added first, so it never dips below zero) and
    /// resizes the block capacity.
    fn move_charge(&self, charge: &AtomicU64, old: u64, new: u64) {
        charge.fetch_add(new, Ordering::Relaxed);
        charge.fetch_sub(old, Ordering::Relaxed);
        self.resize();
    }

    fn resize(&self) {
        // Serialized, so a resize computed from an older total never lands last.
        let _one_at_a_time = self.resize_lock.lock().unwrap_or_else(|e| e.into_inner());
        let step = (self.capacity / RESERVATION_STEPS).clamp(4 << 10, 1 << 20);
        let reserved = (self.reserved_bytes() + self.buffer_bytes()).div_ceil(step) * step;
        let memtables = self.memtable_bytes().div_ceil(step) * step;
        let blocks = (self.capacity.saturating_sub(reserved))
            .max(self.capacity / MIN_BLOCK_SHARE_DIVISOR)
            .saturating_sub(memtables)
            .max(self.capacity / MIN_BLOCK_SHARE_UNDER_MEMTABLES_DIVISOR);
        if blocks != self.cache.capacity() {
            self.cache.set_capacity(blocks);
        }
    }

    pub(crate) fn pin(&self, delta: i64) {
        self.pinned.fetch_add(delta, Ordering::Relaxed);
    }

    /// Returns the cached block or runs `load`. Concurrent callers for the same block wait for
    /// the first one's load instead of issuing their own read; if it fails, the next waiter
    /// loads.
    pub(crate) async fn get_or_load<F>(
        &self,
        table_id: u64,
        offset: u64,
        load: F,
    ) -> Result<CachedBlock>
    where
        F: Future<Output = Result<CachedBlock>>,
    {
        match self.cache.get_value_or_guard_async(&(table_id, offset)).await {
            Ok(block) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(block)
            }
            Err(guard) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                let block = load.await?;
                // A block that outweighs a cache shard is reported evicted right away (and so
                // counted out); the read still succeeds.
                if guard.insert(block.clone()).is_ok() {
                    self.kinds.inserted(&block);
                }
                Ok(block)
            }
        }
    }

    /// The cached block, if present, without counting a hit or changing its recency.
    pub(crate) fn peek(&self, table_id: u64, offset: u64) -> Option<CachedBlock> {
        self.cache.peek(&(table_id, offset))
    }

    pub(crate) fn evict(&self, table_id: u64, offset: u64) {
        if let Some((_, block)) = self.cache.remove(&(table_id, offset)) {
            self.kinds.add(&block, -1);
        }
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("block_capacity", &self.block_capacity())
            .field("usage", &self.usage_bytes())
            .field("reserved", &self.reserved_bytes())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}
