//! The storage seam: everything the engine needs from a file system, and nothing more.
//!
//! Paths are relative to the root the storage was opened at ("db/000042-ab.sst"); the engine never
//! sees scheme or bucket. All calls are async so that many reads can be in flight at once (that is
//! how a batch of gets hides DFS latency); `block_on` runs them from engine threads.

mod disk_cache;
#[cfg(any(test, feature = "test-storages"))]
mod fault;
mod flink_proxy;
#[cfg(any(test, feature = "test-storages"))]
mod latency;
mod local;
mod metered;
mod object_store;
mod open;
mod part_uploads;
#[cfg(any(test, feature = "test-storages"))]
mod precise_delay;
mod retrying;
mod runtime;
mod s3;
mod transfer;

pub use self::object_store::{MAX_PARTS_IN_FLIGHT, MULTIPART_PART_SIZE, ObjectStoreStorage};
pub use disk_cache::{DiskCache, DiskCacheOptions, DiskCacheStats, DiskCachedStorage};
#[cfg(any(test, feature = "test-storages"))]
pub(crate) use fault::XorShift;
#[cfg(any(test, feature = "test-storages"))]
pub use fault::{FaultStorage, OpKind};
pub use flink_proxy::{CopyMethod, FlinkProxyStorage};
#[cfg(any(test, feature = "test-storages"))]
pub use latency::{Latency, LatencyStats, LatencyStorage};
pub use local::LocalStorage;
pub use metered::{IoCounters, IoStats, MeteredStorage};
pub use open::{
    LocalBackend, StorageOptions, delete_tree, drop_memory_store, list_children, open_db_storage,
    open_storage,
};
pub use retrying::{RetryPolicy, RetryingStorage};
pub use runtime::{block_on, io_runtime};
pub use s3::{Encryption, S3Options, bucket_endpoint};
pub use transfer::{Location, Transfer, copy_between};

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use crate::Result;

/// Told when background work of a storage panicked (see [`Storage::on_background_panic`]).
pub type PanicHook = Arc<dyn Fn(crate::Error) + Send + Sync>;

/// Size and name of one file returned by [`Storage::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Path relative to the storage root.
    pub path: String,
    pub size: u64,
}

/// Whether a whole-file write may replace an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    Overwrite,
    /// Fail with an I/O error if the file exists (put-if-absent where the store supports it).
    CreateNew,
}

/// Lets a provided method of [`Storage`] hand `self` on as `&dyn Storage`.
pub trait AsDynStorage {
    fn as_dyn(&self) -> &dyn Storage;
}

impl<T: Storage> AsDynStorage for T {
    fn as_dyn(&self) -> &dyn Storage {
        self
    }
}

#[async_trait]
pub trait Storage: AsDynStorage + Send + Sync + std::fmt::Debug {
    /// URL of the root, for messages ("file:///data/db", "s3://bucket/prefix").
    fn url(&self) -> &str;

    /// Starts a new file written sequentially; nothing is visible at `path` until `finish`.
    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>>;

    /// Writes a whole file in one call, published atomically.
    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()>;

    /// Reads `range` of a file. Returns exactly `range.end - range.start` bytes or an error;
    /// callers still check the length because wrappers may inject short reads.
    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes>;

    /// Reads a whole file.
    async fn read(&self, path: &str) -> Result<Bytes>;

    /// Size of a file in bytes; `Error::NotFound` if it does not exist.
    async fn size(&self, path: &str) -> Result<u64>;

    /// Files directly or indirectly under directory `dir` ("" is the root), in no given order.
    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>>;

    /// Deletes a file; deleting a missing file succeeds (deletes are retried after crashes).
    async fn delete(&self, path: &str) -> Result<()>;

    /// Deletes every file under the root, so that nothing of it stays on the store; returns how
    /// many files went. Stores that keep temporary or directory entries `list` does not show
    /// override it to remove those too.
    async fn delete_all(&self) -> Result<u64> {
        let files = self.list("").await?;
        for file in &files {
            self.delete(&file.path).await?;
        }
        Ok(files.len() as u64)
    }

    /// Renames a file, replacing `to` (not atomic on object stores: copy then delete).
    async fn rename(&self, from: &str, to: &str) -> Result<()>;

    /// Copies a file inside the store, server-side where the store can.
    async fn copy(&self, from: &str, to: &str) -> Result<()>;

    /// Where `path` lives physically, if copies from another storage can avoid moving its bytes
    /// through this process (see [`copy_between`]).
    fn locate(&self, _path: &str) -> Option<Location> {
        None
    }

    /// The counters of the local disk cache under this storage, if it has one (wrappers
    /// forward).
    fn disk_cache_stats(&self) -> Option<DiskCacheStats> {
        None
    }

    /// The caller will not read `path` again, though the file stays (another owner deletes it):
    /// local copies of it may go. Wrappers forward.
    fn forget_cached(&self, _path: &str) {}

    /// Whom to tell (the database over this storage, which then fails) when work this storage
    /// runs in the background panics: the disk cache's downloads. Replaces an earlier hook.
    /// Wrappers forward.
    fn on_background_panic(&self, _hook: PanicHook) {}

    /// Copies `from` of another storage to `to` here (which must not exist), inside the
    /// underlying file system when both sit on the same one ([`copy_between`]); wrappers and
    /// stores with their own copy (the Flink proxy) override it.
    async fn copy_in(&self, src: &dyn Storage, from: &str, to: &str) -> Result<Transfer> {
        copy_between(src, from, self.as_dyn(), to).await
    }
}

/// A file being written. Dropping it without `finish` leaves nothing visible.
#[async_trait]
pub trait FileWriter: Send {
    async fn write(&mut self, data: Bytes) -> Result<()>;
    /// Bytes this writer holds in memory (buffers, parts still uploading): the engine charges
    /// them to its memory budget while the file is written. Required of every writer, so a
    /// wrapper cannot forget to pass on what the writer it wraps holds.
    fn held_bytes(&mut self) -> u64;
    /// Publishes the file atomically and returns its size.
    async fn finish(self: Box<Self>) -> Result<u64>;
    async fn abort(self: Box<Self>) -> Result<()>;
}

pub type StorageRef = Arc<dyn Storage>;

/// Prefix of the temporary names stores publish files through: `list` skips them and callers may
/// not use them, so a half-written file can never be mistaken for a published one.
pub(crate) const TEMP_PREFIX: &str = ".tmp-";

/// Checks a path relative to a storage root and returns it without leading or trailing '/':
/// nothing that could leave the root, name a temporary file, or hold one of `forbidden`. `url`
/// names the full path in the error.
pub(crate) fn check_relative_path<'a>(
    path: &'a str,
    allow_root: bool,
    forbidden: &[char],
    url: impl Fn() -> String,
) -> Result<&'a str> {
    let rel = path.trim_matches('/');
    let bad = |why: &str| crate::Error::invalid(format!("bad path {}: {why}", url()));
    if rel.is_empty() && !allow_root {
        return Err(bad("empty file name"));
    }
    for segment in rel.split('/').filter(|_| !rel.is_empty()) {
        match segment {
            "" => return Err(bad("empty path segment")),
            "." | ".." => return Err(bad("relative segments are not allowed")),
            s if s.starts_with(TEMP_PREFIX) => {
                return Err(bad(&format!("names starting {TEMP_PREFIX:?} are reserved")));
            }
            s if s.contains('\0') || (!forbidden.is_empty() && s.contains(forbidden)) => {
                return Err(bad("characters not allowed in a path segment"));
            }
            _ => {}
        }
    }
    Ok(rel)
}

/// `read_range` plus the length check every caller owes: a short read (which wrappers and
/// misbehaving stores can produce) becomes an `Error::Io` instead of silently truncated data.
pub async fn read_range_exact(
    storage: &dyn Storage,
    path: &str,
    range: Range<u64>,
) -> Result<Bytes> {
    let want = range.end.saturating_sub(range.start);
    let data = storage.read_range(path, range.clone()).await?;
    if data.len() as u64 != want {
        return Err(crate::Error::io(
            format!("{}/{path}", storage.url().trim_end_matches('/')),
            format!("short read: asked for {want} bytes at {range:?}, got {}", data.len()),
        ));
    }
    Ok(data)
}
