//! An open SST file: footer, index, filter and properties in memory; data blocks read on demand
//! through the block cache.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::block::{Block, BlockIter};
use super::bloom::Bloom;
use super::coding::{Decoded, Malformed};
use super::footer::{FOOTER_LEN, Footer};
use super::framing::{BLOCK_TRAILER_LEN, read_block};
use super::handle::BlockHandle;
use super::index::Index;
use super::iter::TableIterator;
use super::{TableProperties, properties};
use crate::lsm::cache::BlockCache;
use crate::lsm::key::{MAX_SEQ, SeqNo, ValueKind};
use crate::storage::StorageRef;
use crate::{Error, Result};

/// Bytes read from the end of the file at open. Small files and the meta blocks of most files
/// fit, so opening usually costs one storage request (~1.5 ms each on a DFS).
const TAIL_READ: u64 = 64 << 10;

pub struct Table {
    storage: StorageRef,
    path: String,
    cache: Arc<BlockCache>,
    /// Process-unique id naming this open file in the block cache.
    cache_id: u64,
    index: Index,
    bloom: Option<Bloom>,
    properties: TableProperties,
    /// End of the data-block region (start of the meta blocks).
    data_end: u64,
}

impl Table {
    /// Opens the table written with `size` bytes (as recorded in the manifest).
    pub async fn open(
        storage: StorageRef,
        path: String,
        size: u64,
        cache: Arc<BlockCache>,
    ) -> Result<Table> {
        match Self::open_at_size(storage.clone(), path.clone(), size, cache).await {
            Ok(table) => Ok(table),
            // A file shorter or longer than recorded is damaged, whatever error reading it gave
            // (stores differ: an invalid range, a short read...). Probed on failure only.
            Err(e) => match storage.size(&path).await {
                Ok(actual) if actual != size => Err(Error::corruption(
                    &path,
                    actual,
                    format!("file is {actual} bytes but was written with {size}"),
                )),
                _ => Err(e),
            },
        }
    }

    async fn open_at_size(
        storage: StorageRef,
        path: String,
        size: u64,
        cache: Arc<BlockCache>,
    ) -> Result<Table> {
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &path,
                0,
                format!("file of {size} bytes is smaller than the {FOOTER_LEN}-byte footer"),
            ));
        }
        let tail_start = size - size.min(TAIL_READ);
        let tail = read_exact(&storage, &path, tail_start..size).await?;
        let footer_at = size - FOOTER_LEN as u64;
        let footer = Footer::decode(&tail[tail.len() - FOOTER_LEN..])
            .map_err(|m| Error::corruption(&path, footer_at, m.0))?;

        let metas: Vec<BlockHandle> = [Some(footer.index), footer.filter, Some(footer.properties)]
            .into_iter()
            .flatten()
            .collect();
        for h in &metas {
            if h.size < BLOCK_TRAILER_LEN as u64 || h.end().is_none_or(|end| end > footer_at) {
                return Err(Error::corruption(
                    &path,
                    footer_at,
                    format!(
                        "footer points at block {}+{} outside the {footer_at}-byte body",
                        h.offset, h.size
                    ),
                ));
            }
        }
        // Meta blocks sit between the data blocks and the footer; anything of them the tail
        // missed is fetched with one more request.
        let meta_start = metas.iter().map(|h| h.offset).min().unwrap_or(footer_at);
        let (base, buf) = if meta_start < tail_start {
            let head = read_exact(&storage, &path, meta_start..tail_start).await?;
            let mut joined = BytesMut::with_capacity(head.len() + tail.len());
            joined.extend_from_slice(&head);
            joined.extend_from_slice(&tail);
            (meta_start, joined.freeze())
        } else {
            (tail_start, tail)
        };
        let meta = |h: BlockHandle| MetaBlock { path: &path, buf: &buf, base, handle: h };
        let properties = meta(footer.properties).decode(|raw| properties::decode(raw, size))?;
        let bloom = match footer.filter {
            Some(h) => Some(meta(h).decode(Bloom::decode)?),
            None => None,
        };
        let index = meta(footer.index).decode(|raw| {
            let index = Index::decode(raw, meta_start)?;
            if index.len() == 0 {
                return Err(Malformed::new("index has no data blocks"));
            }
            Ok(index)
        })?;
        Ok(Table {
            storage,
            path,
            cache,
            cache_id: BlockCache::next_table_id(),
            index,
            bloom,
            properties,
            data_end: meta_start,
        })
    }

    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// False only if the bloom filter proves `user_key` absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.bloom.as_ref().is_none_or(|b| b.may_contain(user_key))
    }

    /// Bytes of index and filter held in memory while the table is open.
    pub fn memory_size(&self) -> usize {
        self.index.memory_size() + self.bloom.as_ref().map_or(0, |b| b.memory_size())
    }

    /// Versions of `user_key` with seq <= snapshot, newest first, stopping after (and including)
    /// the first Put or Delete. Empty if none.
    pub async fn get(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
    ) -> Result<Vec<(SeqNo, ValueKind, Bytes)>> {
        let mut found = Vec::new();
        if !self.may_contain(user_key) {
            return Ok(found);
        }
        let mut i = self.index.find(user_key, snapshot);
        let mut first = true;
        // Versions of one key may continue into the following blocks (long merge chains).
        while i < self.index.len() {
            let handle = self.index.handle(i);
            let mut it = BlockIter::new(self.cached_block(handle).await?);
            let positioned = if first { it.seek(user_key, snapshot) } else { it.seek_to_first() };
            positioned.map_err(|m| self.corruption(handle, m))?;
            first = false;
            while it.valid() {
                if it.user_key() != user_key {
                    return Ok(found);
                }
                found.push((it.seq(), it.kind(), it.value_bytes()));
                if it.kind() != ValueKind::Merge {
                    return Ok(found);
                }
                it.next().map_err(|m| self.corruption(handle, m))?;
            }
            i += 1;
        }
        Ok(found)
    }

    /// The smallest user key >= `lower` in the table (one block read at most).
    pub async fn first_key_at_or_after(&self, lower: &[u8]) -> Result<Option<Bytes>> {
        let i = self.index.find(lower, MAX_SEQ);
        if i >= self.index.len() {
            return Ok(None);
        }
        let handle = self.index.handle(i);
        let mut it = BlockIter::new(self.cached_block(handle).await?);
        it.seek(lower, MAX_SEQ).map_err(|m| self.corruption(handle, m))?;
        Ok(it.valid().then(|| Bytes::copy_from_slice(it.user_key())))
    }

    /// The largest user key < `upper` in the table (one block read at most).
    pub async fn last_key_before(&self, upper: &[u8]) -> Result<Option<Bytes>> {
        // Keys below `upper` fill the blocks before the first whose last key reaches it, and
        // maybe the start of that block.
        let i = self.index.find(upper, MAX_SEQ);
        if i < self.index.len() {
            let handle = self.index.handle(i);
            let mut it = BlockIter::new(self.cached_block(handle).await?);
            it.seek_to_first().map_err(|m| self.corruption(handle, m))?;
            let mut last = None;
            while it.valid() && it.user_key() < upper {
                if last.as_deref() != Some(it.user_key()) {
                    last = Some(Bytes::copy_from_slice(it.user_key()));
                }
                it.next().map_err(|m| self.corruption(handle, m))?;
            }
            if last.is_some() {
                return Ok(last);
            }
        }
        Ok(i.checked_sub(1).map(|prev| Bytes::copy_from_slice(self.index.last_key(prev))))
    }

    pub fn iter(self: &Arc<Self>, readahead: usize) -> TableIterator {
        TableIterator::new(Arc::clone(self), readahead)
    }

    pub(crate) fn index(&self) -> &Index {
        &self.index
    }

    pub(crate) fn data_end(&self) -> u64 {
        self.data_end
    }

    pub(crate) fn corruption(&self, handle: BlockHandle, m: Malformed) -> Error {
        Error::corruption(&self.path, handle.offset, m.0)
    }

    /// A data block through the cache; concurrent misses on one block share one read.
    pub(crate) async fn cached_block(&self, handle: BlockHandle) -> Result<Arc<Block>> {
        self.cache
            .get_or_load(self.cache_id, handle.offset, async {
                let stored = self.read(handle.offset..handle.offset + handle.size).await?;
                self.decode_block(handle, &stored)
            })
            .await
    }

    /// Reads exactly `range` of the file.
    pub(crate) async fn read(&self, range: Range<u64>) -> Result<Bytes> {
        read_exact(&self.storage, &self.path, range).await
    }

    pub(crate) fn decode_block(&self, handle: BlockHandle, stored: &Bytes) -> Result<Arc<Block>> {
        read_block(stored)
            .and_then(Block::decode)
            .map(Arc::new)
            .map_err(|m| self.corruption(handle, m))
    }
}

/// A meta block inside the buffer read at open.
struct MetaBlock<'a> {
    path: &'a str,
    buf: &'a Bytes,
    /// File offset of `buf[0]`.
    base: u64,
    handle: BlockHandle,
}

impl MetaBlock<'_> {
    /// Unframes and decodes the block; the caller checked that it lies inside `buf`.
    fn decode<T>(self, decode: impl FnOnce(&[u8]) -> Decoded<T>) -> Result<T> {
        let start = (self.handle.offset - self.base) as usize;
        let stored = self.buf.slice(start..start + self.handle.size as usize);
        read_block(&stored)
            .and_then(|raw| decode(&raw))
            .map_err(|m| Error::corruption(self.path, self.handle.offset, m.0))
    }
}

/// Storage promises exact lengths, but wrappers may inject short reads; trusting one would turn
/// a truncated block into an out-of-range slice.
async fn read_exact(storage: &StorageRef, path: &str, range: Range<u64>) -> Result<Bytes> {
    let want = range.end - range.start;
    let start = range.start;
    let data = storage.read_range(path, range).await?;
    if data.len() as u64 != want {
        return Err(Error::corruption(
            path,
            start,
            format!("read of {want} bytes returned {}", data.len()),
        ));
    }
    Ok(data)
}

impl Drop for Table {
    /// Nobody can ask for this file's blocks again (its cache id dies with it), so free their
    /// cache space now rather than waiting for eviction.
    fn drop(&mut self) {
        for h in self.index.handles() {
            self.cache.evict(self.cache_id, h.offset);
        }
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("cache_id", &self.cache_id)
            .field("blocks", &self.index.len())
            .field("properties", &self.properties)
            .finish()
    }
}
