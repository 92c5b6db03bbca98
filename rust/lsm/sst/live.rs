//! A process-wide gauge of the index and filter memory alive: every decoded index (top level or
//! partition) and bloom filter counts itself while it exists, wherever it is held (block cache,
//! open table, iterator). It measures what the cache accounting claims to bound, independently
//! of the cache's own weights.

use std::sync::atomic::{AtomicI64, Ordering};

static LIVE: AtomicI64 = AtomicI64::new(0);

/// Bytes of decoded index and filter blocks alive in this process, across all databases.
pub fn index_filter_live_bytes() -> u64 {
    LIVE.load(Ordering::Relaxed).max(0) as u64
}

/// Counts `bytes` as alive until dropped.
pub(crate) struct LiveBytes(i64);

impl LiveBytes {
    pub(crate) fn new(bytes: usize) -> Self {
        let bytes = bytes as i64;
        LIVE.fetch_add(bytes, Ordering::Relaxed);
        LiveBytes(bytes)
    }
}

impl Drop for LiveBytes {
    fn drop(&mut self) {
        LIVE.fetch_sub(self.0, Ordering::Relaxed);
    }
}
