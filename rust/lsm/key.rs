//! Internal keys: a user key (column-family prefixed) plus the sequence number and kind of the
//! write. Order: user key ascending, then newest first (sequence descending), so a seek to
//! (key, snapshot) lands on the newest version a reader may see.

use std::cmp::Ordering;

use bytes::Bytes;

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

/// An owned internal key, ordered user key ascending, then sequence descending.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InternalKey {
    pub user_key: Bytes,
    pub seq: SeqNo,
    pub kind: ValueKind,
}

impl InternalKey {
    pub fn new(user_key: impl Into<Bytes>, seq: SeqNo, kind: ValueKind) -> Self {
        InternalKey { user_key: user_key.into(), seq, kind }
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal(&self.user_key, self.seq, &other.user_key, other.seq)
            .then_with(|| other.kind.cmp(&self.kind))
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
