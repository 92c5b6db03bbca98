//! The one iterator trait every read path composes: memtables, SST files, levels and merges all
//! yield internal entries (user key, seq, kind, value) in internal-key order.

use crate::Result;
use crate::lsm::key::{SeqNo, ValueKind};

pub trait InternalIterator: Send {
    fn valid(&self) -> bool;
    /// User key (column-family prefixed) of the current entry. Only valid while `valid()`.
    fn key(&self) -> &[u8];
    fn seq(&self) -> SeqNo;
    fn kind(&self) -> ValueKind;
    fn value(&self) -> &[u8];
    fn next(&mut self) -> Result<()>;
    /// Positions at the first entry whose user key is >= `user_key` (its newest version).
    fn seek(&mut self, user_key: &[u8]) -> Result<()>;
}
