//! The block cache shared by all open SST files of a process: decoded data blocks keyed by
//! (table cache id, block offset), weighted by their size in bytes.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::Result;
use crate::lsm::sst::Block;

/// Average block size assumed when sizing the cache's item table.
const TYPICAL_BLOCK: u64 = 4096;

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<(u64, u64), Arc<Block>> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), block: &Arc<Block>) -> u64 {
        block.memory_size() as u64
    }
}

pub struct BlockCache {
    cache: Cache<(u64, u64), Arc<Block>, BlockWeighter>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Ids are never reused within a process, so a reopened or replaced file never sees another
/// file's cached blocks.
static NEXT_TABLE_ID: AtomicU64 = AtomicU64::new(1);

impl BlockCache {
    pub fn new(capacity_bytes: u64) -> Self {
        let items = (capacity_bytes / TYPICAL_BLOCK).clamp(64, 1 << 24) as usize;
        BlockCache {
            cache: Cache::with_weighter(items, capacity_bytes, BlockWeighter),
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

    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight()
    }

    pub(crate) fn next_table_id() -> u64 {
        NEXT_TABLE_ID.fetch_add(1, Ordering::Relaxed)
    }

    /// Returns the cached block or runs `load`. Concurrent callers for the same block wait for
    /// the first one's load instead of issuing their own read; if it fails, the next waiter
    /// loads.
    pub(crate) async fn get_or_load<F>(
        &self,
        table_id: u64,
        offset: u64,
        load: F,
    ) -> Result<Arc<Block>>
    where
        F: Future<Output = Result<Arc<Block>>>,
    {
        match self.cache.get_value_or_guard_async(&(table_id, offset)).await {
            Ok(block) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(block)
            }
            Err(guard) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                let block = load.await?;
                // Refused only if the block outweighs a cache shard; the read still succeeds.
                let _ = guard.insert(Arc::clone(&block));
                Ok(block)
            }
        }
    }

    pub(crate) fn evict(&self, table_id: u64, offset: u64) {
        self.cache.remove(&(table_id, offset));
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.cache.capacity())
            .field("usage", &self.usage_bytes())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}
