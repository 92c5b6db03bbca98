//! Range deletions. They are rare (dropping a column family, clipping key groups after rescale),
//! so instead of fragmenting them into every SST as RocksDB does, the engine keeps them in the
//! memtable until flush and then in the version (the manifest). Every read checks the short list;
//! compaction drops the entries they cover, and a tombstone is forgotten once no file that could
//! hold older data overlaps it.

use bytes::Bytes;

use crate::lsm::key::SeqNo;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// Inclusive start (column-family prefixed user key).
    pub start: Bytes,
    /// Exclusive end.
    pub end: Bytes,
    /// Entries with a smaller sequence number inside [start, end) are deleted.
    pub seq: SeqNo,
}

impl RangeTombstone {
    pub fn contains(&self, key: &[u8]) -> bool {
        self.start.as_ref() <= key && key < self.end.as_ref()
    }

    pub fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.start.as_ref() <= largest && smallest < self.end.as_ref()
    }
}

/// Highest sequence number among tombstones visible at `snapshot` that cover `key` (0 if none):
/// every version of `key` older than it is deleted.
pub fn covering_seq<'a>(
    tombstones: impl IntoIterator<Item = &'a RangeTombstone>,
    key: &[u8],
    snapshot: SeqNo,
) -> SeqNo {
    tombstones
        .into_iter()
        .filter(|t| t.seq <= snapshot && t.contains(key))
        .map(|t| t.seq)
        .max()
        .unwrap_or(0)
}
