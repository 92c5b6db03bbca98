//! Iterator over a whole table, for user scans (blocks via the cache) and compaction (large
//! sequential reads that bypass the cache).

use std::sync::Arc;

use bytes::Bytes;

use super::block::{Block, BlockIter};
use super::coding::Decoded;
use super::handle::BlockHandle;
use super::table::Table;
use crate::Result;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{MAX_SEQ, SeqNo, ValueKind};
use crate::storage::block_on;

/// Starts unpositioned (`valid() == false`): call `seek_to_first` or `seek` first. After an
/// error the iterator is invalid until the next successful seek.
pub struct TableIterator {
    table: Arc<Table>,
    readahead: usize,
    /// Index of the block `current` iterates.
    block_idx: usize,
    current: Option<BlockIter>,
    /// Readahead mode: the last span read, as (file offset, bytes).
    buffer: Option<(u64, Bytes)>,
}

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>, readahead: usize) -> Self {
        TableIterator { table, readahead, block_idx: 0, current: None, buffer: None }
    }

    /// Positions at the first entry of the table.
    pub fn seek_to_first(&mut self) -> Result<()> {
        let r = self.position(0, None);
        self.invalidate_on_error(r)
    }

    fn invalidate_on_error(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.current = None;
        }
        r
    }

    /// Loads block `idx`, positions in it (at `target` or its first entry) and moves past
    /// exhausted blocks.
    fn position(&mut self, idx: usize, target: Option<(&[u8], SeqNo)>) -> Result<()> {
        self.load(idx)?;
        if let Some(it) = &mut self.current {
            let r = match target {
                Some((key, seq)) => it.seek(key, seq),
                None => it.seek_to_first(),
            };
            self.check(r)?;
        }
        self.skip_exhausted()
    }

    fn skip_exhausted(&mut self) -> Result<()> {
        while let Some(it) = &self.current {
            if it.valid() {
                break;
            }
            self.load(self.block_idx + 1)?;
            if let Some(it) = &mut self.current {
                let r = it.seek_to_first();
                self.check(r)?;
            }
        }
        Ok(())
    }

    fn check(&self, r: Decoded<()>) -> Result<()> {
        r.map_err(|m| self.table.corruption(self.table.index().handle(self.block_idx), m))
    }

    fn load(&mut self, idx: usize) -> Result<()> {
        self.current = None;
        self.block_idx = idx;
        if idx >= self.table.index().len() {
            return Ok(());
        }
        let handle = self.table.index().handle(idx);
        let block = if self.readahead == 0 {
            block_on(self.table.cached_block(handle))?
        } else {
            self.read_ahead(idx, handle)?
        };
        self.current = Some(BlockIter::new(block));
        Ok(())
    }

    /// Serves block `idx` from the readahead buffer, refilling it with one request that spans
    /// as many whole following blocks as fit in `readahead` bytes.
    fn read_ahead(&mut self, idx: usize, handle: BlockHandle) -> Result<Arc<Block>> {
        let end = handle.offset + handle.size;
        let hit = self
            .buffer
            .take()
            .filter(|(start, buf)| handle.offset >= *start && end <= start + buf.len() as u64);
        let (start, buf) = match hit {
            Some(span) => span,
            None => {
                let index = self.table.index();
                let limit = handle.offset.saturating_add(self.readahead as u64);
                let mut span_end = end;
                for j in idx + 1..index.len() {
                    let h = index.handle(j);
                    if h.offset + h.size > limit {
                        break;
                    }
                    span_end = h.offset + h.size;
                }
                debug_assert!(span_end <= self.table.data_end());
                (handle.offset, block_on(self.table.read(handle.offset..span_end))?)
            }
        };
        let from = (handle.offset - start) as usize;
        let stored = buf.slice(from..from + handle.size as usize);
        self.buffer = Some((start, buf));
        self.table.decode_block(handle, &stored)
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(BlockIter::valid)
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], BlockIter::user_key)
    }

    fn seq(&self) -> SeqNo {
        self.current.as_ref().map_or(0, BlockIter::seq)
    }

    fn kind(&self) -> ValueKind {
        self.current.as_ref().map_or(ValueKind::Put, BlockIter::kind)
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], BlockIter::value)
    }

    fn next(&mut self) -> Result<()> {
        let Some(it) = &mut self.current else {
            return Ok(());
        };
        if !it.valid() {
            return Ok(());
        }
        let r = it.next();
        let r = self.check(r).and_then(|()| self.skip_exhausted());
        self.invalidate_on_error(r)
    }

    fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        // (user_key, MAX_SEQ) is the smallest internal key with this user key.
        let idx = self.table.index().find(user_key, MAX_SEQ);
        let r = self.position(idx, Some((user_key, MAX_SEQ)));
        self.invalidate_on_error(r)
    }
}

impl std::fmt::Debug for TableIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIterator")
            .field("table", &self.table.path())
            .field("block", &self.block_idx)
            .field("valid", &self.valid())
            .finish()
    }
}
