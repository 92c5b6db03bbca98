//! The block cache of one database: every block the engine reads from its SST files — data
//! blocks, index partitions and filter partitions — keyed by (table cache id, block offset) and
//! weighted by its size in bytes, so their memory is bounded by the cache's capacity however many
//! tables are open. Open table readers (footer, top-level index, properties) and the version's
//! range tombstones are charged by shrinking the capacity left for blocks, as RocksDB's cache
//! reservations do.
//!
//! The memtables' share of the budget is theirs only while they fill. What they leave idle holds
//! index and filter partitions (`with_index_filter_tier`): a tier of its own that shrinks as
//! memtables grow and takes the room back once they are flushed, so from about 16M keys, where
//! the partitions outgrow the block cache, reads still find them in memory, inside the budget.
//! Data blocks stay in the block cache: they churn, and a large churning cache leaves freed
//! blocks resident in malloc's arenas (see the scale benchmark in docs/benchmarks.md).
//!
//! Memtables can instead be charged to the cache itself (`DbOptions::memtables_charged_to_cache`,
//! as RocksDB's write buffer manager costed to the cache): the cache's capacity is then the whole
//! memory budget, blocks of every kind give way while memtables fill.
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

type Blocks =
    Cache<(u64, u64), CachedBlock, BlockWeighter, quick_cache::DefaultHashBuilder, EvictionCounter>;

fn blocks(capacity_bytes: u64, kinds: &Arc<KindBytes>) -> Blocks {
    let items = (capacity_bytes / TYPICAL_BLOCK).clamp(64, 1 << 24) as usize;
    Cache::with(
        items,
        capacity_bytes,
        BlockWeighter,
        quick_cache::DefaultHashBuilder::default(),
        EvictionCounter(Arc::clone(kinds)),
    )
}

/// Which of the caches holds an index or filter partition.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Holder {
    /// The memtables' idle room, which keeps what it holds while its capacity lasts.
    Room,
    /// The block cache, where it churns with the data blocks.
    BlockCache,
}

/// Where a block missing from one of the caches came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fetched {
    /// Read from its file.
    Read,
    /// Moved from the block cache into the index/filter room.
    TakenOver,
}

/// Index and filter partitions in the memtables' idle room.
struct IndexFilterTier {
    blocks: Blocks,
    /// The memtables' whole share of the budget.
    memtable_budget: u64,
}

impl IndexFilterTier {
    /// Below this room (1/16 of the memtables' share) partitions go to the block cache: a tier
    /// that small would only churn.
    fn is_open(&self) -> bool {
        self.blocks.capacity() >= self.memtable_budget / 16
    }

    /// Whether another partition fits without evicting one. A full tier keeps what it holds and
    /// sends the other partitions through the block cache: when they are twice its size, with
    /// the reads spread over all of them, evicting from it turned nearly every lookup into a
    /// load (64M keys: gets 53k/s -> 21k/s), while a tier that stays put answers half of them.
    fn has_room(&self) -> bool {
        self.blocks.weight() + TIER_HEADROOM <= self.blocks.capacity()
    }
}

/// Room a tier keeps for the partition being loaded (partitions take a few KiB).
const TIER_HEADROOM: u64 = 64 << 10;

pub struct BlockCache {
    cache: Blocks,
    /// None: memtables are charged to `cache` (if at all).
    tier: Option<IndexFilterTier>,
    /// The configured capacity: blocks plus reader reservations.
    capacity: u64,
    kinds: Arc<KindBytes>,
    /// Bytes open table readers reserve.
    reserved: AtomicU64,
    /// Bytes of I/O buffers (compaction's readahead, flush and compaction output), charged like
    /// reservations.
    buffers: AtomicU64,
    /// Bytes of the current version's range tombstones, charged like reservations.
    tombstones: AtomicU64,
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
    /// A cache of `capacity_bytes`; memtables charged to it (`charge_memtables`) shrink it.
    pub fn new(capacity_bytes: u64) -> Self {
        Self::build(capacity_bytes, None)
    }

    /// A cache of `capacity_bytes` for blocks, and index and filter partitions also in what
    /// memtables leave idle of their `memtable_budget` (`charge_memtables` tells what they hold).
    pub fn with_index_filter_tier(capacity_bytes: u64, memtable_budget: u64) -> Self {
        Self::build(capacity_bytes, Some(memtable_budget))
    }

    fn build(capacity_bytes: u64, memtable_budget: Option<u64>) -> Self {
        let kinds = Arc::new(KindBytes::default());
        BlockCache {
            cache: blocks(capacity_bytes, &kinds),
            tier: memtable_budget.map(|budget| IndexFilterTier {
                blocks: blocks(budget, &kinds),
                memtable_budget: budget,
            }),
            capacity: capacity_bytes,
            kinds,
            reserved: AtomicU64::new(0),
            buffers: AtomicU64::new(0),
            tombstones: AtomicU64::new(0),
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

    /// Bytes of cached blocks of all kinds, in the block cache and in the memtables' idle room.
    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight() + self.tier.as_ref().map_or(0, |t| t.blocks.weight())
    }

    /// Room memtables leave idle for index and filter partitions now.
    pub fn index_filter_tier_capacity(&self) -> u64 {
        self.tier.as_ref().map_or(0, |t| t.blocks.capacity())
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

    /// Bytes of the current version's range tombstones charged to the cache.
    pub fn tombstone_bytes(&self) -> u64 {
        self.tombstones.load(Ordering::Relaxed)
    }

    /// Moves the charge of the version's range tombstones from `old` bytes to `new`.
    pub(crate) fn charge_tombstones(&self, old: u64, new: u64) {
        self.move_charge(&self.tombstones, old, new);
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
    /// resizes the block capacity; nothing to do when they are equal.
    fn move_charge(&self, charge: &AtomicU64, old: u64, new: u64) {
        if old == new {
            return;
        }
        charge.fetch_add(new, Ordering::Relaxed);
        charge.fetch_sub(old, Ordering::Relaxed);
        self.resize();
    }

    fn resize(&self) {
        // Serialized, so a resize computed from an older total never lands last.
        let _one_at_a_time = self.resize_lock.lock().unwrap_or_else(|e| e.into_inner());
        let step = (self.capacity / RESERVATION_STEPS).clamp(4 << 10, 1 << 20);
        let reserved = (self.reserved_bytes() + self.buffer_bytes() + self.tombstone_bytes())
            .div_ceil(step)
            * step;
        let memtables = self.memtable_bytes().div_ceil(step) * step;
        let in_cache = if self.tier.is_some() { 0 } else { memtables };
        let blocks = (self.capacity.saturating_sub(reserved))
            .max(self.capacity / MIN_BLOCK_SHARE_DIVISOR)
            .saturating_sub(in_cache)
            .max(self.capacity / MIN_BLOCK_SHARE_UNDER_MEMTABLES_DIVISOR);
        if blocks != self.cache.capacity() {
            self.cache.set_capacity(blocks);
        }
        if let Some(tier) = &self.tier {
            // Memtables and tier together stay within the memtables' share.
            let idle = tier.memtable_budget.saturating_sub(memtables);
            if idle != tier.blocks.capacity() {
                tier.blocks.set_capacity(idle);
            }
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
        let read = async { Ok((load.await?, Fetched::Read)) };
        self.get_or_insert(&self.cache, (table_id, offset), read).await
    }

    /// `get_or_load` for an index or filter partition: in the memtables' idle room while it is
    /// open and not full (taking the partition over from the block cache if it was loaded there
    /// while the room was closed or full), else in the block cache. Says where it is.
    pub(crate) async fn get_or_load_index_filter<F>(
        &self,
        table_id: u64,
        offset: u64,
        load: F,
    ) -> Result<(CachedBlock, Holder)>
    where
        F: Future<Output = Result<CachedBlock>>,
    {
        let in_cache = |block| (block, Holder::BlockCache);
        let Some(tier) = self.tier.as_ref().filter(|t| t.is_open()) else {
            return self.get_or_load(table_id, offset, load).await.map(in_cache);
        };
        let key = (table_id, offset);
        if !tier.has_room() {
            if let Some(block) = tier.blocks.get(&key) {
                self.count_hit();
                return Ok((block, Holder::Room));
            }
            return self.get_or_load(table_id, offset, load).await.map(in_cache);
        }
        let take_over_or_read = async {
            match self.cache.remove(&key) {
                Some((_, block)) => {
                    self.kinds.add(&block, -1);
                    Ok((block, Fetched::TakenOver))
                }
                None => Ok((load.await?, Fetched::Read)),
            }
        };
        let block = self.get_or_insert(&tier.blocks, key, take_over_or_read).await?;
        Ok((block, Holder::Room))
    }

    /// The block under `key` in `blocks`, else the one `fetch` brings, inserted there; counts a
    /// hit, or a miss if it had to be read.
    async fn get_or_insert<F>(
        &self,
        blocks: &Blocks,
        key: (u64, u64),
        fetch: F,
    ) -> Result<CachedBlock>
    where
        F: Future<Output = Result<(CachedBlock, Fetched)>>,
    {
        let guard = match blocks.get_value_or_guard_async(&key).await {
            Ok(block) => {
                self.count_hit();
                return Ok(block);
            }
            Err(guard) => guard,
        };
        let (block, fetched) = fetch.await?;
        let counter = if fetched == Fetched::Read { &self.misses } else { &self.hits };
        counter.fetch_add(1, Ordering::Relaxed);
        // A block that outweighs a cache shard is reported evicted right away (and so counted
        // out); the read still succeeds.
        if guard.insert(block.clone()).is_ok() {
            match fetched {
                Fetched::Read => self.kinds.inserted(&block),
                Fetched::TakenOver => self.kinds.add(&block, 1),
            }
        }
        Ok(block)
    }

    /// The cached block, if present (a hit), without loading it, and where it is.
    pub(crate) fn get_cached(&self, table_id: u64, offset: u64) -> Option<(CachedBlock, Holder)> {
        let key = (table_id, offset);
        let in_room = self.tier.as_ref().and_then(|t| t.blocks.get(&key));
        let found = match in_room {
            Some(block) => (block, Holder::Room),
            None => (self.cache.get(&key)?, Holder::BlockCache),
        };
        self.count_hit();
        Some(found)
    }

    /// A block found in memory outside the cache's own lookups (`RoomSlots`).
    pub(crate) fn count_hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// The cached block, if present, without counting a hit or changing its recency.
    pub(crate) fn peek(&self, table_id: u64, offset: u64) -> Option<CachedBlock> {
        let key = (table_id, offset);
        self.cache.peek(&key).or_else(|| self.tier.as_ref()?.blocks.peek(&key))
    }

    pub(crate) fn evict(&self, table_id: u64, offset: u64) {
        let key = (table_id, offset);
        let tiers = std::iter::once(&self.cache).chain(self.tier.as_ref().map(|t| &t.blocks));
        for blocks in tiers {
            if let Some((_, block)) = blocks.remove(&key) {
                self.kinds.add(&block, -1);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::sst::BloomBuilder;
    use futures::executor::block_on;

    fn filter(keys: u32) -> CachedBlock {
        let mut bloom = BloomBuilder::new(10);
        (0..keys).for_each(|k| bloom.add(&k.to_be_bytes()));
        CachedBlock::Filter(Arc::new(Bloom::decode(bloom.finish().into()).unwrap()))
    }

    /// Loads partition `offset` of table 1, counting the loads; says where it is held.
    fn get(cache: &BlockCache, offset: u64, loads: &AtomicU64) -> Holder {
        block_on(cache.get_or_load_index_filter(1, offset, async {
            loads.fetch_add(1, Ordering::Relaxed);
            Ok(filter(1000))
        }))
        .unwrap()
        .1
    }

    #[test]
    fn partitions_live_in_the_memtables_idle_room_and_give_it_back_as_they_fill() {
        const BUDGET: u64 = 4 << 20;
        let cache = BlockCache::with_index_filter_tier(64 << 10, BUDGET);
        let loads = AtomicU64::new(0);
        assert_eq!(cache.index_filter_tier_capacity(), BUDGET, "the whole share while idle");
        for offset in 0..200 {
            get(&cache, offset, &loads);
        }
        // 200 partitions of about 1.2 KiB: more than the block cache holds, all in the room.
        let held = cache.index_filter_bytes();
        assert!(held > 128 << 10 && held <= BUDGET, "{held} bytes of partitions");
        assert_eq!(cache.block_capacity(), 64 << 10, "the block cache is left alone");
        for offset in 0..200 {
            get(&cache, offset, &loads);
        }
        assert_eq!(loads.load(Ordering::Relaxed), 200, "every partition stayed in memory");

        // Memtables fill: the room shrinks and what it held goes (memtables + room <= budget).
        cache.charge_memtables(0, BUDGET - (64 << 10));
        let room = cache.index_filter_tier_capacity();
        assert!(room <= 64 << 10, "{room} bytes of room");
        assert!(cache.usage_bytes() <= room + (64 << 10), "{} bytes cached", cache.usage_bytes());

        // A room too small to be worth it sends partitions to the block cache...
        assert_eq!(get(&cache, 1000, &loads), Holder::BlockCache);
        assert!(cache.cache.peek(&(1, 1000)).is_some(), "in the block cache");
        // ...and once memtables are flushed, the room takes it over without reading it again.
        cache.charge_memtables(BUDGET - (64 << 10), 0);
        let loaded = loads.load(Ordering::Relaxed);
        assert_eq!(get(&cache, 1000, &loads), Holder::Room);
        assert_eq!(loads.load(Ordering::Relaxed), loaded, "taken over, not loaded");
        assert!(cache.cache.peek(&(1, 1000)).is_none(), "held once");
        assert!(cache.peek(1, 1000).is_some(), "in the room");
        cache.evict(1, 1000);
        assert!(cache.peek(1, 1000).is_none(), "evicted from the room");
    }

    #[test]
    fn range_tombstones_take_their_room_from_the_blocks() {
        let cache = BlockCache::new(4 << 20);
        cache.charge_tombstones(0, 1 << 20);
        assert_eq!(cache.tombstone_bytes(), 1 << 20);
        assert_eq!(cache.block_capacity(), 3 << 20);
        cache.charge_tombstones(1 << 20, 0);
        assert_eq!(cache.block_capacity(), 4 << 20, "given back");
    }

    #[test]
    fn a_full_room_keeps_its_partitions_and_sends_the_others_to_the_block_cache() {
        const BUDGET: u64 = 1 << 20;
        let cache = BlockCache::with_index_filter_tier(64 << 10, BUDGET);
        let loads = AtomicU64::new(0);
        // 1000 partitions of about 1.2 KiB: more than twice the room (512 KiB).
        for offset in 0..1000 {
            get(&cache, offset, &loads);
        }
        let room = cache.index_filter_tier_capacity();
        let in_room = cache.tier.as_ref().unwrap().blocks.weight();
        assert!(in_room + TIER_HEADROOM >= room && in_room <= room, "{in_room} of {room}");
        // The first partitions filled the room and stayed there.
        let loaded = loads.load(Ordering::Relaxed);
        for offset in 0..100 {
            assert_eq!(get(&cache, offset, &loads), Holder::Room);
        }
        assert_eq!(loads.load(Ordering::Relaxed), loaded, "the room kept its partitions");
        assert_eq!(get(&cache, 999, &loads), Holder::BlockCache, "the others");
    }
}
