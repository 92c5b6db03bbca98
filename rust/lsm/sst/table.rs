//! An open SST file: footer, top-level index and properties in memory (charged to the block
//! cache); index partitions, filter partitions and data blocks read on demand through the cache.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::future::try_join_all;

use super::block::{Block, BlockIter};
use super::bloom::Bloom;
use super::coding::{Decoded, Malformed};
use super::footer::{FOOTER_LEN, FORMAT_WHOLE_INDEX, Footer};
use super::framing::{BLOCK_TRAILER_LEN, read_block};
use super::handle::BlockHandle;
use super::index::Index;
use super::iter::TableIterator;
use super::partitions::decode_directory;
use super::room_slots::RoomSlots;
use super::source::TableSource;
use super::{TableProperties, properties};
use crate::lsm::cache::{BlockCache, CachedBlock, Holder};
use crate::lsm::key::{MAX_SEQ, SeqNo, ValueKind};
use crate::storage::StorageRef;
use crate::{Error, Result};

/// Prefetched blocks this close share one read (the bytes between are read and dropped).
const PREFETCH_GAP: u64 = 16 << 10;
/// The most bytes one prefetch read spans.
const PREFETCH_SPAN: u64 = 4 << 20;

/// Bytes read from the end of the file at open. Small files and the meta blocks of most files
/// fit, so opening usually costs one storage request (~1.5 ms each on a DFS).
const TAIL_READ: u64 = 64 << 10;

pub struct Table {
    source: TableSource,
    cache: Arc<BlockCache>,
    /// Process-unique id naming this open file in the block cache.
    cache_id: u64,
    /// One entry per index partition (format 1: one partition, the whole index).
    top: Index,
    /// The filter partition of each index partition; empty without filters.
    filters: Vec<BlockHandle>,
    properties: TableProperties,
    /// End of the data-block region (start of the partitions and meta blocks).
    data_end: u64,
    /// Bytes this reader charges to the cache while open.
    reserved: u64,
    /// The partitions the index/filter room holds, reached without a cache lookup.
    slots: RoomSlots,
}

/// Where a block sits: its index partition (loaded) and its entry in it.
#[derive(Clone)]
pub(crate) struct BlockPos {
    pub partition: usize,
    pub index: Arc<Index>,
    pub block: usize,
}

impl BlockPos {
    pub(crate) fn handle(&self) -> BlockHandle {
        self.index.handle(self.block)
    }
}

/// Every index partition of a table, read in one request (`Table::read_index_region`): a
/// compaction walks them all, so on a remote store one request per file replaces one per
/// partition (about 60 per 32 MiB file, each a round trip the compaction waits for), and the
/// walk leaves the block cache to the reads.
pub(crate) struct IndexRegion {
    /// File offset of `bytes[0]`.
    start: u64,
    bytes: Bytes,
}

impl IndexRegion {
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The stored block `handle`, if the region holds it.
    fn block(&self, handle: BlockHandle) -> Option<Bytes> {
        let from = usize::try_from(handle.offset.checked_sub(self.start)?).ok()?;
        let to = from.checked_add(usize::try_from(handle.size).ok()?)?;
        (to <= self.bytes.len()).then(|| self.bytes.slice(from..to))
    }
}

impl Table {
    /// Opens the table written with `size` bytes (as recorded in the manifest).
    pub async fn open(
        storage: StorageRef,
        path: String,
        size: u64,
        cache: Arc<BlockCache>,
    ) -> Result<Table> {
        Self::open_source(TableSource::new(storage, path), size, cache).await
    }

    /// As `open`, reading through `source` (shared with the database's `TableFile`).
    pub async fn open_source(
        source: TableSource,
        size: u64,
        cache: Arc<BlockCache>,
    ) -> Result<Table> {
        let located = source.get();
        let (storage, path) = (&located.storage, &located.path);
        match Self::open_at_size(source.clone(), size, cache).await {
            Ok(table) => Ok(table),
            // A file shorter or longer than recorded is damaged, whatever error reading it gave
            // (stores differ: an invalid range, a short read...). Probed on failure only.
            Err(e) => match storage.size(path).await {
                Ok(actual) if actual != size => Err(Error::corruption(
                    path,
                    actual,
                    format!("file is {actual} bytes but was written with {size}"),
                )),
                _ => Err(e),
            },
        }
    }

    async fn open_at_size(source: TableSource, size: u64, cache: Arc<BlockCache>) -> Result<Table> {
        let located = source.get();
        let (storage, path) = (&located.storage, located.path.as_str());
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!("file of {size} bytes is smaller than the {FOOTER_LEN}-byte footer"),
            ));
        }
        let tail_start = size - size.min(TAIL_READ);
        let tail = read_exact(storage, path, tail_start..size).await?;
        let footer_at = size - FOOTER_LEN as u64;
        let footer = Footer::decode(&tail[tail.len() - FOOTER_LEN..])
            .map_err(|m| Error::corruption(path, footer_at, m.0))?;

        let metas: Vec<BlockHandle> = [Some(footer.index), footer.filter, Some(footer.properties)]
            .into_iter()
            .flatten()
            .collect();
        for h in &metas {
            if h.size < BLOCK_TRAILER_LEN as u64 || h.end().is_none_or(|end| end > footer_at) {
                return Err(Error::corruption(
                    path,
                    footer_at,
                    format!(
                        "footer points at block {}+{} outside the {footer_at}-byte body",
                        h.offset, h.size
                    ),
                ));
            }
        }
        let meta_start = metas.iter().map(|h| h.offset).min().unwrap_or(footer_at);
        let whole_index = footer.version == FORMAT_WHOLE_INDEX;
        // Format 1 needs only its properties now (its index and filter load through the cache
        // as one partition); format 2 its properties, top-level index and filter directory.
        let needed_start = if whole_index { footer.properties.offset } else { meta_start };
        // Anything of the needed blocks the tail missed is fetched with one more request.
        let (base, buf) = if needed_start < tail_start {
            let head = read_exact(storage, path, needed_start..tail_start).await?;
            let mut joined = BytesMut::with_capacity(head.len() + tail.len());
            joined.extend_from_slice(&head);
            joined.extend_from_slice(&tail);
            (needed_start, joined.freeze())
        } else {
            (tail_start, tail)
        };
        let meta = |h: BlockHandle| MetaBlock { path, buf: &buf, base, handle: h };
        let properties = meta(footer.properties).decode(|raw| properties::decode(raw, size))?;
        if whole_index {
            let top = Index::single(&properties.largest_key, 0, footer.index)
                .map_err(|m| Error::corruption(path, footer_at, m.0))?;
            let filters = footer.filter.into_iter().collect();
            return Ok(Self::new(source, cache, top, filters, properties, meta_start));
        }
        let top = meta(footer.index).decode(|raw| {
            let top = Index::decode(raw, meta_start)?;
            if top.len() == 0 {
                return Err(Malformed::new("index has no partitions"));
            }
            Ok(top)
        })?;
        let filters = match footer.filter {
            Some(h) => meta(h).decode(|raw| decode_directory(raw, top.len(), meta_start))?,
            None => Vec::new(),
        };
        let first_partition = top.handle(0).offset;
        let data_end = filters.first().map_or(first_partition, |f| f.offset.min(first_partition));
        Ok(Self::new(source, cache, top, filters, properties, data_end))
    }

    fn new(
        source: TableSource,
        cache: Arc<BlockCache>,
        top: Index,
        filters: Vec<BlockHandle>,
        properties: TableProperties,
        data_end: u64,
    ) -> Table {
        let reserved = (std::mem::size_of::<Table>()
            + source.get().path.len()
            + top.memory_size()
            + filters.len() * std::mem::size_of::<BlockHandle>()
            + properties.smallest_key.len()
            + properties.largest_key.len()) as u64;
        cache.reserve(reserved);
        let slots = RoomSlots::new(top.len(), Arc::clone(&cache));
        Table {
            source,
            cache,
            cache_id: BlockCache::next_table_id(),
            top,
            filters,
            properties,
            data_end,
            reserved,
            slots,
        }
    }

    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The file's path in its storage (for messages).
    pub fn path(&self) -> String {
        self.source.get().path.clone()
    }

    /// False only if the bloom filter proves `user_key` absent (may load a filter partition).
    #[cfg(test)]
    pub async fn may_contain(&self, user_key: &[u8]) -> Result<bool> {
        match self.partition_of(user_key, MAX_SEQ) {
            Some(p) => self.partition_may_contain(p, user_key).await,
            None => Ok(false),
        }
    }

    #[cfg(test)]
    async fn partition_may_contain(&self, p: usize, user_key: &[u8]) -> Result<bool> {
        match self.filter_partition(p).await? {
            Some(bloom) => Ok(bloom.may_contain(user_key)),
            None => Ok(true),
        }
    }

    /// Bytes the open reader holds in memory (charged to the block cache); index and filter
    /// partitions are in the cache itself.
    pub fn memory_size(&self) -> usize {
        (self.reserved + self.slots.charged_bytes()) as usize
    }

    /// Feeds `visit` the versions of `user_key` with seq <= snapshot, newest first, up to and
    /// including the first Put or Delete, or until `visit` returns true (no older version
    /// matters). Returns true if `visit` did. (Reads go through `read::PartitionMemo`, which does
    /// the same with the batch's partitions at hand.)
    #[cfg(test)]
    pub async fn get(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
        visit: impl FnMut(SeqNo, ValueKind, Bytes) -> bool,
    ) -> Result<bool> {
        let Some(p) = self.partition_of(user_key, snapshot) else {
            return Ok(false);
        };
        if !self.partition_may_contain(p, user_key).await? {
            return Ok(false);
        }
        let index = self.index_partition(p).await?;
        self.get_in_partition(user_key, snapshot, p, index, visit).await
    }

    /// The index partition where `get` looks for (user_key, snapshot); None past the table's end.
    pub(crate) fn partition_of(&self, user_key: &[u8], snapshot: SeqNo) -> Option<usize> {
        Some(self.top.find(user_key, snapshot)).filter(|&p| p < self.top.len())
    }

    /// `get` from index partition `p` on (its filter passed), `index` being that partition.
    pub(crate) async fn get_in_partition(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
        p: usize,
        index: Arc<Index>,
        mut visit: impl FnMut(SeqNo, ValueKind, Bytes) -> bool,
    ) -> Result<bool> {
        let block = index.find(user_key, snapshot);
        let mut pos = self.settle(BlockPos { partition: p, index, block }, None).await?;
        let mut first = true;
        // Versions of one key may continue into the following blocks (long merge chains).
        while let Some(at) = pos {
            let handle = at.handle();
            let mut it = BlockIter::new(self.cached_block(handle).await?);
            let positioned = if first { it.seek(user_key, snapshot) } else { it.seek_to_first() };
            positioned.map_err(|m| self.corruption(handle, m))?;
            first = false;
            while it.valid() {
                if it.user_key() != user_key {
                    return Ok(false);
                }
                let kind = it.kind();
                if visit(it.seq(), kind, it.value_bytes()) {
                    return Ok(true);
                }
                if kind != ValueKind::Merge {
                    return Ok(false);
                }
                it.next().map_err(|m| self.corruption(handle, m))?;
            }
            pos = self.next_block(at, None).await?;
        }
        Ok(false)
    }

    pub fn iter(self: &Arc<Self>, readahead: usize) -> TableIterator {
        TableIterator::new(Arc::clone(self), readahead)
    }

    /// The first block whose last key is >= (user_key, seq), if any. Index partitions come
    /// from `region` if given, else through the cache (so for the other navigation methods).
    pub(crate) async fn seek_block(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        region: Option<&IndexRegion>,
    ) -> Result<Option<BlockPos>> {
        let p = self.top.find(user_key, seq);
        if p >= self.top.len() {
            return Ok(None);
        }
        let index = self.partition_from(p, region).await?;
        let block = index.find(user_key, seq);
        self.settle(BlockPos { partition: p, index, block }, region).await
    }

    /// The data blocks a scan of [start, end) reads first and the cache lacks: the block holding
    /// `start` and the following ones of its index partition up to the one whose last key reaches
    /// `end` (there the scan stops), at most `max_bytes` of them but always one.
    pub(crate) async fn blocks_to_prefetch(
        &self,
        start: &[u8],
        end: &[u8],
        max_bytes: u64,
    ) -> Result<Vec<BlockHandle>> {
        let p = self.top.find(start, MAX_SEQ);
        if p >= self.top.len() {
            return Ok(Vec::new());
        }
        let index = self.index_partition(p).await?;
        let first = index.find(start, MAX_SEQ);
        if first >= index.len() {
            return Ok(Vec::new());
        }
        let span_start = index.handle(first).offset;
        let mut last = first;
        while last + 1 < index.len()
            && index.compare_last_key(last, end).is_lt()
            && index.handle(last + 1).end().unwrap_or(u64::MAX) - span_start <= max_bytes
        {
            last += 1;
        }
        Ok((first..=last)
            .map(|i| index.handle(i))
            .filter(|h| self.cache.peek(self.cache_id, h.offset).is_none())
            .collect())
    }

    /// Loads `blocks` (ascending, distinct) into the cache with as few reads as their layout
    /// allows: blocks at most `PREFETCH_GAP` apart share one read, so the scans of neighbouring
    /// prefixes cost one request per file, and no block is read twice.
    pub(crate) async fn prefetch_blocks(&self, blocks: Vec<BlockHandle>) -> Result<()> {
        let mut spans: Vec<&[BlockHandle]> = Vec::new();
        let mut from = 0;
        for i in 1..=blocks.len() {
            let joins = blocks.get(i).is_some_and(|next| {
                let prev = blocks[i - 1];
                next.offset <= prev.offset + prev.size + PREFETCH_GAP
                    && next.offset + next.size - blocks[from].offset <= PREFETCH_SPAN
            });
            if !joins {
                spans.push(&blocks[from..i]);
                from = i;
            }
        }
        try_join_all(spans.into_iter().map(|span| self.load_span(span))).await?;
        Ok(())
    }

    /// Reads the file from the first to the last of `blocks` (ascending) and caches each.
    async fn load_span(&self, blocks: &[BlockHandle]) -> Result<()> {
        let (Some(first), Some(last)) = (blocks.first(), blocks.last()) else {
            return Ok(());
        };
        let span = self.read(first.offset..last.offset + last.size).await?;
        for &handle in blocks {
            let at = (handle.offset - first.offset) as usize;
            let decoded = read_block(&span.slice(at..at + handle.size as usize))
                .and_then(decode_data_block)
                .map_err(|m| self.corruption(handle, m));
            self.cache.get_or_load(self.cache_id, handle.offset, async { decoded }).await?;
        }
        Ok(())
    }

    /// The block after `at`, crossing into the next partitions.
    pub(crate) async fn next_block(
        &self,
        at: BlockPos,
        region: Option<&IndexRegion>,
    ) -> Result<Option<BlockPos>> {
        self.settle(BlockPos { block: at.block + 1, ..at }, region).await
    }

    /// The block at `at`, or the first block of the following partitions if `at` is past the
    /// end of its partition.
    async fn settle(
        &self,
        mut at: BlockPos,
        region: Option<&IndexRegion>,
    ) -> Result<Option<BlockPos>> {
        while at.block >= at.index.len() {
            let partition = at.partition + 1;
            if partition >= self.top.len() {
                return Ok(None);
            }
            let index = self.partition_from(partition, region).await?;
            at = BlockPos { partition, index, block: 0 };
        }
        Ok(Some(at))
    }

    /// The first block of the table.
    pub(crate) async fn first_block(
        &self,
        region: Option<&IndexRegion>,
    ) -> Result<Option<BlockPos>> {
        let index = self.partition_from(0, region).await?;
        self.settle(BlockPos { partition: 0, index, block: 0 }, region).await
    }

    /// Reads every index partition in one request, from the first partition to the end of the
    /// last. The filter partitions between them come along: more than the index, but together
    /// about 2% of the data bytes a compaction reads anyway.
    pub(crate) async fn read_index_region(&self) -> Result<IndexRegion> {
        let first = self.top.handle(0);
        let last = self.top.handle(self.top.len() - 1);
        let range = first.offset..last.offset + last.size;
        Ok(IndexRegion { start: range.start, bytes: self.read(range).await? })
    }

    /// Index partition `p`, decoded from `region` when it holds it, else through the cache.
    async fn partition_from(&self, p: usize, region: Option<&IndexRegion>) -> Result<Arc<Index>> {
        let handle = self.top.handle(p);
        let Some(stored) = region.and_then(|r| r.block(handle)) else {
            return self.index_partition(p).await;
        };
        read_block(&stored)
            .and_then(|raw| decode_index_partition(&raw, self.data_end))
            .map(Arc::new)
            .map_err(|m| self.corruption(handle, m))
    }

    /// Reads every block of the table from storage (past the cache, so bit rot under a cached
    /// block shows) and checks each one's checksum and structure: filter and index partitions
    /// and data blocks (the footer, properties and top-level index were checked at open).
    /// Returns how many data blocks it checked; the first damaged block fails it, naming the
    /// file and offset.
    pub async fn verify(&self) -> Result<u64> {
        for &handle in &self.filters {
            let stored = self.read(handle.offset..handle.offset + handle.size).await?;
            read_block(&stored).map_err(|m| self.corruption(handle, m))?;
        }
        let mut blocks = 0;
        for p in 0..self.top.len() {
            let handle = self.top.handle(p);
            let stored = self.read(handle.offset..handle.offset + handle.size).await?;
            let index = read_block(&stored)
                .and_then(|raw| decode_index_partition(&raw, self.data_end))
                .map_err(|m| self.corruption(handle, m))?;
            // The partition's data blocks in one read.
            let start = index.handles().map(|h| h.offset).min().unwrap_or(0);
            let end = index.handles().map(|h| h.offset + h.size).max().unwrap_or(0);
            let span = self.read(start..end).await?;
            for block in index.handles() {
                let at = (block.offset - start) as usize;
                let stored = span.slice(at..at + block.size as usize);
                self.decode_block(block, &stored)?;
                blocks += 1;
            }
        }
        Ok(blocks)
    }

    /// Every data block's handle, in file order (loads every index partition).
    #[cfg(test)]
    pub(crate) async fn block_handles(&self) -> Result<Vec<BlockHandle>> {
        let mut handles = Vec::new();
        for p in 0..self.top.len() {
            handles.extend(self.index_partition(p).await?.handles());
        }
        Ok(handles)
    }

    #[cfg(test)]
    pub(crate) fn partitions(&self) -> usize {
        self.top.len()
    }

    pub(crate) fn data_end(&self) -> u64 {
        self.data_end
    }

    pub(crate) fn cache(&self) -> &BlockCache {
        &self.cache
    }

    pub(crate) fn corruption(&self, handle: BlockHandle, m: Malformed) -> Error {
        Error::corruption(&self.source.get().path, handle.offset, m.0)
    }

    /// Index partition `p`: from its slot while the room holds it, else through the cache.
    pub(crate) async fn index_partition(&self, p: usize) -> Result<Arc<Index>> {
        if let Some(index) = self.slots.index(p) {
            self.cache.count_hit();
            return Ok(index);
        }
        let handle = self.top.handle(p);
        let data_end = self.data_end;
        let loaded = self.cached_index_filter(handle, |raw| {
            Ok(CachedBlock::Index(Arc::new(decode_index_partition(&raw, data_end)?)))
        });
        match loaded.await? {
            (CachedBlock::Index(index), holder) => {
                if holder == Holder::Room {
                    self.slots.hold_index(p, &index);
                }
                Ok(index)
            }
            _ => {
                Err(self.corruption(handle, Malformed::new("index partition shares a data offset")))
            }
        }
    }

    /// Filter partition `p` (from its slot while the room holds it, else through the cache);
    /// None if the table has no filters.
    pub(crate) async fn filter_partition(&self, p: usize) -> Result<Option<Arc<Bloom>>> {
        let Some(&handle) = self.filters.get(p) else {
            return Ok(None);
        };
        if let Some(bloom) = self.slots.filter(p) {
            self.cache.count_hit();
            return Ok(Some(bloom));
        }
        let loaded = self.cached_index_filter(handle, |raw| {
            Ok(CachedBlock::Filter(Arc::new(Bloom::decode(raw)?)))
        });
        match loaded.await? {
            (CachedBlock::Filter(bloom), holder) => Ok(Some(self.filter_held_by(p, bloom, holder))),
            _ => Err(self.corruption(handle, Malformed::new("filter partition shares an offset"))),
        }
    }

    /// Prefetches the slot of filter partition `p`: the first step of the way to it, for a read
    /// that takes each step for all the files it will probe, so their misses to memory overlap.
    pub(crate) fn prefetch_filter_slot(&self, p: usize) {
        self.slots.prefetch_slot(p);
    }

    /// The second step, once the slot is in the CPU's caches: the partition's counts, if the
    /// room holds it.
    pub(crate) fn prefetch_filter_counts(&self, p: usize) {
        self.slots.prefetch_filter(p);
    }

    /// Filter partition `p` if it is in memory: `Some(None)` if the table has no filters, None
    /// if the partition is not cached.
    pub(crate) fn cached_filter_partition(&self, p: usize) -> Option<Option<Arc<Bloom>>> {
        let Some(handle) = self.filters.get(p) else {
            return Some(None);
        };
        if let Some(bloom) = self.slots.filter(p) {
            self.cache.count_hit();
            return Some(Some(bloom));
        }
        match self.cache.get_cached(self.cache_id, handle.offset)? {
            (CachedBlock::Filter(bloom), holder) => {
                Some(Some(self.filter_held_by(p, bloom, holder)))
            }
            _ => None,
        }
    }

    /// `bloom`, filter partition `p` just found in `holder`, given a slot if that is the room.
    fn filter_held_by(&self, p: usize, bloom: Arc<Bloom>, holder: Holder) -> Arc<Bloom> {
        if holder == Holder::Room {
            self.slots.hold_filter(p, &bloom);
        }
        bloom
    }

    /// A data block through the cache; concurrent misses on one block share one read.
    pub(crate) async fn cached_block(&self, handle: BlockHandle) -> Result<Arc<Block>> {
        match self.cached(handle, decode_data_block).await? {
            CachedBlock::Data(block) => Ok(block),
            _ => Err(self.corruption(handle, Malformed::new("data block shares a meta offset"))),
        }
    }

    async fn cached(
        &self,
        handle: BlockHandle,
        decode: impl FnOnce(Bytes) -> Decoded<CachedBlock>,
    ) -> Result<CachedBlock> {
        self.cache.get_or_load(self.cache_id, handle.offset, self.load(handle, decode)).await
    }

    /// `cached` for an index or filter partition (see `BlockCache::get_or_load_index_filter`).
    async fn cached_index_filter(
        &self,
        handle: BlockHandle,
        decode: impl FnOnce(Bytes) -> Decoded<CachedBlock>,
    ) -> Result<(CachedBlock, Holder)> {
        let load = self.load(handle, decode);
        self.cache.get_or_load_index_filter(self.cache_id, handle.offset, load).await
    }

    async fn load(
        &self,
        handle: BlockHandle,
        decode: impl FnOnce(Bytes) -> Decoded<CachedBlock>,
    ) -> Result<CachedBlock> {
        let stored = self.read(handle.offset..handle.offset + handle.size).await?;
        read_block(&stored).and_then(decode).map_err(|m| self.corruption(handle, m))
    }

    /// Reads exactly `range` of the file.
    pub(crate) async fn read(&self, range: Range<u64>) -> Result<Bytes> {
        let located = self.source.get();
        read_exact(&located.storage, &located.path, range).await
    }

    pub(crate) fn decode_block(&self, handle: BlockHandle, stored: &Bytes) -> Result<Arc<Block>> {
        read_block(stored)
            .and_then(Block::decode)
            .map(Arc::new)
            .map_err(|m| self.corruption(handle, m))
    }
}

fn decode_index_partition(raw: &[u8], data_end: u64) -> Decoded<Index> {
    let index = Index::decode(raw, data_end)?;
    if index.len() == 0 {
        return Err(Malformed::new("index partition has no data blocks"));
    }
    Ok(index)
}

fn decode_data_block(raw: Bytes) -> Decoded<CachedBlock> {
    Ok(CachedBlock::Data(Arc::new(Block::decode(raw)?)))
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
    /// cache space now rather than waiting for eviction: the partitions, and the data blocks of
    /// the index partitions still cached (others' data blocks age out).
    fn drop(&mut self) {
        for p in 0..self.top.len() {
            let at = self.top.handle(p).offset;
            if let Some(CachedBlock::Index(index)) = self.cache.peek(self.cache_id, at) {
                for h in index.handles() {
                    self.cache.evict(self.cache_id, h.offset);
                }
            }
            self.cache.evict(self.cache_id, at);
        }
        for h in &self.filters {
            self.cache.evict(self.cache_id, h.offset);
        }
        self.cache.release(self.reserved);
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.source.get().path)
            .field("cache_id", &self.cache_id)
            .field("partitions", &self.top.len())
            .field("properties", &self.properties)
            .finish()
    }
}
