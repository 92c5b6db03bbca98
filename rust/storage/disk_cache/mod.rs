//! A local disk cache under the memory block cache (FLIP-429's hybrid cache, what Flink's ForSt
//! calls its file cache): [`DiskCachedStorage`] wraps the remote storage of a database and keeps
//! whole SST files in a local directory, so block-cache misses become local reads.
//!
//! - **Whole files**, as Flink's ForSt's `FileBasedCache` does: SSTs are immutable, so a file is
//!   cached once and never invalidated except by its deletion, an entry is one local file, and
//!   the index is one map of a few hundred to a few thousand files. Block or range granularity
//!   would need an index per block and partial-file bookkeeping, for a hit rate the block cache
//!   above already gives on hot blocks. Not `foyer`: its hybrid cache is a key-value cache over
//!   its own block device format (whole files would be huge values, ranged reads of them are not
//!   its API), it runs its own runtime and flushers, and its recovery and per-entry checksums do
//!   not let us verify a byte range of a cached file; what we need is an LRU map of files.
//! - **Filled** when a database writes an SST (`put`, or `create` teed into a local file, as
//!   Flink's ForSt's `CachedDataOutputStream`), and by a background download of a file read
//!   remotely [`FILL_AFTER_MISSES`](cache::FILL_AFTER_MISSES) times (files restored or evicted
//!   earlier become local again without paying for files read once).
//! - **Bounded**: `size_limit` bytes on disk, and `reserve` bytes left free on the cache's file
//!   system (checked when an entry is added); least recently used entries go first.
//! - **Checksummed**: crc32c per 16 KiB chunk, verified on every read; a damaged entry is
//!   counted, removed, read from the remote file instead and downloaded again.
//! - **Deleted** with its remote file (`delete`, `rename`, `copy` over it, `delete_all`).
//! - **Warm after a restart**: entries carry their key, so the index is rebuilt from the directory
//!   at the first open ([`DiskCache::open`]); entries failing their checks are deleted.
//! - **Never fails a read**: an entry that cannot be read (the directory deleted under a running
//!   database) is forgotten and the remote file is read; the directory is recreated for new ones.
//!
//! One cache per directory and process, shared by all databases opened with it (their keys are
//! storage url + path), like the one cache per task manager of Flink's ForSt.

mod cache;
mod entry;
mod space;
mod storage;

use std::path::PathBuf;

pub use cache::DiskCache;
pub use storage::DiskCachedStorage;

/// Where the cache lives and how big it may grow (Flink's `state.backend.forst.cache.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskCacheOptions {
    pub dir: PathBuf,
    /// Most bytes the entries may take on disk; 0: no size limit.
    pub size_limit: u64,
    /// Bytes to leave free on the cache's file system; 0: none.
    pub reserve: u64,
}

/// Counters of a [`DiskCache`] since it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskCacheStats {
    /// Reads that found their file in the cache (a damaged or lost entry then reads remotely).
    pub hits: u64,
    /// Reads of cacheable files the cache did not hold.
    pub misses: u64,
    /// Entries added (written files and downloads).
    pub inserts: u64,
    /// Files downloaded into the cache after remote reads (Flink's ForSt: `lru.loadback`).
    pub downloads: u64,
    pub evictions: u64,
    /// Files not cached because they did not fit.
    pub rejected: u64,
    /// Entries that failed a checksum (then read remotely and replaced).
    pub corrupt: u64,
    /// Entries whose local file was gone or unreadable (then read remotely).
    pub lost: u64,
    pub entries: u64,
    pub used_bytes: u64,
}
