//! Where an SST's bytes are read from. A database's `TableFile` and its open `Table` share one
//! `TableSource`, so re-pointing a file at a copy of the same bytes (`TableFile::relocate`: a
//! restored file whose snapshot the user may delete) redirects every later read of every reader
//! at once, without reopening the table or dropping its cached blocks.

use std::sync::{Arc, PoisonError, RwLock};

use crate::storage::StorageRef;

/// The storage that holds a file and its path there.
pub struct Located {
    pub storage: StorageRef,
    pub path: String,
    /// The file's URI when it lives outside its database's directory (see
    /// `manifest::FileRecord::location`); None for the database's own files.
    pub location: Option<String>,
}

/// A file's current `Located`; cheap to clone (all clones see one value).
#[derive(Clone)]
pub struct TableSource(Arc<RwLock<Arc<Located>>>);

impl TableSource {
    pub fn new(storage: StorageRef, path: String) -> Self {
        Self::at(Located { storage, path, location: None })
    }

    pub fn at(located: Located) -> Self {
        TableSource(Arc::new(RwLock::new(Arc::new(located))))
    }

    /// Where the file is now. Read once per storage request, never per cached block.
    pub fn get(&self) -> Arc<Located> {
        // The lock only guards an `Arc` swap, which cannot leave it half-written.
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Points every holder at `to`; the caller vouches that it holds the same bytes.
    pub fn set(&self, to: Arc<Located>) -> Arc<Located> {
        let mut current = self.0.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *current, to)
    }
}
