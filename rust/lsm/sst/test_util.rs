//! A tiny in-memory `Storage` for SST tests, independent of the real storage implementations
//! (which are written in parallel). It can mangle reads to simulate faulty stores.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use crate::storage::{FileInfo, FileWriter, Storage, StorageRef, WriteMode};
use crate::{Error, Result};

#[derive(Debug, Default)]
pub(crate) struct MemStorage {
    files: Arc<Mutex<HashMap<String, Bytes>>>,
    /// Number of `read_range` calls, to check request counts.
    pub reads: AtomicU64,
    /// The ranges `read_range` was asked for, in order.
    pub ranges: Mutex<Vec<Range<u64>>>,
    /// If non-zero, every `read_range` returns this many bytes fewer than asked.
    pub short_by: AtomicUsize,
    /// If set, every `read_range` yields to the executor once before answering, so readers
    /// polled together are all in flight before the first one's read completes.
    pub yield_once: AtomicBool,
}

impl MemStorage {
    pub(crate) fn new() -> Arc<MemStorage> {
        Arc::new(MemStorage::default())
    }

    pub(crate) fn as_ref(self: &Arc<Self>) -> StorageRef {
        Arc::clone(self) as StorageRef
    }

    pub(crate) fn insert(&self, path: &str, data: Bytes) {
        self.files.lock().unwrap().insert(path.to_string(), data);
    }

    pub(crate) fn get(&self, path: &str) -> Bytes {
        self.files.lock().unwrap()[path].clone()
    }

    fn file(&self, path: &str) -> Result<Bytes> {
        self.files
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .ok_or_else(|| Error::NotFound(path.to_string()))
    }
}

struct MemWriter {
    files: Arc<Mutex<HashMap<String, Bytes>>>,
    path: String,
    data: Vec<u8>,
}

#[async_trait]
impl FileWriter for MemWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        self.data.extend_from_slice(&data);
        Ok(())
    }
    fn held_bytes(&mut self) -> u64 {
        self.data.capacity() as u64
    }
    async fn finish(self: Box<Self>) -> Result<u64> {
        let len = self.data.len() as u64;
        self.files.lock().unwrap().insert(self.path, Bytes::from(self.data));
        Ok(len)
    }
    async fn abort(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Storage for MemStorage {
    fn url(&self) -> &str {
        "mem://"
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        Ok(Box::new(MemWriter {
            files: Arc::clone(&self.files),
            path: path.to_string(),
            data: Vec::new(),
        }))
    }

    async fn put(&self, path: &str, data: Bytes, _mode: WriteMode) -> Result<()> {
        self.insert(path, data);
        Ok(())
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.ranges.lock().unwrap().push(range.clone());
        if self.yield_once.load(Ordering::Relaxed) {
            tokio::task::yield_now().await;
        }
        let data = self.file(path)?;
        if range.end > data.len() as u64 || range.start > range.end {
            return Err(Error::io(path, format!("range {range:?} out of bounds")));
        }
        let short = self.short_by.load(Ordering::Relaxed) as u64;
        let end = range.end.saturating_sub(short).max(range.start);
        Ok(data.slice(range.start as usize..end as usize))
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        self.file(path)
    }

    async fn size(&self, path: &str) -> Result<u64> {
        Ok(self.file(path)?.len() as u64)
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        Ok(self
            .files
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p.starts_with(dir))
            .map(|(p, d)| FileInfo { path: p.clone(), size: d.len() as u64 })
            .collect())
    }

    async fn delete(&self, path: &str) -> Result<()> {
        self.files.lock().unwrap().remove(path);
        Ok(())
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let data = self.file(from)?;
        let mut files = self.files.lock().unwrap();
        files.remove(from);
        files.insert(to.to_string(), data);
        Ok(())
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        let data = self.file(from)?;
        self.insert(to, data);
        Ok(())
    }
}
