//! Prefix scans inside a batch: the store's entries merged with the batch's own earlier writes, so
//! a scan sees what running the batch's requests one by one would show.

use std::ops::Bound;

use crate::lsm::column_family::prefix_successor;
use crate::lsm::{Db, DbIterator};
use crate::{Error, Result};

use super::batch_writes::BatchWrites;
use super::wire::Request;

/// Where the store iterator of a scan request starts: its resume key, else its prefix.
pub(super) fn start_key<'a>(request: &Request<'a>) -> &'a [u8] {
    request.value.map_or(request.key, |resume_after| resume_after.max(request.key))
}

/// The visible entries under one prefix as the request at position `at` sees them.
pub(super) struct BatchScan<'w, 'a> {
    store: DbIterator,
    /// Set when a prefix delete covers every store key left (no successor to seek to).
    store_done: bool,
    writes: &'w BatchWrites<'a>,
    cf: u32,
    at: usize,
    /// Keys under the prefix the batch wrote before `at`, in order; `next_written` is the next.
    written: Vec<&'a [u8]>,
    next_written: usize,
}

impl<'w, 'a> BatchScan<'w, 'a> {
    /// Starts after `request.value` (the resume key) if given, else at the prefix.
    pub(super) fn new(
        db: &Db,
        writes: &'w BatchWrites<'a>,
        request: &Request<'a>,
        at: usize,
    ) -> Result<Self> {
        let prefix = request.key;
        let end = prefix_successor(prefix);
        let (store, from) = match request.value {
            // Opened at the resume key, not at the prefix: positioning at the prefix first would
            // step over every entry deleted before the resume key (fired timers, removed map
            // entries), so each chunk of a long scan would cost more than the last.
            Some(resume_after) => {
                // A chunk resumes after the last key it returned, which lies under the prefix;
                // anything else is bad input (and would invert the range of the batch's writes).
                if !resume_after.starts_with(prefix) {
                    return Err(Error::invalid("scan resume key outside the scanned prefix"));
                }
                let mut store = db.iter(&request.cf, Some(start_key(request)), end.as_deref())?;
                if store.valid() && store.key() == resume_after {
                    store.advance()?;
                }
                (store, Bound::Excluded(resume_after))
            }
            None => (db.iter_prefix(&request.cf, prefix)?, Bound::Included(prefix)),
        };
        let to = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let written = writes.keys_written(request.cf.id(), from, to, at);
        Ok(BatchScan {
            store,
            store_done: false,
            writes,
            cf: request.cf.id(),
            at,
            written,
            next_written: 0,
        })
    }

    /// Moves to the next visible entry and hands it to `emit`; false when there is none.
    pub(super) fn next(&mut self, mut emit: impl FnMut(&[u8], &[u8])) -> Result<bool> {
        loop {
            // Store keys under a prefix the batch deleted are gone, except those the batch wrote
            // again later, which come from `written`.
            if self.store_valid()
                && let Some((_, prefix)) =
                    self.writes.covering_prefix_delete(self.cf, self.store.key(), self.at)
            {
                match prefix_successor(prefix) {
                    Some(past) => self.store.seek(&past)?,
                    None => self.store_done = true,
                }
                continue;
            }
            let written = self.written.get(self.next_written).copied();
            let store_key = self.store_valid().then(|| self.store.key());
            let (key, store_value, from_store, from_written) = match (store_key, written) {
                (None, None) => return Ok(false),
                (Some(s), Some(w)) if s == w => (w, Some(self.store.value()), true, true),
                (Some(s), Some(w)) if w < s => (w, None, false, true),
                (Some(s), _) => (s, Some(self.store.value()), true, false),
                (None, Some(w)) => (w, None, false, true),
            };
            let visible = if from_written {
                match self.writes.seen(self.cf, key, self.at).over(store_value) {
                    Some(value) => {
                        emit(key, &value);
                        true
                    }
                    None => false,
                }
            } else {
                emit(key, store_value.expect("a store entry has a value"));
                true
            };
            if from_written {
                self.next_written += 1;
            }
            if from_store {
                self.store.advance()?;
            }
            if visible {
                return Ok(true);
            }
        }
    }

    fn store_valid(&self) -> bool {
        !self.store_done && self.store.valid()
    }
}
