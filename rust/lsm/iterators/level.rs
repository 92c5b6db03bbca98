//! Concatenation of the non-overlapping, sorted files of one level; a file's table iterator is
//! opened only when the scan reaches it.

use std::sync::Arc;

use crate::Result;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::iterators::file::FileIterator;
use crate::lsm::key::{SeqNo, ValueKind};
use crate::lsm::version::TableFile;

pub struct LevelIterator {
    files: Vec<Arc<TableFile>>,
    index: usize,
    current: Option<FileIterator>,
    readahead: usize,
}

impl LevelIterator {
    /// `readahead` as for `Table::iter` (0 = through the block cache).
    pub fn new(files: Vec<Arc<TableFile>>, readahead: usize) -> Self {
        LevelIterator { files, index: 0, current: None, readahead }
    }

    fn open(&mut self, index: usize) -> Result<()> {
        self.index = index;
        self.current = None;
        if let Some(file) = self.files.get(index) {
            self.current = Some(file.iter(self.readahead)?);
        }
        Ok(())
    }

    /// Moves to following files while the current one is exhausted.
    fn skip_exhausted(
        &mut self,
        seek_first: impl Fn(&mut FileIterator) -> Result<()>,
    ) -> Result<()> {
        while self.current.as_ref().is_some_and(|it| !it.valid()) {
            self.open(self.index + 1)?;
            if let Some(it) = self.current.as_mut() {
                seek_first(it)?;
            }
        }
        Ok(())
    }

    fn current(&self) -> &FileIterator {
        self.current.as_ref().expect("iterator not valid")
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|it| it.valid())
    }

    fn key(&self) -> &[u8] {
        self.current().key()
    }

    fn seq(&self) -> SeqNo {
        self.current().seq()
    }

    fn kind(&self) -> ValueKind {
        self.current().kind()
    }

    fn value(&self) -> &[u8] {
        self.current().value()
    }

    fn next(&mut self) -> Result<()> {
        if let Some(it) = self.current.as_mut() {
            it.next()?;
        }
        self.skip_exhausted(|it| it.seek(&[]))
    }

    fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        let index = self.files.partition_point(|f| f.ends_before(user_key));
        self.open(index)?;
        if let Some(it) = self.current.as_mut() {
            it.seek(user_key)?;
        }
        self.skip_exhausted(|it| it.seek(&[]))
    }
}
