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
use crate::lsm::key::{SeqNo, compare_internal, head_of};

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

/// One block, 24 bytes (a cached partition holds ~130): its last key is
/// `keys[previous entry's key_end..key_end]`; sizes and key offsets fit 32 bits (checked).
struct IndexEntry {
    seq: SeqNo,
    offset: u64,
    size: u32,
    key_end: u32,
}

/// A decoded index: the top level is kept in memory while the table is open, partitions live in
/// the block cache.
pub(crate) struct Index {
    /// `head_of` each entry's key, apart from the entries: a binary search step whose heads
    /// differ (most of them) compares two integers, and a partition's heads fill few cache lines
    /// (16 bytes per block; an entry with its head inline took 64), so the searches of a large
    /// table mostly stay in the CPU's caches. Only the entry found is touched.
    heads: Vec<u128>,
    /// All last keys, concatenated; a private copy so the index does not pin the read buffer.
    keys: Bytes,
    entries: Vec<IndexEntry>,
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
        // Keys take less than the body: one allocation, trimmed at the end, instead of doubling.
        let mut keys = Vec::with_capacity(body.len());
        let mut heads: Vec<u128> = Vec::with_capacity(count);
        let mut entries: Vec<IndexEntry> = Vec::with_capacity(count);
        let mut c = Cursor::new(body);
        let mut next_free = 0u64;
        let mut prev_key_start = 0;
        while !c.is_empty() {
            let at = c.pos();
            let key = c.length_prefixed()?;
            let seq = c.varint64()?;
            let handle = BlockHandle::decode_varint(&mut c)?;
            let head = head_of(key);
            if let (Some(prev), Some(&prev_head)) = (entries.last(), heads.last()) {
                // Unequal heads order the keys as their bytes do; only a tie needs the bytes.
                let order = prev_head.cmp(&head).then_with(|| {
                    let prev_key = &keys[prev_key_start..prev.key_end as usize];
                    compare_internal(prev_key, prev.seq, key, seq)
                });
                if order != Ordering::Less {
                    return Err(Malformed::new(format!("index entry at {at} out of order")));
                }
            }
            let end = handle.end().filter(|&e| e <= data_end && handle.offset >= next_free);
            let size = u32::try_from(handle.size).ok().filter(|&s| s as usize >= BLOCK_TRAILER_LEN);
            let (Some(end), Some(size)) = (end, size) else {
                return Err(Malformed::new(format!(
                    "index entry at {at} has bad handle {}+{} (data ends at {data_end})",
                    handle.offset, handle.size
                )));
            };
            next_free = end;
            prev_key_start = keys.len();
            keys.extend_from_slice(key);
            let key_end = u32::try_from(keys.len())
                .map_err(|_| Malformed::new("index keys take more than 4 GiB"))?;
            heads.push(head);
            entries.push(IndexEntry { seq, offset: handle.offset, size, key_end });
        }
        if entries.len() != count {
            return Err(Malformed::new(format!(
                "index has {} entries, count says {count}",
                entries.len()
            )));
        }
        keys.shrink_to_fit();
        Ok(Index::with_heads(heads, Bytes::from(keys), entries))
    }

    /// An index of one entry (the whole index of a format-1 file, seen as one partition).
    pub(crate) fn single(
        last_user_key: &[u8],
        last_seq: SeqNo,
        handle: BlockHandle,
    ) -> Decoded<Index> {
        let (Ok(size), Ok(key_end)) =
            (u32::try_from(handle.size), u32::try_from(last_user_key.len()))
        else {
            return Err(Malformed::new(format!("index block of {} bytes", handle.size)));
        };
        let entry = IndexEntry { seq: last_seq, offset: handle.offset, size, key_end };
        let keys = Bytes::copy_from_slice(last_user_key);
        Ok(Self::with_heads(vec![head_of(&keys)], keys, vec![entry]))
    }

    fn with_heads(heads: Vec<u128>, keys: Bytes, entries: Vec<IndexEntry>) -> Index {
        let live = LiveBytes::new(Self::size_of(&heads, &keys, &entries));
        Index { heads, keys, entries, _live: live }
    }

    fn size_of(heads: &[u128], keys: &Bytes, entries: &[IndexEntry]) -> usize {
        std::mem::size_of::<Index>()
            + std::mem::size_of_val(heads)
            + keys.len()
            + std::mem::size_of_val(entries)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn handle(&self, i: usize) -> BlockHandle {
        let e = &self.entries[i];
        BlockHandle::new(e.offset, u64::from(e.size))
    }

    /// The last user key of block `i`.
    pub(crate) fn last_key(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |prev| self.entries[prev].key_end as usize);
        &self.keys[start..self.entries[i].key_end as usize]
    }

    pub(crate) fn handles(&self) -> impl Iterator<Item = BlockHandle> + '_ {
        (0..self.len()).map(|i| self.handle(i))
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
            let e = &self.entries[mid];
            if compare_internal(self.last_key(mid), e.seq, user_key, seq) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes held in memory.
    pub(crate) fn memory_size(&self) -> usize {
        Self::size_of(&self.heads, &self.keys, &self.entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        entries.push((with(b"c"), 0));
        entries.push((Vec::new(), 0));
        for (key, _) in &entries {
            for seq in [0, 2, 5, 9, SeqNo::MAX] {
                let linear = (0..index.len())
                    .find(|&i| {
                        let e = &index.entries[i];
                        compare_internal(index.last_key(i), e.seq, key, seq) != Ordering::Less
                    })
                    .unwrap_or(index.len());
                assert_eq!(index.find(key, seq), linear, "{key:?} @ {seq}");
            }
        }
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
