//! Writes a whole SST file into memory; the engine stores it with one `Storage::put`.

use std::cmp::Ordering;

use bytes::Bytes;

use super::block::BlockBuilder;
use super::footer::{FOOTER_LEN, FORMAT_VERSION, Footer};
use super::framing::write_block;
use super::handle::BlockHandle;
use super::partitions::PartitionBuilder;
use super::{Compression, TableOptions, TableProperties, properties};
use crate::lsm::key::{MAX_SEQ, SeqNo, ValueKind, compare_internal};
use crate::{Error, Result};

/// Largest key + value accepted; block lengths are u32 on disk.
pub const MAX_ENTRY_BYTES: usize = 1 << 30;
/// Cap on `block_size` so that a block plus one maximal entry stays under 4 GiB.
const MAX_BLOCK_SIZE: usize = 64 << 20;

pub struct TableBuilder {
    options: TableOptions,
    /// The file from offset `drained` on; callers may take finished bytes early (`drain`).
    out: Vec<u8>,
    drained: u64,
    block: BlockBuilder,
    partitions: PartitionBuilder,
    /// Internal key of the last entry added: the next index entry if the block is cut now, and
    /// the reference for the ordering check.
    last_key: Vec<u8>,
    last_seq: SeqNo,
    smallest_key: Bytes,
    min_seq: SeqNo,
    max_seq: SeqNo,
    entries: u64,
    /// First misuse seen by `add`, reported by `finish` (add cannot return errors).
    error: Option<String>,
}

impl TableBuilder {
    pub fn new(mut options: TableOptions) -> Self {
        options.block_size = options.block_size.min(MAX_BLOCK_SIZE);
        TableBuilder {
            block: BlockBuilder::new(options.restart_interval),
            partitions: PartitionBuilder::new(options.bloom_bits_per_key),
            options,
            out: Vec::new(),
            drained: 0,
            last_key: Vec::new(),
            last_seq: 0,
            smallest_key: Bytes::new(),
            min_seq: SeqNo::MAX,
            max_seq: 0,
            entries: 0,
            error: None,
        }
    }

    /// Adds one entry. Entries must come in strictly increasing internal order (user key
    /// ascending, seq descending); a violation is remembered and makes `finish` fail.
    pub fn add(&mut self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Err(message) = self.check(user_key, seq, value) {
            self.error = Some(message);
            return;
        }
        let new_user_key = self.entries == 0 || user_key != self.key_of_last();
        if !self.block.is_empty()
            && self.block.estimated_size() + BlockBuilder::entry_size_hint(user_key, value)
                > self.options.block_size
        {
            self.flush_block();
        }
        self.partitions.add_key(user_key, new_user_key);
        if self.entries == 0 {
            self.smallest_key = Bytes::copy_from_slice(user_key);
        }
        self.block.add(user_key, seq, kind, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(user_key);
        self.last_seq = seq;
        self.min_seq = self.min_seq.min(seq);
        self.max_seq = self.max_seq.max(seq);
        self.entries += 1;
    }

    fn check(&self, user_key: &[u8], seq: SeqNo, value: &[u8]) -> std::result::Result<(), String> {
        if seq > MAX_SEQ {
            return Err(format!("sequence number {seq} exceeds 56 bits"));
        }
        if user_key.len() + value.len() > MAX_ENTRY_BYTES {
            return Err(format!(
                "entry of {} key + {} value bytes exceeds {MAX_ENTRY_BYTES}",
                user_key.len(),
                value.len()
            ));
        }
        if self.entries > 0
            && compare_internal(self.key_of_last(), self.last_seq, user_key, seq) != Ordering::Less
        {
            return Err(format!(
                "entry (key {:?}, seq {seq}) is not after (key {:?}, seq {})",
                Bytes::copy_from_slice(user_key),
                Bytes::copy_from_slice(self.key_of_last()),
                self.last_seq
            ));
        }
        Ok(())
    }

    fn key_of_last(&self) -> &[u8] {
        &self.last_key
    }

    fn flush_block(&mut self) {
        let raw = self.block.finish();
        let offset = self.offset();
        let size = write_block(&mut self.out, &raw, self.options.compression) as u64;
        self.partitions.add_block(&self.last_key, self.last_seq, BlockHandle::new(offset, size));
    }

    /// Approximate size of the finished file, for cutting compaction outputs.
    pub fn estimated_size(&self) -> u64 {
        let pending = self.offset() as usize
            + self.block.estimated_size()
            + self.partitions.estimated_size()
            + 2 * self.last_key.len()
            + 64
            + FOOTER_LEN;
        pending as u64
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// File offset of the next byte written.
    fn offset(&self) -> u64 {
        self.drained + self.out.len() as u64
    }

    /// Bytes the builder holds in memory: finished blocks not taken yet, the open block, and the
    /// index and filter of the whole file (written at its end).
    pub fn held_bytes(&self) -> u64 {
        (self.out.len() + self.block.estimated_size() + self.partitions.estimated_size()) as u64
    }

    /// Bytes of finished blocks not taken yet.
    pub fn buffered(&self) -> usize {
        self.out.len()
    }

    /// Takes the finished blocks written so far (the start of the file, in order), so a writer
    /// can stream a large file instead of holding all of it.
    pub fn drain(&mut self) -> Bytes {
        self.drained += self.out.len() as u64;
        Bytes::from(std::mem::take(&mut self.out))
    }

    /// Writes the remaining blocks and the footer and returns the bytes not drained yet (the
    /// whole file if never drained) and the properties. Fails with `InvalidArgument` if no entry was
    /// added (an empty file has no key range) or if `add` was misused.
    pub fn finish(mut self) -> Result<(Bytes, TableProperties)> {
        if let Some(message) = self.error.take() {
            return Err(Error::invalid(message));
        }
        if self.entries == 0 {
            return Err(Error::invalid("cannot write an SST file without entries"));
        }
        if !self.block.is_empty() {
            self.flush_block();
        }
        let partitions = std::mem::replace(&mut self.partitions, PartitionBuilder::new(0));
        let base = self.drained;
        let blocks = partitions.finish(&self.last_key, self.last_seq, base, &mut self.out);
        let mut props = TableProperties {
            smallest_key: std::mem::take(&mut self.smallest_key),
            largest_key: Bytes::copy_from_slice(&self.last_key),
            min_seq: self.min_seq,
            max_seq: self.max_seq,
            entries: self.entries,
            size: 0,
        };
        let offset = self.offset();
        let size = write_block(&mut self.out, &properties::encode(&props), Compression::None);
        let properties = BlockHandle::new(offset, size as u64);

        let filter = blocks.directory.map(|directory| {
            let offset = self.offset();
            let size = write_block(&mut self.out, &directory, Compression::None);
            BlockHandle::new(offset, size as u64)
        });
        // The top-level index last: the block a footer reader checks first after the footer.
        let offset = self.offset();
        let size = write_block(&mut self.out, &blocks.top, Compression::None);
        let index = BlockHandle::new(offset, size as u64);

        Footer { version: FORMAT_VERSION, index, filter, properties }.encode(&mut self.out);
        props.size = self.offset();
        Ok((Bytes::from(self.out), props))
    }
}

impl std::fmt::Debug for TableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuilder")
            .field("entries", &self.entries)
            .field("estimated_size", &self.estimated_size())
            .finish()
    }
}
