//! Copying a file from one storage to another (a DB directory to a checkpoint directory and back).
//! FLIP-428's point is that both sit on the same DFS, so the bytes should stay there: a hard link
//! on a local file system, a server-side copy on an object store. Streaming through this process
//! is the fallback, and it is counted so benchmarks can show when it happened.

use std::path::PathBuf;
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt};

use super::object_store::map_store_error;
use super::{Storage, WriteMode};
use crate::{Error, Result};

/// Where a file physically lives, for storages that can copy without moving bytes through us.
pub enum Location {
    /// An absolute path on this machine's file system.
    LocalFile(PathBuf),
    /// An object in a store; two locations share a store when their `store_id`s are equal.
    Object { store: Arc<dyn ObjectStore>, store_id: String, path: object_store::path::Path },
    /// A file on a Flink file system, by full URI (the proxy storage copies these itself).
    FlinkFile(String),
}

/// How a copy was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// Inside the storage: hard link, kernel copy or server-side copy.
    InStorage,
    /// Read and written by this process; carries the byte count.
    Streamed(u64),
}

impl Transfer {
    pub fn streamed_bytes(self) -> u64 {
        match self {
            Transfer::InStorage => 0,
            Transfer::Streamed(n) => n,
        }
    }
}

/// Chunk size of streamed copies: big enough for DFS throughput, small enough to bound memory.
const STREAM_CHUNK: u64 = 8 << 20;

/// Copies `src`/`from` to `dst`/`to`; `to` must not exist yet. Used by [`Storage::copy_in`]'s
/// default, so wrappers (fault injection, latency) can intercept it.
pub async fn copy_between(
    src: &dyn Storage,
    from: &str,
    dst: &dyn Storage,
    to: &str,
) -> Result<Transfer> {
    match (src.locate(from), dst.locate(to)) {
        (Some(Location::LocalFile(a)), Some(Location::LocalFile(b))) => {
            // On the blocking pool: concurrent copies then share directory syncs.
            let linked = tokio::task::spawn_blocking(move || link_or_copy_local(&a, &b)).await;
            let linked = linked.unwrap_or_else(|e| Err(std::io::Error::other(e)));
            linked.map_err(|e| {
                Error::from_io(
                    format!("{}/{from}", src.url()),
                    format!("cannot copy to {}/{to}", dst.url()),
                    e,
                )
            })?;
            Ok(Transfer::InStorage)
        }
        (
            Some(Location::Object { store, store_id: a, path: from_path }),
            Some(Location::Object { store_id: b, path: to_path, .. }),
        ) if a == b => {
            store.copy(&from_path, &to_path).await.map_err(|e| {
                map_store_error(
                    format!("{}/{from}", src.url()),
                    &format!("server-side copy to {}/{to}", dst.url()),
                    e,
                )
            })?;
            Ok(Transfer::InStorage)
        }
        _ => stream(src, from, dst, to).await,
    }
}

/// Hard link (same file system) or else a kernel-side copy; durable before it returns.
fn link_or_copy_local(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if std::fs::hard_link(from, to).is_err() {
        // Another device (EXDEV) or a file system without links: copy, then make it durable.
        std::fs::copy(from, to)?;
        std::fs::File::open(to)?.sync_all()?;
    }
    if let Some(parent) = to.parent() {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(())
}

async fn stream(src: &dyn Storage, from: &str, dst: &dyn Storage, to: &str) -> Result<Transfer> {
    let size = src.size(from).await?;
    if size <= STREAM_CHUNK {
        let data = src.read(from).await?;
        let len = data.len() as u64;
        dst.put(to, data, WriteMode::CreateNew).await?;
        return Ok(Transfer::Streamed(len));
    }
    let mut writer = dst.create(to).await?;
    let mut offset = 0;
    while offset < size {
        let end = (offset + STREAM_CHUNK).min(size);
        match super::read_range_exact(src, from, offset..end).await {
            Ok(chunk) => writer.write(chunk).await?,
            Err(e) => {
                let _ = writer.abort().await;
                return Err(e);
            }
        }
        offset = end;
    }
    writer.finish().await?;
    Ok(Transfer::Streamed(size))
}
