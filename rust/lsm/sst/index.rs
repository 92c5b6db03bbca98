//! An index block: one entry per block, in file order, holding the block's LAST internal key
//! (user key and sequence) and its handle. Index partitions list data blocks; the top-level index
//! lists index partitions (the last key of a partition is that of its last data block). The full last key is kept rather than a shortened
//! separator because the versions of one user key may span several blocks: a point lookup for
//! (key, snapshot) must land on the first block that can hold that exact version.
//!
//! Raw layout: `(user_key_len: varint, user_key, seq: varint64, offset: varint64,
//! size: varint64)* count: u32 LE`, stored uncompressed with the usual block framing.

use std::cmp::Ordering;

use bytes::Bytes;

use super::coding::{
    Cursor, Decoded, Malformed, put_length_prefixed, put_u32, put_varint64, read_u32_at,
};
use super::framing::BLOCK_TRAILER_LEN;
use super::handle::BlockHandle;
use super::live::LiveBytes;
use crate::lsm::key::{MAX_SEQ, SeqNo, head_of};

#[derive(Default)]
pub(crate) struct IndexBuilder {
    buf: Vec<u8>,
    count: u32,
}

impl IndexBuilder {
    pub(crate) fn add(&mut self, last_user_key: &[u8], last_seq: SeqNo, handle: BlockHandle) {
        put_length_prefixed(&mut self.buf, last_user_key);
        put_varint64(&mut self.buf, last_seq);
        handle.encode_varint(&mut self.buf);
        self.count += 1;
    }

    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        put_u32(&mut self.buf, self.count);
        self.buf
    }
}

/// One block, 20 bytes (a cached partition holds ~130): its last key is `head` (the first 16
/// bytes, in `Index::heads`) followed by `tails[previous entry's tail_end..tail_end]`; offsets
/// from `Index::base`, sizes and tail offsets fit 32 bits (checked). Four-byte fields keep it at
/// 20 bytes; an entry with a `u64` would be padded to 24.
struct IndexEntry {
    seq_low: u32,
    /// The sequence number's high 24 bits, and above them the key's length if at most 16 (a
    /// longer key has a tail, which gives its length).
    seq_high_and_short_len: u32,
    offset: u32,
    size: u32,
    tail_end: u32,
}

const HEAD_LEN: usize = 16;

/// What the last key of entry `i` has beyond its head, and the key's length.
fn tail_and_len<'a>(tails: &'a [u8], entries: &[IndexEntry], i: usize) -> (&'a [u8], usize) {
    let start = i.checked_sub(1).map_or(0, |prev| entries[prev].tail_end as usize);
    let tail = &tails[start..entries[i].tail_end as usize];
    let len = if tail.is_empty() { entries[i].short_len() } else { HEAD_LEN + tail.len() };
    (tail, len)
}

/// Orders a key against `user_key` where their heads are equal, the key given by its tail and
/// length: one of them is then a prefix of the other, or both are 16 bytes long or more and
/// share the first 16.
fn order_past_head(tail: &[u8], len: usize, user_key: &[u8]) -> Ordering {
    let user_tail = user_key.get(HEAD_LEN..).unwrap_or_default();
    tail.cmp(user_tail).then(len.cmp(&user_key.len()))
}

impl IndexEntry {
    fn seq(&self) -> SeqNo {
        u64::from(self.seq_high_and_short_len & 0xff_ffff) << 32 | u64::from(self.seq_low)
    }

    fn short_len(&self) -> usize {
        (self.seq_high_and_short_len >> 24) as usize
    }
}

/// A decoded index: the top level is kept in memory while the table is open, partitions live in
/// the block cache.
pub(crate) struct Index {
    /// `head_of` each entry's key, apart from the entries: a binary search step whose heads
    /// differ (most of them) compares two integers, and a partition's heads fill few cache lines
    /// (16 bytes per block; an entry with its head inline took 64), so the searches of a large
    /// table mostly stay in the CPU's caches. Only the entry found is touched.
    heads: Vec<u128>,
    /// What last keys have beyond their heads, concatenated (nothing for keys of 16 bytes or
    /// less): the heads already hold the rest, and index partitions are most of what the
    /// index/filter room holds (36 bytes per block with 16-byte keys, 56 with whole keys).
    tails: Bytes,
    entries: Vec<IndexEntry>,
    /// File offset of the first block; entries keep theirs relative to it.
    base: u64,
    _live: LiveBytes,
}

impl Index {
    /// Decodes and validates: keys strictly ascending, blocks in file order without overlap and
    /// inside `data_end`, so lookups can trust binary search and handles.
    pub(crate) fn decode(raw: &[u8], data_end: u64) -> Decoded<Index> {
        if raw.len() < 4 {
            return Err(Malformed::new("index block has no entry count"));
        }
        let body = &raw[..raw.len() - 4];
        let count = read_u32_at(raw, raw.len() - 4)? as usize;
        // Each entry takes at least 4 bytes, which bounds the allocation below.
        if count > body.len() / 4 + 1 {
            return Err(Malformed::new(format!(
                "index claims {count} entries in {} bytes",
                body.len()
            )));
        }
        let mut decoder = Decoder::with_capacity(count, body.len());
        let mut c = Cursor::new(body);
        while !c.is_empty() {
            let at = c.pos();
            let key = c.length_prefixed()?;
            let seq = c.varint64()?;
            let handle = BlockHandle::decode_varint(&mut c)?;
            decoder
                .push(key, seq, handle, data_end)
                .map_err(|m| Malformed::new(format!("index entry at {at}: {m}")))?;
        }
        if decoder.entries.len() != count {
            return Err(Malformed::new(format!(
                "index has {} entries, count says {count}",
                decoder.entries.len()
            )));
        }
        Ok(decoder.finish())
    }

    /// An index of one entry (the whole index of a format-1 file, seen as one partition).
    pub(crate) fn single(
        last_user_key: &[u8],
        last_seq: SeqNo,
        handle: BlockHandle,
    ) -> Decoded<Index> {
        let mut decoder = Decoder::with_capacity(1, last_user_key.len());
        decoder
            .push(last_user_key, last_seq, handle, u64::MAX)
            .map_err(|m| Malformed::new(format!("index block {handle:?}: {m}")))?;
        Ok(decoder.finish())
    }

    fn size_of(heads: &[u128], tails: &Bytes, entries: &[IndexEntry]) -> usize {
        std::mem::size_of::<Index>()
            + std::mem::size_of_val(heads)
            + tails.len()
            + std::mem::size_of_val(entries)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn handle(&self, i: usize) -> BlockHandle {
        let e = &self.entries[i];
        BlockHandle::new(self.base + u64::from(e.offset), u64::from(e.size))
    }

    pub(crate) fn handles(&self) -> impl Iterator<Item = BlockHandle> + '_ {
        (0..self.len()).map(|i| self.handle(i))
    }

    /// How the last user key of block `i` orders against `user_key`.
    pub(crate) fn compare_last_key(&self, i: usize, user_key: &[u8]) -> Ordering {
        let head = head_of(user_key);
        self.heads[i].cmp(&head).then_with(|| self.compare_past_head(i, user_key))
    }

    /// `compare_last_key` where the heads are equal.
    fn compare_past_head(&self, i: usize, user_key: &[u8]) -> Ordering {
        let (tail, len) = tail_and_len(&self.tails, &self.entries, i);
        order_past_head(tail, len, user_key)
    }

    /// Index of the first block whose last key is >= (user_key, seq); `len()` if none.
    pub(crate) fn find(&self, user_key: &[u8], seq: SeqNo) -> usize {
        let head = head_of(user_key);
        // The blocks whose heads are below, then those whose heads tie (keys sharing 16 bytes):
        // only these need the full comparison.
        let first_tie = self.heads.partition_point(|&h| h < head);
        if self.heads.get(first_tie) != Some(&head) {
            return first_tie;
        }
        let ties = self.heads[first_tie..].partition_point(|&h| h == head);
        let (mut lo, mut hi) = (first_tie, first_tie + ties);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let order = self
                .compare_past_head(mid, user_key)
                .then_with(|| seq.cmp(&self.entries[mid].seq()));
            if order == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes held in memory.
    pub(crate) fn memory_size(&self) -> usize {
        Self::size_of(&self.heads, &self.tails, &self.entries)
    }
}

/// Builds an `Index` entry by entry, checking each against the one before.
struct Decoder {
    heads: Vec<u128>,
    tails: Vec<u8>,
    entries: Vec<IndexEntry>,
    base: u64,
    next_free: u64,
}

impl Decoder {
    fn with_capacity(count: usize, key_bytes: usize) -> Decoder {
        Decoder {
            heads: Vec::with_capacity(count),
            // Tails take less than the keys: one allocation, trimmed at the end.
            tails: Vec::with_capacity(key_bytes),
            entries: Vec::with_capacity(count),
            base: 0,
            next_free: 0,
        }
    }

    fn push(
        &mut self,
        key: &[u8],
        seq: SeqNo,
        handle: BlockHandle,
        data_end: u64,
    ) -> Result<(), String> {
        let head = head_of(key);
        let tail = key.get(HEAD_LEN..).unwrap_or_default();
        if let Some(&prev_head) = self.heads.last() {
            let prev = self.entries.len() - 1;
            // Unequal heads order the keys as their bytes do; only a tie needs the tails.
            let order = prev_head.cmp(&head).then_with(|| {
                let (prev_tail, prev_len) = tail_and_len(&self.tails, &self.entries, prev);
                order_past_head(prev_tail, prev_len, key)
                    .then_with(|| seq.cmp(&self.entries[prev].seq()))
            });
            if order != Ordering::Less {
                return Err("out of order".into());
            }
        } else {
            self.base = handle.offset;
            self.next_free = handle.offset;
        }
        let bad_handle =
            || format!("bad handle {}+{} (data ends at {data_end})", handle.offset, handle.size);
        let end = handle.end().filter(|&e| e <= data_end && handle.offset >= self.next_free);
        let size = u32::try_from(handle.size).ok().filter(|&s| s as usize >= BLOCK_TRAILER_LEN);
        let (Some(end), Some(size)) = (end, size) else {
            return Err(bad_handle());
        };
        let offset = u32::try_from(handle.offset - self.base)
            .map_err(|_| format!("block {} bytes past the index's first", handle.offset))?;
        if seq > MAX_SEQ {
            return Err(format!("sequence number {seq} out of range"));
        }
        self.next_free = end;
        self.tails.extend_from_slice(tail);
        let tail_end =
            u32::try_from(self.tails.len()).map_err(|_| "keys take more than 4 GiB".to_string())?;
        let short_len = if tail.is_empty() { key.len() as u32 } else { 0 };
        self.heads.push(head);
        self.entries.push(IndexEntry {
            seq_low: seq as u32,
            seq_high_and_short_len: (seq >> 32) as u32 | short_len << 24,
            offset,
            size,
            tail_end,
        });
        Ok(())
    }

    fn finish(mut self) -> Index {
        self.tails.shrink_to_fit();
        let tails = Bytes::from(self.tails);
        let live = LiveBytes::new(Index::size_of(&self.heads, &tails, &self.entries));
        Index { heads: self.heads, tails, entries: self.entries, base: self.base, _live: live }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::key::compare_internal;

    fn sample() -> Vec<u8> {
        let mut b = IndexBuilder::default();
        b.add(b"b", 7, BlockHandle::new(0, 100));
        b.add(b"b", 3, BlockHandle::new(100, 50));
        b.add(b"d", 9, BlockHandle::new(150, 60));
        b.finish()
    }

    #[test]
    fn find_by_internal_key() {
        let index = Index::decode(&sample(), 210).unwrap();
        assert_eq!(index.len(), 3);
        assert_eq!(index.find(b"a", 1), 0);
        assert_eq!(index.find(b"b", 100), 0);
        assert_eq!(index.find(b"b", 7), 0);
        assert_eq!(index.find(b"b", 6), 1);
        assert_eq!(index.find(b"b", 0), 2);
        assert_eq!(index.find(b"c", 0), 2);
        assert_eq!(index.find(b"d", 9), 2);
        assert_eq!(index.find(b"d", 8), 3);
        assert_eq!(index.handle(1), BlockHandle::new(100, 50));
    }

    /// Keys that tie on their 16-byte heads (a long shared prefix, a zero byte against the pad)
    /// are ordered by the full comparison: `find` agrees with a linear search for every probe.
    #[test]
    fn find_agrees_with_a_linear_search_where_heads_tie() {
        let prefix = [b'm'; 16];
        let with = |tail: &[u8]| [&prefix[..], tail].concat();
        let mut entries = vec![
            (b"a".to_vec(), 5),
            (prefix[..15].to_vec(), 4),
            ([&prefix[..15], &[0]].concat(), 9),
            (prefix.to_vec(), 3),
            (with(b"a"), 8),
            (with(b"a"), 2),
            (with(b"b"), 6),
            (with(b"bb"), 1),
            (b"z".to_vec(), 7),
        ];
        let mut b = IndexBuilder::default();
        for (i, (key, seq)) in entries.iter().enumerate() {
            b.add(key, *seq, BlockHandle::new(i as u64 * 10, 10));
        }
        let index = Index::decode(&b.finish(), 1000).unwrap();
        let stored = entries.clone();
        entries.push((with(b"c"), 0));
        entries.push((Vec::new(), 0));
        entries.push((prefix[..3].to_vec(), 0));
        for (key, _) in &entries {
            for seq in [0, 2, 5, 9, SeqNo::MAX] {
                let linear = stored
                    .iter()
                    .position(|(k, s)| compare_internal(k, *s, key, seq) != Ordering::Less)
                    .unwrap_or(stored.len());
                assert_eq!(index.find(key, seq), linear, "{key:?} @ {seq}");
                for (i, (k, _)) in stored.iter().enumerate() {
                    assert_eq!(index.compare_last_key(i, key), k.as_slice().cmp(key));
                }
            }
        }
    }

    /// With 16-byte keys an entry takes its head and 20 bytes: the tails are empty.
    #[test]
    fn entries_of_short_keys_take_36_bytes() {
        let mut b = IndexBuilder::default();
        for i in 0..1000u64 {
            b.add(format!("k{i:015}").as_bytes(), i, BlockHandle::new(i * 100, 100));
        }
        let index = Index::decode(&b.finish(), 1 << 20).unwrap();
        assert_eq!(index.memory_size() - std::mem::size_of::<Index>(), 1000 * 36);
        assert_eq!(index.handle(999), BlockHandle::new(99_900, 100));
        assert_eq!(index.find(b"k000000000000500", 500), 500);
    }

    #[test]
    fn bad_indexes_are_rejected() {
        let good = sample();
        // A handle past the data region.
        assert!(Index::decode(&good, 200).is_err());
        let mut b = IndexBuilder::default();
        b.add(b"b", 3, BlockHandle::new(0, 100));
        b.add(b"b", 7, BlockHandle::new(100, 50));
        assert!(Index::decode(&b.finish(), 1000).is_err(), "keys out of order");
        let mut b = IndexBuilder::default();
        b.add(b"a", 3, BlockHandle::new(0, 100));
        b.add(b"b", 7, BlockHandle::new(50, 50));
        assert!(Index::decode(&b.finish(), 1000).is_err(), "overlapping blocks");
        let mut b = IndexBuilder::default();
        b.add(b"a", 3, BlockHandle::new(u64::MAX, 100));
        assert!(Index::decode(&b.finish(), 1000).is_err(), "overflowing handle");
        // Entries keep block sizes in 32 bits: a larger block is refused, not truncated.
        let mut b = IndexBuilder::default();
        b.add(b"a", 3, BlockHandle::new(0, 1 << 32));
        assert!(Index::decode(&b.finish(), 1 << 33).is_err(), "block of 4 GiB");
        let mut b = IndexBuilder::default();
        b.add(b"a", 3, BlockHandle::new(0, (1 << 32) - 1));
        let index = Index::decode(&b.finish(), 1 << 33).unwrap();
        assert_eq!(index.handle(0), BlockHandle::new(0, (1 << 32) - 1));
        for len in 0..good.len() {
            assert!(Index::decode(&good[..len], 210).is_err());
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            let _ = Index::decode(&bad, 210);
        }
    }
}
