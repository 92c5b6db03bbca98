//! Decoder and cursor for one data block; see the parent module for the layout.
//!
//! `Block::decode` checks the restart array once; entries are checked as they are parsed, so a
//! malformed entry surfaces as `Malformed` from the iterator instead of a panic.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use super::TRAILER_LEN;
use crate::lsm::key::{SeqNo, ValueKind, compare_internal, unpack_trailer};
use crate::lsm::sst::coding::{Cursor, Decoded, Malformed, read_u32_at, read_u64_at};

/// A decoded (checksum-verified, decompressed) data block, as held by the block cache.
pub struct Block {
    data: Bytes,
    /// Offset of the restart array; entries occupy `data[..restarts_at]`.
    restarts_at: usize,
    num_restarts: usize,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("len", &self.data.len())
            .field("restarts", &self.num_restarts)
            .finish()
    }
}

impl Block {
    pub(crate) fn decode(data: Bytes) -> Decoded<Block> {
        if data.len() < 4 {
            return Err(Malformed::new(format!(
                "block of {} bytes has no restart count",
                data.len()
            )));
        }
        let num_restarts = read_u32_at(&data, data.len() - 4)? as usize;
        let restarts_at = num_restarts
            .checked_mul(4)
            .and_then(|n| (data.len() - 4).checked_sub(n))
            .ok_or_else(|| {
                Malformed::new(format!(
                    "{num_restarts} restart points do not fit a {}-byte block",
                    data.len()
                ))
            })?;
        if (restarts_at == 0) != (num_restarts == 0) {
            return Err(Malformed::new(format!(
                "{num_restarts} restart points for {restarts_at} bytes of entries"
            )));
        }
        // Restart points must start at 0 and ascend inside the entry area; the seek's binary
        // search relies on it.
        let mut prev = None;
        for i in 0..num_restarts {
            let r = read_u32_at(&data, restarts_at + 4 * i)? as usize;
            let ok = match prev {
                None => r == 0,
                Some(p) => r > p && r < restarts_at,
            };
            if !ok {
                return Err(Malformed::new(format!("restart point {i} at {r} out of order")));
            }
            prev = Some(r);
        }
        Ok(Block { data, restarts_at, num_restarts })
    }

    /// Bytes this block pins in memory, for cache weighing.
    pub(crate) fn memory_size(&self) -> usize {
        self.data.len() + std::mem::size_of::<Block>()
    }

    fn restart(&self, i: usize) -> Decoded<usize> {
        Ok(read_u32_at(&self.data, self.restarts_at + 4 * i)? as usize)
    }

    /// Internal key stored whole at restart point `i`.
    fn restart_key(&self, i: usize) -> Decoded<(&[u8], SeqNo)> {
        let offset = self.restart(i)?;
        let mut c = Cursor::at(&self.data[..self.restarts_at], offset);
        let shared = c.varint32()?;
        let unshared = c.varint32()? as usize;
        let _value_len = c.varint32()?;
        if shared != 0 {
            return Err(Malformed::new(format!("restart entry at {offset} shares {shared} bytes")));
        }
        let key = c.bytes(unshared)?;
        let (user_key, seq, _) = split_internal_key(key, offset)?;
        Ok((user_key, seq))
    }
}

fn split_internal_key(key: &[u8], offset: usize) -> Decoded<(&[u8], SeqNo, ValueKind)> {
    let Some(user_len) = key.len().checked_sub(TRAILER_LEN) else {
        return Err(Malformed::new(format!(
            "entry at {offset} has a {}-byte key, shorter than its trailer",
            key.len()
        )));
    };
    let trailer = read_u64_at(key, user_len)?;
    let (seq, kind) = unpack_trailer(trailer).ok_or_else(|| {
        Malformed::new(format!("entry at {offset} has unknown value kind {}", trailer & 0xff))
    })?;
    Ok((&key[..user_len], seq, kind))
}

/// A cursor over one block. Starts unpositioned; owns its block so table iterators can hold it
/// across calls.
pub(crate) struct BlockIter {
    block: Arc<Block>,
    /// Full internal key of the current entry (prefix compression needs the previous one).
    key: Vec<u8>,
    seq: SeqNo,
    kind: ValueKind,
    value: Range<usize>,
    /// Offset of the entry after the current one.
    next_offset: usize,
    valid: bool,
}

impl BlockIter {
    pub(crate) fn new(block: Arc<Block>) -> Self {
        BlockIter {
            block,
            key: Vec::new(),
            seq: 0,
            kind: ValueKind::Put,
            value: 0..0,
            next_offset: 0,
            valid: false,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    pub(crate) fn user_key(&self) -> &[u8] {
        &self.key[..self.key.len().saturating_sub(TRAILER_LEN)]
    }

    pub(crate) fn seq(&self) -> SeqNo {
        self.seq
    }

    pub(crate) fn kind(&self) -> ValueKind {
        self.kind
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.block.data[self.value.clone()]
    }

    /// The value as a zero-copy slice of the block.
    pub(crate) fn value_bytes(&self) -> Bytes {
        self.block.data.slice(self.value.clone())
    }

    pub(crate) fn seek_to_first(&mut self) -> Decoded<()> {
        self.key.clear();
        self.next_offset = 0;
        self.parse_next()
    }

    pub(crate) fn next(&mut self) -> Decoded<()> {
        if !self.valid {
            return Ok(());
        }
        self.parse_next()
    }

    /// Positions at the first entry >= (user_key, seq) in internal order, or invalid if none.
    pub(crate) fn seek(&mut self, user_key: &[u8], seq: SeqNo) -> Decoded<()> {
        let block = Arc::clone(&self.block);
        if block.num_restarts == 0 {
            self.valid = false;
            return Ok(());
        }
        // Last restart point whose key is < target; the answer lies in its interval or the
        // first entry of the next one.
        let (mut lo, mut hi) = (0, block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let (k, s) = block.restart_key(mid)?;
            if compare_internal(k, s, user_key, seq) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.key.clear();
        self.next_offset = block.restart(lo)?;
        loop {
            self.parse_next()?;
            if !self.valid
                || compare_internal(self.user_key(), self.seq, user_key, seq) != Ordering::Less
            {
                return Ok(());
            }
        }
    }

    fn parse_next(&mut self) -> Decoded<()> {
        self.valid = false;
        let offset = self.next_offset;
        let entries = &self.block.data[..self.block.restarts_at];
        if offset >= entries.len() {
            return Ok(());
        }
        let mut c = Cursor::at(entries, offset);
        let shared = c.varint32()? as usize;
        let unshared = c.varint32()? as usize;
        let value_len = c.varint32()? as usize;
        if shared > self.key.len() {
            return Err(Malformed::new(format!(
                "entry at {offset} shares {shared} bytes of a {}-byte previous key",
                self.key.len()
            )));
        }
        let suffix = c.bytes(unshared)?;
        let value_start = c.pos();
        c.bytes(value_len)?;
        self.key.truncate(shared);
        self.key.extend_from_slice(suffix);
        let (_, seq, kind) = split_internal_key(&self.key, offset)?;
        self.seq = seq;
        self.kind = kind;
        self.value = value_start..value_start + value_len;
        self.next_offset = c.pos();
        self.valid = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::BlockBuilder;
    use super::*;

    fn build(entries: &[(&[u8], SeqNo, ValueKind, &[u8])], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (k, s, kind, v) in entries {
            b.add(k, *s, *kind, v);
        }
        Arc::new(Block::decode(Bytes::from(b.finish())).unwrap())
    }

    fn collect(it: &mut BlockIter) -> Vec<(Vec<u8>, SeqNo, ValueKind, Vec<u8>)> {
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.user_key().to_vec(), it.seq(), it.kind(), it.value().to_vec()));
            it.next().unwrap();
        }
        out
    }

    fn sample() -> Vec<(Vec<u8>, SeqNo, ValueKind, Vec<u8>)> {
        let mut v = Vec::new();
        for i in 0..100u32 {
            let key = format!("key{:05}", i * 2).into_bytes();
            // Three versions per key, newest first; one key equal to the previous key's prefix.
            for (j, seq) in [300u64, 200, 100].iter().enumerate() {
                let kind = [ValueKind::Merge, ValueKind::Put, ValueKind::Delete][j];
                v.push((key.clone(), seq + i as u64, kind, format!("v{i}-{j}").into_bytes()));
            }
        }
        v.insert(0, (b"ke".to_vec(), 5, ValueKind::Put, Vec::new()));
        v.insert(0, (b"".to_vec(), 5, ValueKind::Put, b"empty key".to_vec()));
        v
    }

    #[test]
    fn roundtrip_and_seek() {
        let entries = sample();
        for interval in [1, 2, 16, 1000] {
            let refs: Vec<_> =
                entries.iter().map(|(k, s, kind, v)| (&k[..], *s, *kind, &v[..])).collect();
            let block = build(&refs, interval);
            let mut it = BlockIter::new(block);
            assert!(!it.valid());
            it.seek_to_first().unwrap();
            assert_eq!(collect(&mut it), entries);

            // Seek to every entry exactly, and between versions.
            for (i, (k, s, _, _)) in entries.iter().enumerate() {
                it.seek(k, *s).unwrap();
                assert_eq!(collect(&mut it), entries[i..], "interval {interval} entry {i}");
                it.seek(k, s + 1).unwrap();
                assert_eq!(it.seq(), *s);
            }
            it.seek(b"key00001", u64::MAX >> 8).unwrap();
            assert_eq!(it.user_key(), b"key00002");
            it.seek(b"zzz", 0).unwrap();
            assert!(!it.valid());
        }
    }

    #[test]
    fn empty_block() {
        let block = build(&[], 16);
        let mut it = BlockIter::new(block);
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.seek(b"a", 1).unwrap();
        assert!(!it.valid());
    }

    #[test]
    fn malformed_blocks_error_without_panic() {
        let entries = sample();
        let refs: Vec<_> =
            entries.iter().map(|(k, s, kind, v)| (&k[..], *s, *kind, &v[..])).collect();
        let mut b = BlockBuilder::new(4);
        for (k, s, kind, v) in &refs {
            b.add(k, *s, *kind, v);
        }
        let good = b.finish();
        // Every single-byte corruption and every truncation must either decode to something
        // or fail cleanly; none may panic.
        let mut failures = 0;
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                if exercise(bad).is_err() {
                    failures += 1;
                }
            }
        }
        assert!(failures > 0);
        for len in 0..good.len() {
            let _ = exercise(good[..len].to_vec());
        }
        assert!(Block::decode(Bytes::from_static(&[1, 0, 0, 0])).is_err());
        assert!(Block::decode(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff])).is_err());
    }

    fn exercise(raw: Vec<u8>) -> Decoded<()> {
        let block = Arc::new(Block::decode(Bytes::from(raw))?);
        let mut it = BlockIter::new(Arc::clone(&block));
        it.seek_to_first()?;
        while it.valid() {
            it.next()?;
        }
        it.seek(b"key00100", 50)?;
        it.seek(b"", 0)?;
        Ok(())
    }
}
