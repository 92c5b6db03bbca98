//! K-way merge of internal iterators into one stream in internal order (key ascending, newest
//! first). Inputs are few (memtables, L0 files, one per level), so a linear scan for the minimum
//! is as fast as a heap and simpler.

use std::cmp::Ordering;

use crate::Result;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{SeqNo, ValueKind, compare_internal};

pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
}

impl MergingIterator {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        let mut it = MergingIterator { children, current: None };
        it.pick_current();
        it
    }

    fn pick_current(&mut self) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate() {
            if !child.valid() {
                continue;
            }
            best = match best {
                Some(b) => {
                    let current = &self.children[b];
                    let order =
                        compare_internal(child.key(), child.seq(), current.key(), current.seq());
                    if order == Ordering::Less { Some(i) } else { Some(b) }
                }
                None => Some(i),
            };
        }
        self.current = best;
    }

    fn current(&self) -> &dyn InternalIterator {
        self.children[self.current.expect("iterator not valid")].as_ref()
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
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
        if let Some(i) = self.current {
            self.children[i].next()?;
            self.pick_current();
        }
        Ok(())
    }

    fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        for child in &mut self.children {
            child.seek(user_key)?;
        }
        self.pick_current();
        Ok(())
    }
}
