//! Opaque `long` handles for native objects held by Java.
//!
//! Java never sees a pointer: a handle is a number (never reused within a process) looked up in a
//! global map. `close` removes the entry, so a closed or made-up handle is an
//! `IllegalStateException`. A call already running when another thread closes the handle keeps its
//! `Arc` and finishes against the closed database, which answers `Error::Closed`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use once_cell::sync::Lazy;

use super::guard::{Failure, JniResult};
use crate::executor::FamilyRegistry;
use crate::lsm::{Checkpoint, ColumnFamily, Db};
use crate::storage::StorageOptions;

/// One open database and the column families Java registered on it, by the id that the wire
/// format and the single-op methods use.
pub struct DbHandle {
    pub db: Db,
    pub families: FamilyRegistry,
    /// How the database's storage was opened: checkpoints open their destinations alike.
    pub storage_options: StorageOptions,
}

impl DbHandle {
    pub fn new(db: Db, storage_options: StorageOptions) -> Self {
        DbHandle { db, families: FamilyRegistry::new(), storage_options }
    }

    /// Creates (or finds) the family `name` and makes it reachable by its id.
    pub fn create_family(&self, name: &str) -> crate::Result<u32> {
        Ok(self.families.register(self.db.create_cf(name)?))
    }

    pub fn family(&self, id: u32) -> JniResult<ColumnFamily> {
        self.families
            .get(id)
            .ok_or_else(|| Failure::IllegalArgument(format!("unknown column family id {id}")))
    }
}

static NEXT_HANDLE: AtomicI64 = AtomicI64::new(1);
static DATABASES: Lazy<RwLock<HashMap<i64, Arc<DbHandle>>>> =
    Lazy::new(|| RwLock::new(HashMap::new()));

/// Registers an open database and returns its handle (always > 0).
pub fn insert(handle: DbHandle) -> i64 {
    let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    // A poisoned lock only means a panic happened while it was held; the map itself is intact
    // (every update is a single insert or remove).
    DATABASES.write().unwrap_or_else(|p| p.into_inner()).insert(id, Arc::new(handle));
    id
}

pub fn get(handle: i64) -> JniResult<Arc<DbHandle>> {
    DATABASES.read().unwrap_or_else(|p| p.into_inner()).get(&handle).cloned().ok_or_else(|| {
        Failure::IllegalState(format!("database handle {handle} is unknown or closed"))
    })
}

/// Removes the handle; later lookups fail. Returns the database so the caller can close it.
pub fn remove(handle: i64) -> JniResult<Arc<DbHandle>> {
    DATABASES.write().unwrap_or_else(|p| p.into_inner()).remove(&handle).ok_or_else(|| {
        Failure::IllegalState(format!("database handle {handle} is unknown or already closed"))
    })
}

/// A checkpoint Java is taking; the mutex serializes its asynchronous steps.
pub struct CheckpointHandle {
    pub checkpoint: Mutex<Checkpoint>,
    /// The database's, for opening copy destinations.
    pub storage_options: StorageOptions,
}

static CHECKPOINTS: Lazy<RwLock<HashMap<i64, Arc<CheckpointHandle>>>> =
    Lazy::new(|| RwLock::new(HashMap::new()));

/// Registers a checkpoint and returns its handle (always > 0, never equal to a database's).
pub fn insert_checkpoint(checkpoint: Checkpoint, storage_options: StorageOptions) -> i64 {
    let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    let checkpoint =
        Arc::new(CheckpointHandle { checkpoint: Mutex::new(checkpoint), storage_options });
    CHECKPOINTS.write().unwrap_or_else(|p| p.into_inner()).insert(id, checkpoint);
    id
}

pub fn get_checkpoint(handle: i64) -> JniResult<Arc<CheckpointHandle>> {
    CHECKPOINTS.read().unwrap_or_else(|p| p.into_inner()).get(&handle).cloned().ok_or_else(|| {
        Failure::IllegalState(format!("checkpoint handle {handle} is unknown or released"))
    })
}

/// Forgets the checkpoint; its files are unpinned once no call still uses it.
pub fn remove_checkpoint(handle: i64) {
    CHECKPOINTS.write().unwrap_or_else(|p| p.into_inner()).remove(&handle);
}
