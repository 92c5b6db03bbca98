//! Partitioned index and filters (format 2), as RocksDB's partitioned index/filters: the index is
//! cut into partitions of about `PARTITION_BYTES`, each with a bloom filter over the user keys of
//! its data blocks. Only the small top-level index (one entry per partition) stays in memory while
//! a table is open; partitions are loaded through the block cache, so index and filter memory is
//! bounded by the cache whatever the number and size of tables.
//!
//! A user key whose versions span two partitions is in the filter of both, so the filter of the
//! partition a lookup lands on answers for every version the lookup can find there.
//!
//! The filter directory block lists the filter partition of each top-level entry, in order, as
//! fixed 16-byte handles (the footer's filter handle points at it; absent without filters).

use super::Compression;
use super::bloom::BloomBuilder;
use super::coding::{Cursor, Decoded, Malformed};
use super::framing::{BLOCK_TRAILER_LEN, write_block};
use super::handle::BlockHandle;
use super::index::IndexBuilder;
use crate::lsm::key::SeqNo;

/// Target size of an index partition; filter partitions follow from the keys it covers.
const PARTITION_BYTES: usize = 4096;
const DIRECTORY_ENTRY: usize = 16;

struct Partition {
    last_key: Vec<u8>,
    last_seq: SeqNo,
    index: Vec<u8>,
    filter: Option<Vec<u8>>,
}

/// Cuts index and filter partitions while a table is written.
pub(crate) struct PartitionBuilder {
    bits_per_key: usize,
    index: IndexBuilder,
    bloom: Option<BloomBuilder>,
    done: Vec<Partition>,
    done_bytes: usize,
}

/// The blocks `PartitionBuilder::finish` wrote: top-level index and filter directory, raw.
pub(crate) struct PartitionBlocks {
    pub top: Vec<u8>,
    pub directory: Option<Vec<u8>>,
}

impl PartitionBuilder {
    /// `bits_per_key == 0` writes no filters.
    pub(crate) fn new(bits_per_key: usize) -> Self {
        PartitionBuilder {
            bits_per_key,
            index: IndexBuilder::default(),
            bloom: Self::new_bloom(bits_per_key),
            done: Vec::new(),
            done_bytes: 0,
        }
    }

    fn new_bloom(bits_per_key: usize) -> Option<BloomBuilder> {
        (bits_per_key > 0).then(|| BloomBuilder::new(bits_per_key))
    }

    /// Adds the key of an entry to the current partition's filter: every new user key, and the
    /// first key of a partition even if it continues the previous one's.
    pub(crate) fn add_key(&mut self, user_key: &[u8], new_user_key: bool) {
        if let Some(bloom) = &mut self.bloom
            && (new_user_key || bloom.is_empty())
        {
            bloom.add(user_key);
        }
    }

    /// Adds a finished data block; cuts the partition once its index is large enough.
    pub(crate) fn add_block(&mut self, last_key: &[u8], last_seq: SeqNo, handle: BlockHandle) {
        self.index.add(last_key, last_seq, handle);
        if self.index.estimated_size() >= PARTITION_BYTES {
            self.cut(last_key, last_seq);
        }
    }

    fn cut(&mut self, last_key: &[u8], last_seq: SeqNo) {
        let index = std::mem::take(&mut self.index).finish();
        let filter = std::mem::replace(&mut self.bloom, Self::new_bloom(self.bits_per_key))
            .map(|b| b.finish());
        self.done_bytes += index.len() + filter.as_ref().map_or(0, Vec::len) + last_key.len() + 64;
        self.done.push(Partition { last_key: last_key.to_vec(), last_seq, index, filter });
    }

    pub(crate) fn estimated_size(&self) -> usize {
        self.done_bytes
            + self.index.estimated_size()
            + self.bloom.as_ref().map_or(0, BloomBuilder::estimated_size)
    }

    /// Writes the partitions to `out`, which starts at file offset `base` (each filter
    /// partition before its index partition), and returns the top-level index and filter
    /// directory; `last_key`/`last_seq` end the open partition.
    pub(crate) fn finish(
        mut self,
        last_key: &[u8],
        last_seq: SeqNo,
        base: u64,
        out: &mut Vec<u8>,
    ) -> PartitionBlocks {
        if !self.index.is_empty() {
            self.cut(last_key, last_seq);
        }
        let mut top = IndexBuilder::default();
        let mut directory = (self.bits_per_key > 0).then(Vec::new);
        for p in self.done {
            if let (Some(filter), Some(dir)) = (&p.filter, &mut directory) {
                let offset = base + out.len() as u64;
                let size = write_block(out, filter, Compression::None) as u64;
                BlockHandle::new(offset, size).encode_fixed(dir);
            }
            let offset = base + out.len() as u64;
            let size = write_block(out, &p.index, Compression::None) as u64;
            top.add(&p.last_key, p.last_seq, BlockHandle::new(offset, size));
        }
        PartitionBlocks { top: top.finish(), directory }
    }
}

/// Decodes a filter directory of `count` handles, each inside `0..end` and in file order.
pub(crate) fn decode_directory(raw: &[u8], count: usize, end: u64) -> Decoded<Vec<BlockHandle>> {
    if raw.len() != count * DIRECTORY_ENTRY {
        return Err(Malformed::new(format!(
            "filter directory of {} bytes for {count} partitions",
            raw.len()
        )));
    }
    let mut c = Cursor::new(raw);
    let mut handles = Vec::with_capacity(count);
    let mut next_free = 0;
    for i in 0..count {
        let h = BlockHandle::decode_fixed(&mut c)?;
        let inside = h.end().is_some_and(|e| e <= end);
        if h.offset < next_free || h.size < BLOCK_TRAILER_LEN as u64 || !inside {
            return Err(Malformed::new(format!(
                "filter partition {i} has bad handle {}+{} (meta blocks start at {end})",
                h.offset, h.size
            )));
        }
        next_free = h.offset + h.size;
        handles.push(h);
    }
    Ok(handles)
}
