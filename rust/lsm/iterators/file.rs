//! Iteration over one live file, limited to the keys its version entry lets through: a file
//! restored into a database with a narrower key-group range keeps its bytes untouched and only
//! its visible bounds shrink (see `lsm::restore`).

use crate::Result;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{SeqNo, ValueKind};
use crate::lsm::sst::TableIterator;
use crate::lsm::version::Bounds;

pub struct FileIterator {
    inner: TableIterator,
    /// None for a file whose every key is visible.
    bounds: Option<Bounds>,
}

impl FileIterator {
    pub fn new(inner: TableIterator, bounds: Option<Bounds>) -> Self {
        FileIterator { inner, bounds }
    }
}

impl InternalIterator for FileIterator {
    fn valid(&self) -> bool {
        self.inner.valid() && self.bounds.as_ref().is_none_or(|b| !b.ends_before(self.inner.key()))
    }

    fn key(&self) -> &[u8] {
        self.inner.key()
    }

    fn seq(&self) -> SeqNo {
        self.inner.seq()
    }

    fn kind(&self) -> ValueKind {
        self.inner.kind()
    }

    fn value(&self) -> &[u8] {
        self.inner.value()
    }

    fn next(&mut self) -> Result<()> {
        self.inner.next()
    }

    fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        match &self.bounds {
            Some(b) if user_key < b.smallest.as_ref() => self.inner.seek(&b.smallest),
            _ => self.inner.seek(user_key),
        }
    }
}
