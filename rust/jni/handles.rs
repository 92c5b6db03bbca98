//! Opaque `long` handles for native objects held by Java.
//!
//! Java never sees a pointer: a handle is a number (never reused within a process) looked up in a
//! global map. `close` removes the entry, so a closed or made-up handle is an
//! `IllegalStateException`. A call already running when another thread closes the handle keeps its
//! `Arc` and finishes against the closed database, which answers `Error::Closed`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use once_cell::sync::Lazy;

use super::guard::{Failure, JniResult};
use crate::Error;
use crate::executor::FamilyRegistry;
use crate::lsm::locks::Recover;
use crate::lsm::options::LogSpan;
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

/// Shared by every registry, so a database handle never names a checkpoint.
static NEXT_HANDLE: AtomicI64 = AtomicI64::new(1);

/// The live native objects of one kind, by handle.
pub struct Registry<T> {
    /// What a handle names, for messages ("database").
    what: &'static str,
    objects: Lazy<RwLock<HashMap<i64, Arc<T>>>>,
    /// Handles removed so far: a lookup remembered from before a removal is looked up again.
    removals: AtomicU64,
}

impl<T> Registry<T> {
    pub(super) const fn new(what: &'static str) -> Self {
        Registry {
            what,
            objects: Lazy::new(|| RwLock::new(HashMap::new())),
            removals: AtomicU64::new(0),
        }
    }

    /// Registers an object and returns its handle (always > 0).
    pub fn insert(&self, object: T) -> i64 {
        let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        // A poisoned lock only means a panic happened while it was held; the map itself is intact
        // (every update is a single insert or remove).
        self.objects.write().recover().insert(id, Arc::new(object));
        id
    }

    pub fn get(&self, handle: i64) -> JniResult<Arc<T>> {
        let objects = self.objects.read().recover();
        objects.get(&handle).cloned().ok_or_else(|| {
            Failure::IllegalState(format!("{} handle {handle} is unknown or closed", self.what))
        })
    }

    /// Removes the handle; later lookups fail. A call still holding the object finishes with it.
    pub fn remove(&self, handle: i64) -> JniResult<Arc<T>> {
        let removed = self.objects.write().recover().remove(&handle);
        self.removals.fetch_add(1, Ordering::Release);
        removed.ok_or_else(|| {
            Failure::IllegalState(format!(
                "{} handle {handle} is unknown or already closed",
                self.what
            ))
        })
    }
}

pub static DATABASES: Registry<DbHandle> = Registry::new("database");

/// An open database, looked up by handle, with the calling thread inside the database's log span
/// (its log lines name the database) until dropped.
pub struct InDb {
    handle: Arc<DbHandle>,
    _span: tracing::span::EnteredSpan,
}

impl std::ops::Deref for InDb {
    type Target = DbHandle;

    fn deref(&self) -> &DbHandle {
        &self.handle
    }
}

impl InDb {
    /// The handle itself, for what outlives the call.
    pub fn shared(&self) -> Arc<DbHandle> {
        self.handle.clone()
    }

    pub fn enter(handle: Arc<DbHandle>) -> Self {
        touched(&handle);
        let span = handle.db.inner.options.log_span.entered();
        InDb { handle, _span: span }
    }
}

thread_local! {
    /// The databases the native call running on this thread looked up: a panic in it fails them
    /// (see `guard`), whatever state it left them in.
    static TOUCHED: RefCell<Vec<Arc<DbHandle>>> = const { RefCell::new(Vec::new()) };
}

/// Records that the current native call works on `db` (see `TOUCHED`).
fn touched(db: &Arc<DbHandle>) {
    TOUCHED.with(|t| t.borrow_mut().push(db.clone()));
}

/// How many databases the calls on this thread touched so far: a call's own start from here.
pub(super) fn touched_mark() -> usize {
    TOUCHED.with(|t| t.borrow().len())
}

/// Forgets the databases touched since `mark` (no allocation: this runs after every native
/// call); with `failure` (the call panicked), fails each of them with it first.
pub(super) fn forget_touched(mark: usize, failure: Option<&Error>) {
    let Some(failure) = failure else {
        TOUCHED.with(|t| t.borrow_mut().truncate(mark));
        return;
    };
    let touched = TOUCHED.with(|t| {
        let mut t = t.borrow_mut();
        let from = mark.min(t.len());
        t.split_off(from)
    });
    touched.iter().for_each(|handle| handle.db.inner.fail(failure.clone()));
}

thread_local! {
    /// The database this thread's last call looked up, with `DATABASES`' removals then. A task
    /// thread calls into its one database per request; the registry's lock is shared by all
    /// threads, and taking it for reading writes its cache line.
    static LAST_DATABASE: RefCell<Option<(i64, u64, Weak<DbHandle>)>> =
        const { RefCell::new(None) };
}

/// The database behind `handle`, entered ([`InDb`]).
pub fn database(handle: i64) -> JniResult<InDb> {
    // Read before the lookup: a removal after this point is seen by the next call, as it would
    // be had this call taken the registry's lock just before the removal.
    let removals = DATABASES.removals.load(Ordering::Acquire);
    let remembered = LAST_DATABASE.with(|last| match &*last.borrow() {
        Some((h, r, db)) if *h == handle && *r == removals => db.upgrade(),
        _ => None,
    });
    let db = match remembered {
        Some(db) => db,
        None => {
            let db = DATABASES.get(handle)?;
            LAST_DATABASE
                .with(|last| *last.borrow_mut() = Some((handle, removals, Arc::downgrade(&db))));
            db
        }
    };
    Ok(InDb::enter(db))
}

/// A checkpoint Java is taking; the mutex serializes its asynchronous steps.
pub struct CheckpointHandle {
    pub checkpoint: Mutex<Checkpoint>,
    /// The database it is of (a panic in a call on the checkpoint fails it).
    pub db: Arc<DbHandle>,
    /// The database's, for opening copy destinations.
    pub storage_options: StorageOptions,
    /// The database's log span, entered by the checkpoint's steps.
    pub log_span: LogSpan,
}

/// Released checkpoints unpin their files once no call still uses them.
pub static CHECKPOINTS: Registry<CheckpointHandle> = Registry::new("checkpoint");

/// The checkpoint behind `handle`; the call works on its database (see `TOUCHED`).
pub fn checkpoint(handle: i64) -> JniResult<Arc<CheckpointHandle>> {
    let checkpoint = CHECKPOINTS.get(handle)?;
    touched(&checkpoint.db);
    Ok(checkpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::DbOptions;
    use crate::storage::open_storage;

    #[test]
    fn a_remembered_database_is_refused_once_its_handle_is_removed() {
        let options = StorageOptions::default();
        let storage = open_storage("memory://handles-remembered", &options).unwrap();
        let db = Db::open_with_storage(storage, DbOptions::default()).unwrap();
        let handle = DATABASES.insert(DbHandle::new(db, options));
        assert!(database(handle).is_ok());
        assert!(database(handle).is_ok(), "the second lookup uses the remembered one");

        let removed = DATABASES.remove(handle).unwrap();
        let refused = database(handle).err().expect("a removed handle is refused");
        assert!(matches!(refused, Failure::IllegalState(_)), "{refused:?}");
        drop(removed);
        forget_touched(0, None);
    }
}
