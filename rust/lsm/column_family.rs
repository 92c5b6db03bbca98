//! Column families (one per Flink state) share one LSM tree: every key is stored behind its
//! family's 4-byte big-endian id, so a family is a contiguous key range. That keeps the number of
//! files on the DFS independent of the number of states, and dropping a family is one range
//! deletion.
//!
//! Ids derive from the name ([`id_for_name`]), so the same state has the same id in every
//! database of a job: a rescale can combine files of several databases without rewriting keys.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{BufMut, Bytes, BytesMut};

use crate::{Error, Result};

pub type ColumnFamilyId = u32;

pub const CF_PREFIX_LEN: usize = 4;

/// A handle naming one column family of an open database. Checked on every use: a handle of
/// another database, or of a family dropped since (even if one of the same name was created
/// again, with the same id), is refused.
#[derive(Debug, Clone)]
pub struct ColumnFamily {
    pub(crate) id: ColumnFamilyId,
    pub(crate) name: Arc<str>,
    life: Arc<FamilyLife>,
}

/// Shared by every handle of one family, from its creation (or the database's open) to its drop.
#[derive(Debug)]
struct FamilyLife {
    /// The database instance (see `DbInner::instance`) the family belongs to.
    db: u64,
    dropped: AtomicBool,
}

impl ColumnFamily {
    pub(crate) fn new(id: ColumnFamilyId, name: &str, db: u64) -> Self {
        let life = Arc::new(FamilyLife { db, dropped: AtomicBool::new(false) });
        ColumnFamily { id, name: name.into(), life }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn id(&self) -> ColumnFamilyId {
        self.id
    }

    /// From now on every handle of this family is refused.
    pub(crate) fn mark_dropped(&self) {
        self.life.dropped.store(true, Ordering::Release);
    }

    /// Fails unless the handle may be used with database instance `db`.
    pub(crate) fn check(&self, db: u64) -> Result<()> {
        if self.life.db != db {
            return Err(Error::invalid(format!(
                "column family {:?} belongs to another database",
                self.name
            )));
        }
        if self.life.dropped.load(Ordering::Acquire) {
            return Err(Error::Closed(format!("column family {:?} was dropped", self.name)));
        }
        Ok(())
    }
}

/// Handles are equal when they name the same family of the same database, in the same life.
impl PartialEq for ColumnFamily {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.life, &other.life)
    }
}

impl Eq for ColumnFamily {}

impl Hash for ColumnFamily {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

/// The id a family of this name gets: crc32c of the name, or the next free one in the (never yet
/// seen) case that another name of this database already hashes there. `u32::MAX` is never used,
/// so every family has a successor prefix ([`family_range`]).
pub fn id_for_name(name: &str, taken: impl Fn(ColumnFamilyId) -> bool) -> ColumnFamilyId {
    let mut id = crc32c::crc32c(name.as_bytes());
    while id == ColumnFamilyId::MAX || taken(id) {
        id = id.wrapping_add(1);
    }
    id
}

/// The stored form of `key` in family `cf`.
pub fn prefixed_key(cf: ColumnFamilyId, key: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(CF_PREFIX_LEN + key.len());
    out.put_u32(cf);
    out.put_slice(key);
    out.freeze()
}

/// The key range [start, end) holding every key of family `cf`.
pub fn family_range(cf: ColumnFamilyId) -> (Bytes, Bytes) {
    (prefixed_key(cf, &[]), prefixed_key(cf + 1, &[]))
}

/// The family a stored key belongs to.
pub fn family_of(key: &[u8]) -> Option<ColumnFamilyId> {
    Some(ColumnFamilyId::from_be_bytes(key.get(..CF_PREFIX_LEN)?.try_into().ok()?))
}

/// Exclusive upper bound of all keys starting with `prefix`, or None if there is none
/// (prefix is all 0xff).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}
