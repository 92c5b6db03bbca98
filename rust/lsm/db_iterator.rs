//! The user-facing iterator over one column family: merges memtables and files, keeps the newest
//! version of each key visible at its snapshot, applies deletes, range tombstones and merges, and
//! stays inside [lower, upper). It holds its super version, so the files it reads stay alive.

use std::any::Any;
use std::sync::Arc;

use bytes::Bytes;

use crate::Result;
use crate::lsm::column_family::{
    CF_PREFIX_LEN, ColumnFamily, ColumnFamilyId, family_range, prefix_successor, prefixed_key,
};
use crate::lsm::db_state::{DbInner, read_view};
use crate::lsm::iterator::InternalIterator;
use crate::lsm::iterators::level::LevelIterator;
use crate::lsm::iterators::merging::MergingIterator;
use crate::lsm::key::SeqNo;
use crate::lsm::range_tombstone::{FragmentedTombstones, TombstoneCursor};
use crate::lsm::resolve::VersionResolver;
use crate::lsm::version::Version;

pub struct DbIterator {
    merged: MergingIterator,
    snapshot: SeqNo,
    /// One per memtable and the version, for those with range deletes over [lower, upper).
    tombstones: Vec<TombstoneCursor>,
    /// Prefixed bounds: inclusive lower, exclusive upper.
    lower: Bytes,
    upper: Bytes,
    /// Current entry, key without the column-family prefix.
    current: Option<(Bytes, Bytes)>,
    _pinned: Arc<dyn Any + Send + Sync>,
}

/// What an iterator reads besides a version's files.
struct Parts {
    children: Vec<Box<dyn InternalIterator>>,
    memtable_tombstones: Vec<Arc<FragmentedTombstones>>,
    snapshot: SeqNo,
    lower: Bytes,
    upper: Bytes,
}

/// The prefixed bounds of [start, end) in family `cf`: inclusive lower, exclusive upper.
fn prefixed_bounds(cf: ColumnFamilyId, start: Option<&[u8]>, end: Option<&[u8]>) -> (Bytes, Bytes) {
    let (family_start, family_end) = family_range(cf);
    let lower = start.map_or(family_start, |s| prefixed_key(cf, s));
    let upper = end.map_or(family_end, |e| prefixed_key(cf, e));
    (lower, upper)
}

impl DbIterator {
    /// Iterates keys of `cf` in [start, end); `None` means unbounded on that side.
    pub(crate) fn new(
        db: &DbInner,
        cf: &ColumnFamily,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<Self> {
        db.check_open()?;
        let (snapshot, sv) = read_view(db);
        let (lower, upper) = prefixed_bounds(cf.id(), start, end);
        let mut children: Vec<Box<dyn InternalIterator>> = vec![Box::new(sv.mem.iter())];
        children.extend(sv.frozen.iter().map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>));
        let active = Arc::new(sv.mem.tombstones_in(&lower, &upper, snapshot));
        let frozen = sv.frozen.iter().map(|m| m.frozen_tombstones().clone());
        let memtable_tombstones = std::iter::once(active).chain(frozen).collect();
        let version = sv.version.clone();
        let parts = Parts { children, memtable_tombstones, snapshot, lower, upper };
        Self::assemble(parts, &version, sv)
    }

    /// Iterates keys of family `cf` in [start, end) of `version` alone, with no memtables: a
    /// checkpoint's files read where they are (`CheckpointReader`). Every entry is visible.
    pub(crate) fn over_version(
        version: Arc<Version>,
        cf: ColumnFamilyId,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<Self> {
        let (lower, upper) = prefixed_bounds(cf, start, end);
        let parts = Parts {
            children: Vec::new(),
            memtable_tombstones: Vec::new(),
            snapshot: SeqNo::MAX,
            lower,
            upper,
        };
        Self::assemble(parts, &version.clone(), version)
    }

    /// Adds the files of `version` over [lower, upper) and its range deletes to `parts`, and
    /// positions at the first key; `pinned` keeps what the iterator reads alive.
    fn assemble(
        parts: Parts,
        version: &Version,
        pinned: Arc<dyn Any + Send + Sync>,
    ) -> Result<Self> {
        let Parts { mut children, memtable_tombstones, snapshot, lower, upper } = parts;
        let in_range = |f: &&Arc<crate::lsm::version::TableFile>| {
            f.smallest() < upper.as_ref() && !f.ends_before(&lower)
        };
        for file in version.levels[0].iter().filter(in_range) {
            children.push(Box::new(file.iter(0)?));
        }
        for level in version.levels.iter().skip(1) {
            let files: Vec<_> = level.iter().filter(in_range).cloned().collect();
            if !files.is_empty() {
                children.push(Box::new(LevelIterator::new(files, 0)));
            }
        }
        let tombstones = memtable_tombstones
            .into_iter()
            .chain(std::iter::once(version.tombstones.clone()))
            .filter(|t| !t.overlapping_range(&lower, &upper).is_empty())
            .map(TombstoneCursor::new)
            .collect();
        let mut it = DbIterator {
            merged: MergingIterator::new(children),
            snapshot,
            tombstones,
            lower,
            upper,
            current: None,
            _pinned: pinned,
        };
        it.seek_to_first()?;
        Ok(it)
    }

    /// Iterates keys of `cf` starting with `prefix`.
    pub(crate) fn with_prefix(db: &DbInner, cf: &ColumnFamily, prefix: &[u8]) -> Result<Self> {
        let end = prefix_successor(prefix);
        Self::new(db, cf, Some(prefix), end.as_deref())
    }

    pub fn valid(&self) -> bool {
        self.current.is_some()
    }

    /// Key without the column-family prefix. Panics if not valid.
    pub fn key(&self) -> &[u8] {
        &self.current.as_ref().expect("iterator not valid").0
    }

    pub fn value(&self) -> &[u8] {
        &self.current.as_ref().expect("iterator not valid").1
    }

    pub fn seek_to_first(&mut self) -> Result<()> {
        let lower = self.lower.clone();
        self.merged.seek(&lower)?;
        self.tombstones.iter_mut().for_each(|t| t.seek(&lower));
        self.settle()
    }

    /// Positions at the first key >= `key` (clamped to the iterator's range).
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        let cf_prefix = &self.lower[..CF_PREFIX_LEN];
        let target = [cf_prefix, key].concat();
        let target =
            if target.as_slice() < self.lower.as_ref() { self.lower.to_vec() } else { target };
        self.merged.seek(&target)?;
        self.tombstones.iter_mut().for_each(|t| t.seek(&target));
        self.settle()
    }

    /// Moves to the next visible key.
    pub fn advance(&mut self) -> Result<()> {
        if self.current.is_some() {
            self.settle()?;
        }
        Ok(())
    }

    /// Moves the merged input to the next key that has a visible value and makes it current. The
    /// merged input is always left at the first version of the key after the current one.
    fn settle(&mut self) -> Result<()> {
        self.current = None;
        while self.merged.valid() && self.merged.key() < self.upper.as_ref() {
            let key = Bytes::copy_from_slice(self.merged.key());
            let covering = self.tombstones.iter_mut().map(|t| t.covering_seq(&key)).max();
            let mut resolver = VersionResolver::new(covering.unwrap_or(0));
            while self.merged.valid() && self.merged.key() == key.as_ref() {
                if self.merged.seq() <= self.snapshot && !resolver.is_done() {
                    let value = Bytes::copy_from_slice(self.merged.value());
                    resolver.push(self.merged.seq(), self.merged.kind(), value);
                }
                self.merged.next()?;
            }
            if let Some(value) = resolver.into_value() {
                self.current = Some((key.slice(CF_PREFIX_LEN..), value));
                return Ok(());
            }
        }
        Ok(())
    }
}
