//! Turning the versions of one key (newest first) into what a reader sees or what compaction
//! keeps: a Put ends the walk, a Delete or a covering range tombstone ends it with nothing below,
//! and Merge operands pile up to be joined onto whatever base is found.

use bytes::Bytes;

use crate::lsm::key::{SeqNo, ValueKind};
use crate::lsm::merge::merge_values;

#[derive(Debug)]
enum Base {
    /// No Put or Delete seen yet: older versions may still matter.
    Unknown,
    Value(Bytes),
    /// A point Delete ends the walk.
    Deleted,
    /// A range tombstone covers every older version (it stays in the version and keeps covering
    /// older data elsewhere, so compaction needs to write nothing for it).
    RangeDeleted,
}

#[derive(Debug)]
pub struct VersionResolver {
    tombstone_seq: SeqNo,
    newest_first_operands: Vec<Bytes>,
    base: Base,
}

impl VersionResolver {
    /// `tombstone_seq`: highest range tombstone covering the key (0 if none).
    pub fn new(tombstone_seq: SeqNo) -> Self {
        VersionResolver { tombstone_seq, newest_first_operands: Vec::new(), base: Base::Unknown }
    }

    pub fn is_done(&self) -> bool {
        !matches!(self.base, Base::Unknown)
    }

    /// Feeds the next older version; returns true once no older version can matter.
    pub fn push(&mut self, seq: SeqNo, kind: ValueKind, value: Bytes) -> bool {
        if seq < self.tombstone_seq {
            self.base = Base::RangeDeleted;
            return true;
        }
        match kind {
            ValueKind::Put => self.base = Base::Value(value),
            ValueKind::Delete => self.base = Base::Deleted,
            ValueKind::Merge => self.newest_first_operands.push(value),
        }
        self.is_done()
    }

    fn merged(&self, base: Option<&Bytes>) -> Bytes {
        let operands: Vec<&[u8]> =
            self.newest_first_operands.iter().rev().map(|b| &b[..]).collect();
        merge_values(base.map(|b| &b[..]), &operands)
    }

    /// The value a reader sees.
    pub fn into_value(self) -> Option<Bytes> {
        match (&self.base, self.newest_first_operands.is_empty()) {
            (Base::Value(v), true) => Some(v.clone()),
            (Base::Value(v), false) => Some(self.merged(Some(v))),
            (_, true) => None,
            (_, false) => Some(self.merged(None)),
        }
    }

    /// The single entry compaction writes for this key, if any. `bottommost`: no older data for
    /// this key can exist below the output, so deletes and partial merges can be settled.
    pub fn into_compacted(self, bottommost: bool) -> Option<(ValueKind, Bytes)> {
        let has_operands = !self.newest_first_operands.is_empty();
        match &self.base {
            Base::Value(v) if !has_operands => Some((ValueKind::Put, v.clone())),
            Base::Value(v) => Some((ValueKind::Put, self.merged(Some(v)))),
            Base::Deleted | Base::RangeDeleted if has_operands => {
                Some((ValueKind::Put, self.merged(None)))
            }
            Base::Deleted if !bottommost => Some((ValueKind::Delete, Bytes::new())),
            Base::Deleted | Base::RangeDeleted => None,
            Base::Unknown if !has_operands => None,
            Base::Unknown if bottommost => Some((ValueKind::Put, self.merged(None))),
            Base::Unknown => Some((ValueKind::Merge, self.merged(None))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn merges_onto_put_in_write_order() {
        let mut r = VersionResolver::new(0);
        assert!(!r.push(9, ValueKind::Merge, b("c")));
        assert!(!r.push(8, ValueKind::Merge, b("b")));
        assert!(r.push(7, ValueKind::Put, b("a")));
        assert_eq!(r.into_value().unwrap(), b("a,b,c"));
    }

    #[test]
    fn range_tombstone_hides_older_versions() {
        let mut r = VersionResolver::new(6);
        assert!(!r.push(9, ValueKind::Merge, b("x")));
        assert!(r.push(5, ValueKind::Put, b("old")));
        assert_eq!(r.into_value().unwrap(), b("x"));
    }

    #[test]
    fn compaction_keeps_partial_merge_unless_bottommost() {
        let mut r = VersionResolver::new(0);
        r.push(3, ValueKind::Merge, b("b"));
        r.push(2, ValueKind::Merge, b("a"));
        assert_eq!(r.into_compacted(false), Some((ValueKind::Merge, b("a,b"))));
        let mut r = VersionResolver::new(0);
        r.push(2, ValueKind::Delete, Bytes::new());
        assert_eq!(r.into_compacted(true), None);
    }
}
