//! Deletes files that no version lists any more, once their last user lets go: off the thread
//! that dropped the last reference (deleting is I/O), counted so that the database can wait until
//! every deletion issued so far has finished. A deletion that panics is counted out all the same
//! and fails the database (`ObsoleteFiles::on_panic`).

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::lsm::locks::Recover;
use crate::lsm::supervision::{supervised, supervised_task};
use crate::storage::{Storage, StorageRef, io_runtime};
use crate::{Error, Result};

#[derive(Default)]
pub struct ObsoleteFiles {
    in_flight: Mutex<u64>,
    finished: Condvar,
    /// Told when a deletion panics (the database fails with it); set once the database is up.
    on_panic: OnceLock<Box<dyn Fn(Error) + Send + Sync>>,
}

impl std::fmt::Debug for ObsoleteFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObsoleteFiles")
            .field("in_flight", &*self.in_flight.lock().recover())
            .finish()
    }
}

impl ObsoleteFiles {
    /// Whom to tell when a deletion panics: the database, which fails. Set once.
    pub fn on_panic(&self, hook: impl Fn(Error) + Send + Sync + 'static) {
        let _ = self.on_panic.set(Box::new(hook));
    }

    pub fn delete(self: &Arc<Self>, storage: StorageRef, path: String) {
        let issued = self.issue();
        io_runtime().spawn(async move {
            let deleted = supervised_task("deleting an obsolete file", storage.delete(&path)).await;
            match deleted {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("cannot delete obsolete file {path}: {e}"),
                Err(panicked) => issued.panicked(panicked),
            }
        });
    }

    /// For an obsolete file the database does not own (a checkpoint's): the file stays, but the
    /// database never reads it again, so its local copies (disk cache) go. Counted like a
    /// deletion.
    pub fn forget(self: &Arc<Self>, storage: StorageRef, path: String) {
        let issued = self.issue();
        io_runtime().spawn_blocking(move || {
            if let Err(panicked) =
                supervised("forgetting a cached file", || storage.forget_cached(&path))
            {
                issued.panicked(panicked);
            }
        });
    }

    /// Counts a deletion in until the returned guard drops, which it does also when the task
    /// panics or the runtime drops it unrun: `wait_idle` never waits for a deletion that is gone.
    fn issue(self: &Arc<Self>) -> Issued {
        *self.in_flight.lock().recover() += 1;
        Issued(self.clone())
    }

    /// Blocks until every deletion issued before the call has finished (deleted or failed).
    pub fn wait_idle(&self) {
        let mut in_flight = self.in_flight.lock().recover();
        while *in_flight > 0 {
            in_flight = self.finished.wait(in_flight).recover();
        }
    }
}

/// One deletion in flight; dropping it counts the deletion out.
struct Issued(Arc<ObsoleteFiles>);

impl Issued {
    fn panicked(&self, error: Error) {
        tracing::error!("{error}");
        if let Some(hook) = self.0.on_panic.get() {
            hook(error);
        }
    }
}

impl Drop for Issued {
    fn drop(&mut self) {
        *self.0.in_flight.lock().recover() -= 1;
        self.0.finished.notify_all();
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
