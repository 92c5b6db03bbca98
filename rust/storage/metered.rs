//! Counts what a database asks of its storage: requests, bytes and the time they took, by kind
//! (reads, writes, everything else). The counters are the storage metrics of `DbStats`.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;

use super::{
    DiskCacheStats, FileInfo, FileWriter, Location, Storage, StorageRef, Transfer, WriteMode,
};
use crate::Result;

/// Totals since the database opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IoStats {
    /// Whole-file and ranged reads.
    pub reads: u64,
    pub bytes_read: u64,
    pub read_micros: u64,
    /// Puts and streamed writes (each chunk and the final commit of a file).
    pub writes: u64,
    pub bytes_written: u64,
    pub write_micros: u64,
    /// Lists, sizes, deletes, renames and copies.
    pub other_requests: u64,
    pub other_micros: u64,
}

#[derive(Debug, Default)]
pub struct IoCounters {
    reads: AtomicU64,
    bytes_read: AtomicU64,
    read_micros: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
    write_micros: AtomicU64,
    other_requests: AtomicU64,
    other_micros: AtomicU64,
}

impl IoCounters {
    pub fn snapshot(&self) -> IoStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        IoStats {
            reads: load(&self.reads),
            bytes_read: load(&self.bytes_read),
            read_micros: load(&self.read_micros),
            writes: load(&self.writes),
            bytes_written: load(&self.bytes_written),
            write_micros: load(&self.write_micros),
            other_requests: load(&self.other_requests),
            other_micros: load(&self.other_micros),
        }
    }

    fn read(&self, started: Instant, bytes: usize) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes as u64, Ordering::Relaxed);
        self.read_micros.fetch_add(micros_since(started), Ordering::Relaxed);
    }

    fn write(&self, started: Instant, bytes: usize) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
        self.write_micros.fetch_add(micros_since(started), Ordering::Relaxed);
    }

    fn other(&self, started: Instant) {
        self.other_requests.fetch_add(1, Ordering::Relaxed);
        self.other_micros.fetch_add(micros_since(started), Ordering::Relaxed);
    }
}

fn micros_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// A storage that counts every request it passes on (failed ones too: they cost the same trip).
#[derive(Debug)]
pub struct MeteredStorage {
    inner: StorageRef,
    counters: Arc<IoCounters>,
}

impl MeteredStorage {
    pub fn new(inner: StorageRef) -> Self {
        Self { inner, counters: Arc::default() }
    }

    pub fn counters(&self) -> Arc<IoCounters> {
        self.counters.clone()
    }
}

#[async_trait]
impl Storage for MeteredStorage {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        let started = Instant::now();
        let inner = self.inner.create(path).await;
        self.counters.other(started);
        Ok(Box::new(MeteredWriter { inner: inner?, counters: self.counters.clone() }))
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        let started = Instant::now();
        let len = data.len();
        let result = self.inner.put(path, data, mode).await;
        self.counters.write(started, len);
        result
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let started = Instant::now();
        let result = self.inner.read_range(path, range).await;
        self.counters.read(started, result.as_ref().map_or(0, Bytes::len));
        result
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let started = Instant::now();
        let result = self.inner.read(path).await;
        self.counters.read(started, result.as_ref().map_or(0, Bytes::len));
        result
    }

    async fn size(&self, path: &str) -> Result<u64> {
        let started = Instant::now();
        let result = self.inner.size(path).await;
        self.counters.other(started);
        result
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        let started = Instant::now();
        let result = self.inner.list(dir).await;
        self.counters.other(started);
        result
    }

    async fn delete(&self, path: &str) -> Result<()> {
        let started = Instant::now();
        let result = self.inner.delete(path).await;
        self.counters.other(started);
        result
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let started = Instant::now();
        let result = self.inner.rename(from, to).await;
        self.counters.other(started);
        result
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        let started = Instant::now();
        let result = self.inner.copy(from, to).await;
        self.counters.other(started);
        result
    }

    fn locate(&self, path: &str) -> Option<Location> {
        self.inner.locate(path)
    }

    fn disk_cache_stats(&self) -> Option<DiskCacheStats> {
        self.inner.disk_cache_stats()
    }

    fn forget_cached(&self, path: &str) {
        self.inner.forget_cached(path);
    }

    fn on_background_panic(&self, hook: super::PanicHook) {
        self.inner.on_background_panic(hook);
    }

    async fn copy_in(&self, src: &dyn Storage, from: &str, to: &str) -> Result<Transfer> {
        let started = Instant::now();
        let result = self.inner.copy_in(src, from, to).await;
        self.counters.other(started);
        result
    }
}

struct MeteredWriter {
    inner: Box<dyn FileWriter>,
    counters: Arc<IoCounters>,
}

#[async_trait]
impl FileWriter for MeteredWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        let started = Instant::now();
        let len = data.len();
        let result = self.inner.write(data).await;
        self.counters.write(started, len);
        result
    }

    fn held_bytes(&mut self) -> u64 {
        self.inner.held_bytes()
    }

    async fn finish(self: Box<Self>) -> Result<u64> {
        let started = Instant::now();
        let counters = self.counters;
        let result = self.inner.finish().await;
        counters.write(started, 0);
        result
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        self.inner.abort().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{StorageOptions, block_on, open_storage};

    #[test]
    fn counts_requests_and_bytes_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let metered = MeteredStorage::new(open_storage(&url, &StorageOptions::default()).unwrap());
        let counters = metered.counters();
        block_on(async {
            metered.put("a", Bytes::from_static(b"hello"), WriteMode::Overwrite).await.unwrap();
            let mut writer = metered.create("b").await.unwrap();
            writer.write(Bytes::from_static(b"0123456789")).await.unwrap();
            writer.finish().await.unwrap();
            assert_eq!(metered.read("a").await.unwrap(), Bytes::from_static(b"hello"));
            assert_eq!(metered.read_range("b", 2..6).await.unwrap(), Bytes::from_static(b"2345"));
            assert!(metered.read("missing").await.is_err());
            metered.list("").await.unwrap();
            metered.delete("a").await.unwrap();
        });
        let stats = counters.snapshot();
        assert_eq!(stats.reads, 3, "{stats:?}");
        assert_eq!(stats.bytes_read, 9);
        assert_eq!(stats.writes, 3, "put, one chunk and the commit: {stats:?}");
        assert_eq!(stats.bytes_written, 15);
        assert_eq!(stats.other_requests, 3, "create, list and delete: {stats:?}");
    }
}
