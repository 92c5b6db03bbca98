//! The state that `Db`, the read path, flush, compaction and checkpoints share behind one `Arc`
//! (`DbInner`), and opening it from the manifest. It lives apart from the public `Db` so that the
//! engine's parts depend on this state, not on the API built on it. The code that changes it is in
//! the submodules: the write path, version installation, column families, background work.
//!
//! Durability: there is no write-ahead log. A write is durable once its memtable is flushed and a
//! manifest lists the new file; a crash loses what was written after the last flush, by design
//! (Flink restores from its last checkpoint, which flushes first).

mod background;
mod families;
mod install;
mod write_path;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, Weak};

use crate::lsm::cache::BlockCache;
use crate::lsm::column_family::ColumnFamily;
use crate::lsm::compaction::in_flight::Compactions;
use crate::lsm::key::SeqNo;
use crate::lsm::locks::Recover;
use crate::lsm::memtable::MemTable;
use crate::lsm::options::DbOptions;
use crate::lsm::stats::EngineCounters;
use crate::lsm::ttl::TtlFilters;
use crate::lsm::version::manifest::{ManifestData, delete_manifests_before, read_latest_manifest};
use crate::lsm::version::{FileMap, ObsoleteFiles, TableFile, Version, delete_orphans};
use crate::storage::{IoCounters, MeteredStorage, PanicHook, StorageRef, block_on};
use crate::{Error, Result};

use background::BackgroundState;

/// Source of `DbInner::instance`.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// What a read needs, captured at once: the active memtable, frozen memtables waiting for flush
/// (newest first) and the current version.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    pub frozen: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
    /// Where a point read finds its key's files in `version`.
    pub file_map: Arc<FileMap>,
}

impl SuperVersion {
    /// Made of the memtables and `version`.
    pub fn new(mem: Arc<MemTable>, frozen: Vec<Arc<MemTable>>, version: Arc<Version>) -> Self {
        let file_map = Arc::new(FileMap::new(&version));
        SuperVersion { mem, frozen, version, file_map }
    }

    /// Bytes of the active and the frozen memtables.
    pub fn memtable_bytes(&self) -> u64 {
        self.mem.approximate_bytes()
            + self.frozen.iter().map(|m| m.approximate_bytes()).sum::<u64>()
    }
}

/// Guarded by one mutex that serializes manifest writes.
struct MetaState {
    manifest_number: u64,
    /// See `ManifestData::released`.
    released: Vec<String>,
    /// The files given away that left the current version while something (a checkpoint's pin,
    /// an iterator) may still hold them, by name: `take_back` owns them again through these, so
    /// that the last holder deletes them.
    released_held: HashMap<String, Weak<TableFile>>,
    /// See `ManifestData::hand_overs`.
    hand_overs: BTreeMap<String, u64>,
}

pub(crate) struct DbInner {
    pub storage: StorageRef,
    pub options: DbOptions,
    pub cache: Arc<BlockCache>,
    pub obsolete_files: Arc<ObsoleteFiles>,
    /// Random per open; part of every new file name.
    pub session: u64,
    next_file_number: AtomicU64,
    /// Serializes writers: sequence numbers are handed out in order and a batch lands as a unit.
    pub(crate) write_lock: Mutex<()>,
    /// Highest sequence number visible to readers.
    visible_seq: AtomicU64,
    /// Memtables frozen since open; the flush thread completes them in this order.
    frozen_total: AtomicU64,
    super_version: RwLock<Arc<SuperVersion>>,
    meta: Mutex<MetaState>,
    /// Column families by name. Changed only with `meta` held (they are in the manifest), but
    /// read without it: a checkpoint's synchronous phase must not wait behind a manifest write.
    families: RwLock<BTreeMap<String, ColumnFamily>>,
    /// Unique per open database in this process: column family handles are checked against it.
    instance: u64,
    /// Background compactions take it shared (they keep apart through `compactions`), a full
    /// compaction exclusively.
    pub compaction_lock: RwLock<()>,
    /// The compactions in flight: what each reads and the range it writes.
    pub compactions: Compactions,
    /// Bytes of memtables charged to the block cache (see `charge_memtables`).
    memtables_charged: Mutex<u64>,
    /// TTL filters of column families, applied by compaction (not persisted: Flink sets them
    /// again whenever it registers a state).
    pub ttl: TtlFilters,
    pub background: Mutex<BackgroundState>,
    pub background_changed: Condvar,
    closed: AtomicBool,
    /// Why the database stopped, once background work failed for good: every call fails with it.
    failure: OnceLock<Arc<Error>>,
    pub(crate) counters: EngineCounters,
    /// What the database asks of its storage.
    io: Arc<IoCounters>,
}

impl DbInner {
    /// Loads the state the latest manifest describes (no SST is read) once this process holds the
    /// directory (`writer_lock`); `resolve` opens the directories of files that live outside it.
    pub(crate) fn open(
        storage: StorageRef,
        options: DbOptions,
        resolve: &dyn Fn(&str) -> Result<StorageRef>,
        session: u64,
    ) -> Result<Arc<DbInner>> {
        let metered = MeteredStorage::new(storage);
        let io = metered.counters();
        let storage: StorageRef = Arc::new(metered);
        let cache = Arc::new(if options.memtables_charged_to_cache {
            BlockCache::new(options.block_cache_bytes)
        } else {
            let memtable_budget =
                options.memtable_bytes * (options.max_frozen_memtables as u64 + 1);
            BlockCache::with_index_filter_tier(options.block_cache_bytes, memtable_budget)
        });
        let (manifest_number, mut data) = match block_on(read_latest_manifest(storage.as_ref()))? {
            Some(found) => found,
            None => (0, ManifestData { next_file_number: 1, ..Default::default() }),
        };
        let mut released = std::mem::take(&mut data.released);
        let in_directory = data.files.iter().filter(|f| f.location.is_none());
        let live: HashSet<&str> = in_directory.map(|f| f.path.as_str()).collect();
        let orphans = block_on(delete_orphans(storage.as_ref(), &live, &mut released))?;
        let given_away: HashSet<&str> = data
            .files
            .iter()
            .filter(|f| !f.owned && f.location.is_none())
            .map(|f| f.path.as_str())
            .chain(released.iter().map(String::as_str))
            .collect();
        let hand_overs: BTreeMap<String, u64> = std::mem::take(&mut data.hand_overs)
            .into_iter()
            .filter(|(name, _)| given_away.contains(name.as_str()))
            .collect();
        if orphans > 0 {
            tracing::info!("deleted {orphans} SST files the manifest does not list");
        }
        let obsolete_files = Arc::new(ObsoleteFiles::default());
        let version = install::load_version(&storage, resolve, &cache, &obsolete_files, &data)?;
        cache.charge_tombstones(0, version.tombstone_memory());
        if manifest_number > 1 {
            // Left over from a crash between a manifest write and the cleanup after it.
            block_on(delete_manifests_before(storage.as_ref(), manifest_number - 1))?;
        }
        let instance = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
        let inner = Arc::new(DbInner {
            storage,
            cache,
            obsolete_files,
            session,
            next_file_number: AtomicU64::new(data.next_file_number),
            write_lock: Mutex::new(()),
            visible_seq: AtomicU64::new(data.last_seq),
            frozen_total: AtomicU64::new(0),
            super_version: RwLock::new(Arc::new(SuperVersion::new(
                Arc::new(MemTable::new(options.memtable_bytes)),
                Vec::new(),
                Arc::new(version),
            ))),
            meta: Mutex::new(MetaState {
                manifest_number,
                released,
                released_held: HashMap::new(),
                hand_overs,
            }),
            families: RwLock::new(
                data.column_families
                    .iter()
                    .map(|(name, id)| (name.clone(), ColumnFamily::new(*id, name, instance)))
                    .collect(),
            ),
            instance,
            compaction_lock: RwLock::new(()),
            compactions: Compactions::default(),
            memtables_charged: Mutex::new(0),
            ttl: TtlFilters::default(),
            background: Mutex::new(BackgroundState::default()),
            background_changed: Condvar::new(),
            closed: AtomicBool::new(false),
            failure: OnceLock::new(),
            counters: EngineCounters::default(),
            io,
            options,
        });
        // Panics of work on the I/O runtime for this database (deletions, disk cache downloads)
        // fail it, as its threads' panics do.
        let failing = Arc::downgrade(&inner);
        let fail: PanicHook = Arc::new(move |panicked| {
            if let Some(inner) = failing.upgrade() {
                inner.fail(panicked);
            }
        });
        inner.storage.on_background_panic(fail.clone());
        inner.obsolete_files.on_panic(move |panicked| fail(panicked));
        if manifest_number == 0 {
            // Claim the directory: a second opener racing on an empty directory fails here.
            let mut meta = inner.meta.lock().recover();
            let version = inner.current().version.clone();
            inner.persist(&mut meta, &version)?;
        }
        Ok(inner)
    }

    /// Fails if the database is closed or failed (naming the error that failed it).
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("database is closed".into()));
        }
        match self.failure.get() {
            Some(cause) => Err(Error::Failed(cause.clone())),
            None => Ok(()),
        }
    }

    /// Marks the database closed; true only for the first caller, who then stops it.
    pub(crate) fn mark_closed(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    /// Whether background work failed for good (see `fail`).
    pub(crate) fn failed(&self) -> bool {
        self.failure.get().is_some()
    }

    pub(crate) fn io(&self) -> &IoCounters {
        &self.io
    }

    pub(crate) fn current(&self) -> Arc<SuperVersion> {
        self.super_version.read().recover().clone()
    }

    pub(crate) fn visible_seq(&self) -> SeqNo {
        self.visible_seq.load(Ordering::Acquire)
    }

    pub(crate) fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::Relaxed)
    }

    /// Tells the block cache what the memtables hold (it gives their idle room to index and
    /// filter partitions, or its blocks give way to them): called after writes and after a flush
    /// lets a memtable go. The memtables are read under the lock, so the last caller charges the
    /// newest state.
    pub(crate) fn charge_memtables(&self) {
        let mut charged = self.memtables_charged.lock().recover();
        let bytes = self.current().memtable_bytes();
        if bytes != *charged {
            self.cache.charge_memtables(*charged, bytes);
            *charged = bytes;
        }
    }
}

/// Writes tell the cache what the memtables hold each time the active one grows past a multiple
/// of this size: 1/16 of a memtable, at most 256 KiB.
pub(crate) fn memtable_charge_step(memtable_bytes: u64) -> u64 {
    (memtable_bytes / 16).clamp(4 << 10, 256 << 10)
}

/// Used by the read path to get a consistent (snapshot, super version) pair. The super version is
/// taken first: every entry of its files was visible when they were installed, so the snapshot
/// read after it covers them all. (Snapshot first would let a flush or compaction installed in
/// between collapse a key to an entry newer than the snapshot, and the read would miss the key.)
/// Writes published after the super version was taken land in its memtable (all of a batch, as
/// the snapshot covers whole batches) or in a newer one it does not hold (none of that batch):
/// either way the reader sees a prefix of the writes, and every write finished before the read
/// started.
pub(crate) fn read_view(inner: &DbInner) -> (SeqNo, Arc<SuperVersion>) {
    let sv = inner.current();
    (inner.visible_seq(), sv)
}
