//! The memtable: an arena skiplist of internal keys with their values inline
//! (`memtable_skiplist`), plus the range tombstones written since the last freeze (fragmented,
//! see `memtable_tombstones`). A frozen memtable is never written again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use bytes::Bytes;

use crate::Result;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{MAX_SEQ, SeqNo, ValueKind, pack_trailer, unpack_trailer};
use crate::lsm::locks::Recover;
use crate::lsm::memtable_filter::KeyFilter;
use crate::lsm::memtable_skiplist::{Cursor, Entry, SkipList};
use crate::lsm::memtable_tombstones::MemTombstones;
use crate::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use crate::lsm::version::Version;

/// Heap of one range delete beyond its bounds' bytes: its fragment in the tree map with the
/// map's node and the allocator's rounding, and its prefix's hash (`TombstonePrefixes`).
const TOMBSTONE_OVERHEAD: u64 = 192;

/// Filter bits per byte of memtable: 1 in 8, about 10 bits per key for entries of 80 bytes
/// (Flink's small values) and more for larger ones; 1/64 of the memtable's memory.
const FILTER_BYTES_PER_BIT: u64 = 8;

pub struct MemTable {
    list: Arc<SkipList>,
    /// Made by the first insert, so that an empty memtable holds nothing.
    filter: OnceLock<KeyFilter>,
    capacity_bytes: u64,
    /// What the range deletes take (the skiplist counts its own arena).
    tombstone_bytes: AtomicU64,
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
    /// A memtable that freezes at about `capacity_bytes` (sizes its key filter).
    pub fn new(capacity_bytes: u64) -> Self {
        MemTable {
            list: Arc::default(),
            filter: OnceLock::new(),
            capacity_bytes,
            tombstone_bytes: AtomicU64::default(),
            tombstones: RwLock::default(),
            has_tombstones: AtomicBool::default(),
            frozen_tombstones: OnceLock::new(),
            flushed_into: OnceLock::new(),
        }
    }

    /// Adds a version, copying its bytes. Only one writer at a time gets through (the skiplist
    /// has a lock for it); the DB's write lock already orders them.
    pub fn insert(&self, key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        let filter = self
            .filter
            .get_or_init(|| KeyFilter::with_bits(self.capacity_bytes / FILTER_BYTES_PER_BIT));
        filter.add(key);
        self.list.insert(key, pack_trailer(seq, kind), value);
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
        let fragments = self.tombstones.write().recover().add(tombstone) as u64;
        // Each touched fragment may have gained a copy of a bound and a sequence number.
        let bytes = bounds + TOMBSTONE_OVERHEAD + fragments * 16;
        self.tombstone_bytes.fetch_add(bytes, Ordering::Relaxed);
        if fragments > 0 {
            self.has_tombstones.store(true, Ordering::Release);
        }
    }

    /// Highest sequence number at or below `snapshot` of a range delete covering `key`.
    pub fn covering_seq(&self, key: &[u8], snapshot: SeqNo) -> SeqNo {
        if !self.has_tombstones.load(Ordering::Acquire) {
            return 0;
        }
        self.tombstones.read().recover().covering_seq(key, snapshot)
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
        self.tombstones.read().recover().view(lower, Some(upper), snapshot)
    }

    /// Every range delete of a frozen memtable (only frozen: the list is built once and kept).
    pub fn frozen_tombstones(&self) -> &Arc<FragmentedTombstones> {
        self.frozen_tombstones.get_or_init(|| {
            let all = self.tombstones.read().recover().view(&[], None, MAX_SEQ);
            Arc::new(all)
        })
    }

    /// Heap the memtable holds: the skiplist's arena, the key filter and the range deletes.
    pub fn approximate_bytes(&self) -> u64 {
        self.list.allocated_bytes()
            + self.filter.get().map_or(0, KeyFilter::memory_bytes)
            + self.tombstone_bytes.load(Ordering::Relaxed)
    }

    /// Entries (versions of keys), range deletes not counted.
    pub fn entries(&self) -> u64 {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && !self.has_tombstones.load(Ordering::Acquire)
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
        // No filter yet: nothing was inserted before the reader's snapshot.
        if !self.filter.get().is_some_and(|filter| filter.may_contain(key)) {
            return false;
        }
        // The newest version a reader at `snapshot` may see sorts first from here.
        for entry in self.list.range_from(key, pack_trailer(snapshot, ValueKind::Merge)) {
            if entry.key() != key {
                break;
            }
            let (seq, kind) = unpack(entry.trailer());
            if visit(seq, kind, Bytes::copy_from_slice(entry.value())) {
                return true;
            }
            if kind != ValueKind::Merge {
                break;
            }
        }
        false
    }

    pub fn iter(&self) -> MemTableIterator {
        MemTableIterator { cursor: Cursor::new(self.list.clone()) }
    }
}

fn unpack(trailer: u64) -> (SeqNo, ValueKind) {
    unpack_trailer(trailer).expect("the memtable stores only valid trailers")
}

/// Walks a memtable in internal order. It keeps the skiplist alive and sees entries written
/// after it was positioned once it reaches them.
pub struct MemTableIterator {
    cursor: Cursor,
}

impl MemTableIterator {
    fn current(&self) -> Entry<'_> {
        self.cursor.entry().expect("iterator not valid")
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.cursor.valid()
    }

    fn key(&self) -> &[u8] {
        self.current().key()
    }

    fn seq(&self) -> SeqNo {
        unpack(self.current().trailer()).0
    }

    fn kind(&self) -> ValueKind {
        unpack(self.current().trailer()).1
    }

    fn value(&self) -> &[u8] {
        self.current().value()
    }

    fn next(&mut self) -> Result<()> {
        self.cursor.next();
        Ok(())
    }

    fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        self.cursor.seek(user_key, u64::MAX);
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
    fn the_iterator_walks_every_version_in_internal_order() {
        let table = Arc::new(MemTable::new(1 << 20));
        let mut expected = Vec::new();
        for i in 0..1000u32 {
            let key = format!("k{i:05}").into_bytes();
            // Three versions of every seventh key: newest first in internal order.
            let versions: &[SeqNo] = if i % 7 == 0 { &[30, 20, 10] } else { &[5] };
            for &seq in versions {
                table.insert(&key, seq + u64::from(i) * 100, ValueKind::Put, &[]);
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
    fn the_iterator_sees_entries_written_after_its_seek() {
        let table = Arc::new(MemTable::new(1 << 20));
        for i in 0..10u8 {
            table.insert(&[b'a', i], 1, ValueKind::Put, &[]);
        }
        let mut it = table.iter();
        it.seek(b"a").unwrap();
        table.insert(b"b", 2, ValueKind::Put, &[]);
        let keys: Vec<_> = walk(&mut it).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), 11);
        assert_eq!(keys.last().unwrap(), b"b");
    }
}
