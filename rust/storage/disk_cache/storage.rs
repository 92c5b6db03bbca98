//! [`DiskCachedStorage`]: a remote [`Storage`] whose SST files are also kept in a [`DiskCache`].

use std::fs::File;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::FutureExt;
use tokio::task::JoinHandle;

use super::entry::{self, EntryWriter, ReadFailure};
use super::{DiskCache, DiskCacheStats};
use crate::storage::{
    FileInfo, FileWriter, Location, PanicHook, Storage, StorageRef, Transfer, WriteMode, io_runtime,
};
use crate::{Error, Result};

/// Files worth caching: SSTs are immutable and read at random; manifests and the rest are read
/// once at open.
fn cacheable(path: &str) -> bool {
    path.ends_with(".sst")
}

pub struct DiskCachedStorage {
    inner: StorageRef,
    cache: Arc<DiskCache>,
    /// `inner.url()` plus '/': the prefix of every key of this storage in the shared cache.
    prefix: String,
    fills: Arc<Mutex<Vec<JoinHandle<()>>>>,
    /// Told when a download panics (see [`Storage::on_background_panic`]).
    on_panic: Arc<Mutex<Option<PanicHook>>>,
}

impl std::fmt::Debug for DiskCachedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let DiskCachedStorage { inner, cache, prefix, .. } = self;
        f.debug_struct("DiskCachedStorage")
            .field("inner", inner)
            .field("cache", cache)
            .field("prefix", prefix)
            .finish_non_exhaustive()
    }
}

impl DiskCachedStorage {
    pub fn new(inner: StorageRef, cache: Arc<DiskCache>) -> Self {
        let prefix = format!("{}/", inner.url().trim_end_matches('/'));
        Self { inner, cache, prefix, fills: Arc::default(), on_panic: Arc::default() }
    }

    pub fn cache(&self) -> &Arc<DiskCache> {
        &self.cache
    }

    /// Waits until the downloads started so far have finished (tests: no timing).
    pub async fn wait_for_fills(&self) {
        let fills = std::mem::take(&mut *self.fills.lock().unwrap_or_else(|e| e.into_inner()));
        for fill in fills {
            let _ = fill.await;
        }
    }

    fn key(&self, path: &str) -> String {
        format!("{}{}", self.prefix, path.trim_matches('/'))
    }

    /// Serves `range` from the cache if it holds the file; `None` to read the remote file.
    fn read_cached(&self, path: &str, range: &Range<u64>) -> Option<Bytes> {
        let key = self.key(path);
        let (entry_path, meta, open) = self.cache.lookup(&key)?;
        if range.start > range.end || range.end > meta.len {
            // Let the remote file give the error it gives.
            return None;
        }
        let file = match open {
            Some(file) => Ok(file),
            None => File::open(&entry_path).map(Arc::new).inspect(|file| {
                self.cache.keep_open(&key, &meta, file.clone());
            }),
        };
        match file
            .map_err(ReadFailure::Io)
            .and_then(|f| entry::read_range(&f, &meta, range.clone()))
        {
            Ok(bytes) => Some(bytes),
            Err(ReadFailure::Corrupt { chunk }) => {
                tracing::warn!("disk cache: {key} is damaged (chunk {chunk}); reading remote");
                self.cache.corrupt(&key);
                if self.cache.start_fill(&key) {
                    self.spawn_fill(path, key);
                }
                None
            }
            Err(ReadFailure::Io(e)) => {
                tracing::debug!("disk cache: {key} unreadable ({e}); reading remote");
                self.cache.lost(&key);
                None
            }
        }
    }

    /// Counts a remote read of `path` and downloads the file once it was read often enough.
    fn after_miss(&self, path: &str) {
        let key = self.key(path);
        if self.cache.note_miss(&key) {
            self.spawn_fill(path, key);
        }
    }

    /// Downloads `path` into the cache in the background (the read that asked goes on). The
    /// download ends (`fill_done`) also if it panics, which fails the database over this storage.
    fn spawn_fill(&self, path: &str, key: String) {
        let (inner, cache, path) = (self.inner.clone(), self.cache.clone(), path.to_string());
        let on_panic = self.on_panic.clone();
        let filling = Filling { cache: cache.clone(), key: key.clone(), loaded: false };
        // The span of the read that asked (it names the database in log lines) goes along.
        let span = tracing::Span::current();
        let fill = async move {
            let download = async move {
                let mut filling = filling;
                let Ok(data) = inner.read(&path).await else {
                    return Ok(());
                };
                let span = tracing::Span::current();
                let inserted =
                    tokio::task::spawn_blocking(move || span.in_scope(|| filling.insert(&data)));
                match inserted.await {
                    Err(e) if e.is_panic() => Err(e.into_panic()),
                    _ => Ok(()),
                }
            };
            // Unwind safety: the download's state is `Filling`, which ends it whole on drop.
            let outcome = AssertUnwindSafe(download).catch_unwind().await;
            let payload = match outcome {
                Ok(Ok(())) => return,
                Ok(Err(payload)) | Err(payload) => payload,
            };
            let error = Error::from_panic("disk cache download", payload.as_ref());
            tracing::error!("{error}");
            let hook = on_panic.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(hook) = hook {
                hook(error);
            }
        };
        let fill = io_runtime().spawn(tracing::Instrument::instrument(fill, span));
        let mut fills = self.fills.lock().unwrap_or_else(|e| e.into_inner());
        fills.retain(|f| !f.is_finished());
        fills.push(fill);
    }
}

/// A download in progress; dropping it ends it (`fill_done`), whether it finished, failed or
/// panicked, so the key can be downloaded again.
struct Filling {
    cache: Arc<DiskCache>,
    key: String,
    loaded: bool,
}

impl Filling {
    fn insert(&mut self, data: &[u8]) {
        self.loaded = insert(&self.cache, &self.key, data);
    }
}

impl Drop for Filling {
    fn drop(&mut self) {
        self.cache.fill_done(&self.key, self.loaded);
    }
}

/// Puts a whole file into the cache if it fits (returns whether it did); failures only mean it is
/// not cached.
fn insert(cache: &DiskCache, key: &str, data: &[u8]) -> bool {
    let write = || -> std::io::Result<EntryWriter> {
        let mut writer = cache.writer()?;
        writer.write(data)?;
        Ok(writer)
    };
    match write() {
        Ok(writer) => match cache.reserve(writer.disk_bytes(key)) {
            Some(reservation) => cache.publish(key, writer, reservation),
            None => false,
        },
        Err(e) => {
            tracing::debug!("disk cache: cannot write {key}: {e}");
            false
        }
    }
}

#[async_trait]
impl Storage for DiskCachedStorage {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        let inner = self.inner.create(path).await?;
        if !cacheable(path) {
            return Ok(inner);
        }
        let local = self.cache.writer().ok();
        Ok(Box::new(TeeWriter { inner, local, cache: self.cache.clone(), key: self.key(path) }))
    }

    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        let key = self.key(path);
        // An overwrite changes the file: the old entry must not outlive it, even if this fails.
        self.cache.remove(&key);
        self.inner.put(path, data.clone(), mode).await?;
        if cacheable(path) {
            insert(&self.cache, &key, &data);
        }
        Ok(())
    }

    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        if !cacheable(path) {
            return self.inner.read_range(path, range).await;
        }
        if let Some(bytes) = self.read_cached(path, &range) {
            return Ok(bytes);
        }
        let bytes = self.inner.read_range(path, range).await?;
        self.after_miss(path);
        Ok(bytes)
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        if cacheable(path) {
            let len = self.cache.cached_len(&self.key(path));
            if let Some(bytes) = len.and_then(|len| self.read_cached(path, &(0..len))) {
                return Ok(bytes);
            }
        }
        self.inner.read(path).await
    }

    async fn size(&self, path: &str) -> Result<u64> {
        match self.cache.cached_len(&self.key(path)) {
            Some(len) => Ok(len),
            None => self.inner.size(path).await,
        }
    }

    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        self.inner.list(dir).await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        self.cache.remove(&self.key(path));
        self.inner.delete(path).await
    }

    async fn delete_all(&self) -> Result<u64> {
        self.cache.remove_prefix(&self.prefix);
        self.inner.delete_all().await
    }

    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.cache.remove(&self.key(from));
        self.cache.remove(&self.key(to));
        self.inner.rename(from, to).await
    }

    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.cache.remove(&self.key(to));
        self.inner.copy(from, to).await
    }

    fn disk_cache_stats(&self) -> Option<DiskCacheStats> {
        Some(self.cache.stats())
    }

    fn forget_cached(&self, path: &str) {
        self.cache.remove(&self.key(path));
    }

    fn on_background_panic(&self, hook: PanicHook) {
        *self.on_panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    fn locate(&self, path: &str) -> Option<Location> {
        self.inner.locate(path)
    }

    async fn copy_in(&self, src: &dyn Storage, from: &str, to: &str) -> Result<Transfer> {
        self.cache.remove(&self.key(to));
        self.inner.copy_in(src, from, to).await
    }
}

/// Writes a new SST to the remote storage and, alongside, into the cache, as Flink's ForSt
/// does: a file just written by a flush or compaction is the one read next. The cache copy is
/// best effort: a local failure drops it, never the remote write.
struct TeeWriter {
    inner: Box<dyn FileWriter>,
    local: Option<EntryWriter>,
    cache: Arc<DiskCache>,
    key: String,
}

#[async_trait]
impl FileWriter for TeeWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        if let Some(local) = &mut self.local
            && local.write(&data).is_err()
        {
            self.local = None;
        }
        self.inner.write(data).await
    }

    fn held_bytes(&mut self) -> u64 {
        self.local.as_ref().map_or(0, EntryWriter::buffer_bytes) + self.inner.held_bytes()
    }

    async fn finish(self: Box<Self>) -> Result<u64> {
        let TeeWriter { inner, local, cache, key } = *self;
        cache.remove(&key);
        let size = inner.finish().await?;
        if let Some(local) = local
            && let Some(reservation) = cache.reserve(local.disk_bytes(&key))
        {
            cache.publish(&key, local, reservation);
        }
        Ok(size)
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        self.inner.abort().await
    }
}
