//! Internal keys: a user key (column-family prefixed) plus the sequence number and kind of the
//! write. Order: user key ascending, then newest first (sequence descending), so a seek to
//! (key, snapshot) lands on the newest version a reader may see.

use std::cmp::Ordering;

pub type SeqNo = u64;

/// Largest sequence number; sequence numbers use 56 bits so `seq << 8 | kind` fits a u64.
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    Delete = 0,
    Put = 1,
    Merge = 2,
}

impl ValueKind {
    pub fn from_u8(v: u8) -> Option<ValueKind> {
        match v {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::Merge),
            _ => None,
        }
    }
}

/// `seq << 8 | kind`, the 8-byte trailer stored after every key in memtables and SST blocks.
pub fn pack_trailer(seq: SeqNo, kind: ValueKind) -> u64 {
    (seq << 8) | kind as u64
}

pub fn unpack_trailer(trailer: u64) -> Option<(SeqNo, ValueKind)> {
    ValueKind::from_u8((trailer & 0xff) as u8).map(|k| (trailer >> 8, k))
}

/// Compares two (user key, seq) pairs in internal order.
pub fn compare_internal(a_key: &[u8], a_seq: SeqNo, b_key: &[u8], b_seq: SeqNo) -> Ordering {
    a_key.cmp(b_key).then_with(|| b_seq.cmp(&a_seq))
}

/// The key's first 16 bytes, zero-padded, as a big-endian number. Unequal heads order two keys
/// as their bytes do (a zero pad sorts like the end of a key, before any byte but 0, and a tie
/// between those two falls through to the full comparison).
pub(crate) fn head_of(key: &[u8]) -> u128 {
    let mut head = [0; 16];
    let n = key.len().min(16);
    head[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(head)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Short keys over a small alphabet with zeros, so that heads tie, pads meet zero bytes and
    /// keys are prefixes of one another: the head must never reorder what the bytes order.
    #[test]
    fn unequal_heads_order_as_the_bytes_do() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut random_key = || -> Vec<u8> {
            let len = rng.random_range(0..24);
            (0..len).map(|_| [0u8, 1, 0xff][rng.random_range(0..3)]).collect()
        };
        for _ in 0..200_000 {
            let (a, b) = (random_key(), random_key());
            let (ha, hb) = (head_of(&a), head_of(&b));
            if ha != hb {
                assert_eq!(ha.cmp(&hb), a.cmp(&b), "{a:?} vs {b:?}");
            }
        }
    }
}
