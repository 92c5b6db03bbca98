//! An atomic group of writes across column families: all of it becomes visible at once, or none.

use std::ops::Range;

use bytes::{BufMut, Bytes};

use crate::lsm::column_family::{ColumnFamily, family_range, prefix_successor, prefixed_key};
use crate::lsm::key::ValueKind;

#[derive(Debug, Clone)]
pub(crate) enum BatchOp {
    /// Key (column-family prefixed) and value, as ranges of the batch's `data`.
    Write { kind: ValueKind, key: Range<usize>, value: Range<usize> },
    /// Range [start, end) of prefixed keys.
    DeleteRange { start: Bytes, end: Bytes },
}

impl BatchOp {
    /// Bytes the op's entry occupies in an SST (key + value).
    pub(crate) fn entry_bytes(&self) -> usize {
        match self {
            BatchOp::Write { key, value, .. } => key.len() + value.len(),
            BatchOp::DeleteRange { start, end } => start.len().max(end.len()),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    /// Every key and value written, back to back. Applying the batch copies this once and the
    /// memtable's entries share the copy: no allocation per entry.
    pub(crate) data: Vec<u8>,
    pub(crate) ops: Vec<BatchOp>,
    /// The families the ops write to, once each: `Db::write` checks their handles.
    pub(crate) families: Vec<ColumnFamily>,
}

impl WriteBatch {
    pub fn new() -> Self {
        Self::default()
    }

    /// A batch sized for one write of `key_len` + `value_len` bytes: `Db::put` and friends make
    /// one per call, and growing three vectors from empty took five allocations.
    pub(crate) fn for_one_write(cf: &ColumnFamily, key_len: usize, value_len: usize) -> Self {
        WriteBatch {
            data: Vec::with_capacity(4 + key_len + value_len),
            ops: Vec::with_capacity(1),
            families: vec![cf.clone()],
        }
    }

    pub fn put(&mut self, cf: &ColumnFamily, key: &[u8], value: &[u8]) {
        self.push_write(ValueKind::Put, cf, key, value);
    }

    pub fn delete(&mut self, cf: &ColumnFamily, key: &[u8]) {
        self.push_write(ValueKind::Delete, cf, key, &[]);
    }

    /// Appends `value` to the list stored at `key` (see `lsm::merge`).
    pub fn merge(&mut self, cf: &ColumnFamily, key: &[u8], value: &[u8]) {
        self.push_write(ValueKind::Merge, cf, key, value);
    }

    /// Deletes every key in [start, end) of `cf`.
    pub fn delete_range(&mut self, cf: &ColumnFamily, start: &[u8], end: &[u8]) {
        let (start, end) = (prefixed_key(cf.id, start), prefixed_key(cf.id, end));
        self.note(cf);
        self.ops.push(BatchOp::DeleteRange { start, end });
    }

    /// Deletes every key of `cf` that starts with `prefix` (a map state's entries).
    pub fn delete_prefix(&mut self, cf: &ColumnFamily, prefix: &[u8]) {
        let start = prefixed_key(cf.id, prefix);
        // The successor of a prefixed key stays at or below the next family's first key.
        let end = prefix_successor(&start).map_or_else(|| family_range(cf.id).1, Bytes::from);
        self.note(cf);
        self.ops.push(BatchOp::DeleteRange { start, end });
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.ops.clear();
        self.families.clear();
    }

    fn push_write(&mut self, kind: ValueKind, cf: &ColumnFamily, key: &[u8], value: &[u8]) {
        let start = self.data.len();
        self.data.put_u32(cf.id);
        self.data.extend_from_slice(key);
        let key = start..self.data.len();
        self.data.extend_from_slice(value);
        let value = key.end..self.data.len();
        self.note(cf);
        self.ops.push(BatchOp::Write { kind, key, value });
    }

    fn note(&mut self, cf: &ColumnFamily) {
        // A batch names few families (one per Flink state at most): a scan beats hashing.
        if !self.families.iter().rev().any(|f| f == cf) {
            self.families.push(cf.clone());
        }
    }
}
