//! Deletes files that no version lists any more, once their last user lets go: off the thread
//! that dropped the last reference (deleting is I/O), counted so that the database can wait until
//! every deletion issued so far has finished.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex};

use crate::Result;
use crate::storage::{Storage, StorageRef, io_runtime};

#[derive(Debug, Default)]
pub struct ObsoleteFiles {
    in_flight: Mutex<u64>,
    finished: Condvar,
}

impl ObsoleteFiles {
    pub fn delete(self: &std::sync::Arc<Self>, storage: StorageRef, path: String) {
        *self.in_flight.lock().unwrap() += 1;
        let this = self.clone();
        io_runtime().spawn(async move {
            if let Err(e) = storage.delete(&path).await {
                tracing::warn!("cannot delete obsolete file {path}: {e}");
            }
            this.done();
        });
    }

    /// For an obsolete file the database does not own (a checkpoint's): the file stays, but the
    /// database never reads it again, so its local copies (disk cache) go. Counted like a
    /// deletion.
    pub fn forget(self: &std::sync::Arc<Self>, storage: StorageRef, path: String) {
        *self.in_flight.lock().unwrap() += 1;
        let this = self.clone();
        io_runtime().spawn_blocking(move || {
            storage.forget_cached(&path);
            this.done();
        });
    }

    fn done(&self) {
        *self.in_flight.lock().unwrap() -= 1;
        self.finished.notify_all();
    }

    /// Blocks until every deletion issued before the call has finished (deleted or failed).
    pub fn wait_idle(&self) {
        let mut in_flight = self.in_flight.lock().unwrap();
        while *in_flight > 0 {
            in_flight = self.finished.wait(in_flight).unwrap();
        }
    }
}

/// Deletes the SSTs at the top of a database's directory that its manifest neither lists
/// (`live`) nor names as given away (`released`): files a process left behind when it died before
/// deleting what compaction replaced, or before a flush's manifest was written. Only the database
/// writes SSTs there (a restore writes them before the manifest names them), and what it handed
/// over to a checkpoint is in one of the two sets, so nobody else can need them. `released` keeps
/// only the names still present (their new owner deletes the others). Returns how many went.
pub async fn delete_orphans(
    storage: &dyn Storage,
    live: &HashSet<&str>,
    released: &mut Vec<String>,
) -> Result<usize> {
    let given_away: HashSet<String> = released.iter().cloned().collect();
    let mut deleted = 0;
    let mut present = HashSet::new();
    for file in storage.list("").await? {
        let path = file.path.as_str();
        if !path.ends_with(".sst") || path.contains('/') || live.contains(path) {
            continue;
        }
        if given_away.contains(path) {
            present.insert(file.path);
        } else {
            storage.delete(path).await?;
            deleted += 1;
        }
    }
    released.retain(|r| present.contains(r));
    Ok(deleted)
}
