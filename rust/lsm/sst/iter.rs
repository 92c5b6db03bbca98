//! Iterator over a whole table, for user scans (blocks via the cache) and compaction (large
//! sequential reads that bypass the cache).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::block::{Block, BlockIter};
use super::coding::Decoded;
use super::handle::BlockHandle;
use super::table::{BlockPos, IndexRegion, Table};
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{MAX_SEQ, SeqNo, ValueKind};
use crate::storage::{block_on, io_runtime};
use crate::{Error, Result};

/// Starts unpositioned (`valid() == false`): call `seek_to_first` or `seek` first. After an
/// error the iterator is invalid until the next successful seek.
pub struct TableIterator {
    table: Arc<Table>,
    readahead: usize,
    /// The block `current` iterates.
    at: Option<BlockPos>,
    current: Option<BlockIter>,
    /// Readahead mode: the last span read, as (file offset, bytes).
    buffer: Option<(u64, Bytes)>,
    /// Readahead mode: the span after `buffer`, being read in the background while `buffer` is
    /// consumed, so that a compaction on a remote store waits for storage far less than once per
    /// span.
    next: Option<NextSpan>,
    /// Readahead mode: every index partition, read once on first use.
    index_region: Option<IndexRegion>,
    /// Bytes of block, index partition and buffer this iterator holds, as counted in the cache's
    /// pinned gauge.
    pinned: i64,
    /// Bytes of the readahead buffer charged to the cache: they are never in it, so unlike the
    /// blocks they would otherwise sit outside the memory budget.
    charged: u64,
}

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>, readahead: usize) -> Self {
        TableIterator {
            table,
            readahead,
            at: None,
            current: None,
            buffer: None,
            next: None,
            index_region: None,
            pinned: 0,
            charged: 0,
        }
    }

    /// Positions at the first entry of the table.
    pub fn seek_to_first(&mut self) -> Result<()> {
        let r = self
            .load_index_region()
            .and_then(|()| block_on(self.table.first_block(self.index_region.as_ref())))
            .and_then(|at| self.position(at, None));
        self.invalidate_on_error(r)
    }

    /// In readahead mode (a compaction's whole-file pass), reads all index partitions at once.
    fn load_index_region(&mut self) -> Result<()> {
        if self.readahead > 0 && self.index_region.is_none() {
            self.index_region = Some(block_on(self.table.read_index_region())?);
        }
        Ok(())
    }

    fn invalidate_on_error(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.current = None;
            self.set_pinned(0);
        }
        r
    }

    /// Loads the block at `at`, positions in it (at `target` or its first entry) and moves past
    /// exhausted blocks.
    fn position(&mut self, at: Option<BlockPos>, target: Option<(&[u8], SeqNo)>) -> Result<()> {
        self.load(at)?;
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
            let Some(at) = self.at.clone() else { break };
            let next = block_on(self.table.next_block(at, self.index_region.as_ref()))?;
            self.load(next)?;
            if let Some(it) = &mut self.current {
                let r = it.seek_to_first();
                self.check(r)?;
            }
        }
        Ok(())
    }

    fn check(&self, r: Decoded<()>) -> Result<()> {
        let handle = self.at.as_ref().map_or_else(BlockHandle::default, BlockPos::handle);
        r.map_err(|m| self.table.corruption(handle, m))
    }

    fn load(&mut self, at: Option<BlockPos>) -> Result<()> {
        self.current = None;
        self.at = at;
        let Some(at) = self.at.clone() else {
            self.set_pinned(0);
            return Ok(());
        };
        let handle = at.handle();
        let block = if self.readahead == 0 {
            block_on(self.table.cached_block(handle))?
        } else {
            self.read_ahead(handle)?
        };
        let buffered = self.buffer.as_ref().map_or(0, |(_, buf)| buf.len())
            + self.next.as_ref().map_or(0, |next| next.len as usize)
            + self.index_region.as_ref().map_or(0, IndexRegion::len);
        self.set_pinned(block.memory_size() + at.index.memory_size() + buffered);
        self.charge(buffered as u64);
        self.current = Some(BlockIter::new(block));
        Ok(())
    }

    fn charge(&mut self, bytes: u64) {
        if bytes != self.charged {
            self.table.cache().charge_buffer(self.charged, bytes);
            self.charged = bytes;
        }
    }

    fn set_pinned(&mut self, bytes: usize) {
        let bytes = bytes as i64;
        self.table.cache().pin(bytes - self.pinned);
        self.pinned = bytes;
    }

    /// Serves the block `handle` from the readahead buffer. When the buffer does not hold it, the
    /// next span (read in the background) takes over, or failing that one request of `readahead`
    /// bytes from the block on (at least the block, at most up to the end of the data blocks);
    /// then the span after the new buffer starts reading in the background.
    fn read_ahead(&mut self, handle: BlockHandle) -> Result<Arc<Block>> {
        let end = handle.offset + handle.size;
        let holds =
            |start: u64, buf: &Bytes| handle.offset >= start && end <= start + buf.len() as u64;
        let (start, buf) = match self.buffer.take() {
            Some((start, buf)) if holds(start, &buf) => (start, buf),
            previous => {
                let joined = self.join_next(previous, handle.offset)?;
                let (start, buf) = match joined {
                    Some((start, buf)) if holds(start, &buf) => (start, buf),
                    _ => {
                        let span_end = self.span_end(handle.offset).max(end);
                        (handle.offset, block_on(self.table.read(handle.offset..span_end))?)
                    }
                };
                self.start_next(start + buf.len() as u64);
                (start, buf)
            }
        };
        let from = (handle.offset - start) as usize;
        let stored = buf.slice(from..from + handle.size as usize);
        self.buffer = Some((start, buf));
        self.table.decode_block(handle, &stored)
    }

    /// Where a span starting at `from` ends.
    fn span_end(&self, from: u64) -> u64 {
        from.saturating_add(self.readahead as u64).min(self.table.data_end())
    }

    /// The background span, joined onto the tail of `previous` from `from` on when it continues
    /// it (a block the previous span cut starts in its tail). None if there is no such span.
    fn join_next(
        &mut self,
        previous: Option<(u64, Bytes)>,
        from: u64,
    ) -> Result<Option<(u64, Bytes)>> {
        let Some(next) = self.next.take() else { return Ok(None) };
        let tail = match previous {
            Some((start, buf))
                if from >= start
                    && from <= next.start
                    && next.start == start + buf.len() as u64 =>
            {
                buf.slice((from - start) as usize..)
            }
            _ if from == next.start => Bytes::new(),
            _ => {
                next.task.abort();
                return Ok(None);
            }
        };
        let span = block_on(next.task)
            .map_err(|e| Error::io(self.table.path(), format!("readahead task: {e}")))??;
        if tail.is_empty() {
            return Ok(Some((from, span)));
        }
        let mut joined = BytesMut::with_capacity(tail.len() + span.len());
        joined.extend_from_slice(&tail);
        joined.extend_from_slice(&span);
        Ok(Some((from, joined.freeze())))
    }

    /// Starts reading the span from `from` in the background (nothing past the data blocks).
    fn start_next(&mut self, from: u64) {
        let to = self.span_end(from);
        if from >= to {
            return;
        }
        let table = Arc::clone(&self.table);
        let task = io_runtime().spawn(async move { table.read(from..to).await });
        self.next = Some(NextSpan { start: from, len: to - from, task });
    }
}

/// A span being read in the background.
struct NextSpan {
    start: u64,
    len: u64,
    task: tokio::task::JoinHandle<Result<Bytes>>,
}

impl Drop for TableIterator {
    fn drop(&mut self) {
        if let Some(next) = self.next.take() {
            next.task.abort();
        }
        self.set_pinned(0);
        self.charge(0);
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
        let r = self
            .load_index_region()
            .and_then(|()| {
                block_on(self.table.seek_block(user_key, MAX_SEQ, self.index_region.as_ref()))
            })
            .and_then(|at| self.position(at, Some((user_key, MAX_SEQ))));
        self.invalidate_on_error(r)
    }
}

impl std::fmt::Debug for TableIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIterator")
            .field("table", &self.table.path())
            .field("block", &self.at.as_ref().map(|at| (at.partition, at.block)))
            .field("valid", &self.valid())
            .finish()
    }
}
