//! The memtable: a lock-free skiplist of internal keys (crossbeam-skiplist), plus the range
//! tombstones written since the last freeze (fragmented, see `memtable_tombstones`). A frozen
//! memtable is never written again.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use bytes::Bytes;
use crossbeam_skiplist::SkipMap;

use crate::Result;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{InternalKey, MAX_SEQ, SeqNo, ValueKind};
use crate::lsm::memtable_tombstones::MemTombstones;
use crate::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use crate::lsm::version::Version;

/// Heap of one skiplist node beyond its key and value bytes: the node with its inline key head
/// and `Bytes` handles (about 112 B), its tower (1.3 links on average) and the allocator's
/// rounding. `tests/memtable_memory.rs` measures it (about 137 B without the rounding).
const ENTRY_OVERHEAD: u64 = 160;
/// Heap of one written batch beyond its keys and values: the shared buffer's header, which its
/// entries all point to.
const BATCH_OVERHEAD: u64 = 32;

#[derive(Default)]
pub struct MemTable {
    map: SkipMap<InternalKey, Bytes>,
    approximate_bytes: AtomicU64,
    tombstones: RwLock<MemTombstones>,
    /// Lets reads of a memtable without range deletes (the common case) skip the lock.
    has_tombstones: AtomicBool,
    /// The tombstones as one immutable list, built on first use once frozen.
    frozen_tombstones: OnceLock<Arc<FragmentedTombstones>>,
    /// The version its flush installed: everything written up to this memtable's last entry and
    /// nothing after (memtables flush in order). A checkpoint waits for it.
    flushed_into: OnceLock<Arc<Version>>,
}

impl MemTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&self, key: Bytes, seq: SeqNo, kind: ValueKind, value: Bytes) {
        let bytes = key.len() as u64 + value.len() as u64 + ENTRY_OVERHEAD;
        self.map.insert(InternalKey::new(key, seq, kind), value);
        self.approximate_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Charges the buffer of one batch, whose keys and values `insert` charged already.
    pub fn charge_batch(&self) {
        self.approximate_bytes.fetch_add(BATCH_OVERHEAD, Ordering::Relaxed);
    }

    /// Records the version that made this memtable's data durable.
    pub(crate) fn set_flushed_into(&self, version: Arc<Version>) {
        let _ = self.flushed_into.set(version);
    }

    pub(crate) fn flushed_into(&self) -> Option<&Arc<Version>> {
        self.flushed_into.get()
    }

    /// Adds a range delete; its sequence number must be the highest in this memtable so far.
    pub fn add_tombstone(&self, tombstone: RangeTombstone) {
        let bounds = (tombstone.start.len() + tombstone.end.len()) as u64;
        let fragments = self.tombstones.write().unwrap().add(tombstone) as u64;
        // Each touched fragment may have gained a copy of a bound and a sequence number.
        let bytes = bounds + ENTRY_OVERHEAD + fragments * 16;
        self.approximate_bytes.fetch_add(bytes, Ordering::Relaxed);
        if fragments > 0 {
            self.has_tombstones.store(true, Ordering::Release);
        }
    }

    /// Highest sequence number at or below `snapshot` of a range delete covering `key`.
    pub fn covering_seq(&self, key: &[u8], snapshot: SeqNo) -> SeqNo {
        if !self.has_tombstones.load(Ordering::Acquire) {
            return 0;
        }
        self.tombstones.read().unwrap().covering_seq(key, snapshot)
    }

    /// The range deletes over [lower, upper) visible at `snapshot`: what an iterator of the
    /// active memtable needs, copied once (writers keep adding to the memtable).
    pub fn tombstones_in(
        &self,
        lower: &[u8],
        upper: &[u8],
        snapshot: SeqNo,
    ) -> FragmentedTombstones {
        if !self.has_tombstones.load(Ordering::Acquire) {
            return FragmentedTombstones::default();
        }
        self.tombstones.read().unwrap().view(lower, Some(upper), snapshot)
    }

    /// Every range delete of a frozen memtable (only frozen: the list is built once and kept).
    pub fn frozen_tombstones(&self) -> &Arc<FragmentedTombstones> {
        self.frozen_tombstones.get_or_init(|| {
            let all = self.tombstones.read().unwrap().view(&[], None, MAX_SEQ);
            Arc::new(all)
        })
    }

    pub fn approximate_bytes(&self) -> u64 {
        self.approximate_bytes.load(Ordering::Relaxed)
    }

    /// Entries (versions of keys), range deletes not counted.
    pub fn entries(&self) -> u64 {
        self.map.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && !self.has_tombstones.load(Ordering::Acquire)
    }

    /// Feeds `visit` the versions of `key` visible at `snapshot`, newest first, up to and
    /// including the first Put or Delete (older versions cannot matter), or until `visit`
    /// returns true. Returns true if `visit` did.
    pub fn get(
        &self,
        key: &[u8],
        snapshot: SeqNo,
        mut visit: impl FnMut(SeqNo, ValueKind, Bytes) -> bool,
    ) -> bool {
        // A settled database reads with empty memtables: skip building the search key.
        if self.map.is_empty() {
            return false;
        }
        let start = InternalKey::new(Bytes::copy_from_slice(key), snapshot, ValueKind::Merge);
        for entry in self.map.range(start..) {
            if entry.key().user_key.as_ref() != key {
                break;
            }
            let kind = entry.key().kind;
            if visit(entry.key().seq, kind, entry.value().clone()) {
                return true;
            }
            if kind != ValueKind::Merge {
                break;
            }
        }
        false
    }

    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            table: self.clone(),
            ahead: VecDeque::new(),
            chunk: FIRST_CHUNK,
            exhausted: true,
        }
    }
}

/// Entries a seek reads ahead: a prefix check or a short scan needs a few.
const FIRST_CHUNK: usize = 4;
/// Most entries read ahead at once; chunks double up to this on a long scan.
const MAX_CHUNK: usize = 64;

/// Walks a memtable in internal order. It owns an `Arc<MemTable>` and so cannot hold a cursor
/// borrowed from the skiplist; instead it copies the entries ahead of its position in chunks
/// (each entry a reference count, not a copy of its bytes), so that a scan costs one skiplist
/// search per chunk rather than one per step.
pub struct MemTableIterator {
    table: Arc<MemTable>,
    /// The current entry first, then the ones after it.
    ahead: VecDeque<(InternalKey, Bytes)>,
    chunk: usize,
    /// Nothing lies beyond the last entry of `ahead`.
    exhausted: bool,
}

impl MemTableIterator {
    /// Reads the next chunk from `bound` on into `ahead`.
    fn read_ahead(&mut self, bound: Bound<&InternalKey>) {
        let entries = self.table.map.range((bound, Bound::Unbounded)).take(self.chunk);
        let before = self.ahead.len();
        self.ahead.extend(entries.map(|e| (e.key().clone(), e.value().clone())));
        self.exhausted = self.ahead.len() - before < self.chunk;
    }

    fn current(&self) -> &(InternalKey, Bytes) {
        self.ahead.front().expect("iterator not valid")
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        !self.ahead.is_empty()
    }

    fn key(&self) -> &[u8] {
        &self.current().0.user_key
    }

    fn seq(&self) -> SeqNo {
        self.current().0.seq
    }

    fn kind(&self) -> ValueKind {
        self.current().0.kind
    }

    fn value(&self) -> &[u8] {
        &self.current().1
    }

    fn next(&mut self) -> Result<()> {
        let Some(left) = self.ahead.pop_front() else {
            return Ok(());
        };
        if self.ahead.is_empty() && !self.exhausted {
            self.chunk = (self.chunk * 2).min(MAX_CHUNK);
            self.read_ahead(Bound::Excluded(&left.0));
        }
        Ok(())
    }

    fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        let target = InternalKey::new(Bytes::copy_from_slice(user_key), MAX_SEQ, ValueKind::Merge);
        self.ahead.clear();
        self.chunk = FIRST_CHUNK;
        self.read_ahead(Bound::Included(&target));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(it: &mut MemTableIterator) -> Vec<(Vec<u8>, SeqNo)> {
        let mut seen = Vec::new();
        while it.valid() {
            seen.push((it.key().to_vec(), it.seq()));
            it.next().unwrap();
        }
        seen
    }

    #[test]
    fn the_iterator_reads_ahead_across_chunks_in_internal_order() {
        let table = Arc::new(MemTable::new());
        let mut expected = Vec::new();
        for i in 0..1000u32 {
            let key = format!("k{i:05}").into_bytes();
            // Three versions of every seventh key: newest first in internal order.
            let versions: &[SeqNo] = if i % 7 == 0 { &[30, 20, 10] } else { &[5] };
            for &seq in versions {
                table.insert(
                    Bytes::from(key.clone()),
                    seq + u64::from(i) * 100,
                    ValueKind::Put,
                    Bytes::new(),
                );
                expected.push((key.clone(), seq + u64::from(i) * 100));
            }
        }
        let mut it = table.iter();
        assert!(!it.valid(), "unpositioned until a seek");
        it.seek(b"").unwrap();
        assert_eq!(walk(&mut it), expected);

        it.seek(b"k00700").unwrap();
        let from = expected.iter().position(|(k, _)| k == b"k00700").unwrap();
        assert_eq!(walk(&mut it), expected[from..]);

        it.seek(b"k99999").unwrap();
        assert!(!it.valid());
    }

    #[test]
    fn the_iterator_sees_entries_written_past_its_read_ahead() {
        let table = Arc::new(MemTable::new());
        for i in 0..10u8 {
            table.insert(Bytes::from(vec![b'a', i]), 1, ValueKind::Put, Bytes::new());
        }
        let mut it = table.iter();
        it.seek(b"a").unwrap();
        table.insert(Bytes::from_static(b"b"), 2, ValueKind::Put, Bytes::new());
        let keys: Vec<_> = walk(&mut it).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), 11);
        assert_eq!(keys.last().unwrap(), b"b");
    }
}
