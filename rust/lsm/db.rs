//! The database: opening and closing, the write path, column families, and the state that the
//! read path, flush and compaction share.
//!
//! Durability: there is no write-ahead log. A write is durable once its memtable is flushed and a
//! manifest lists the new file; a crash loses what was written after the last flush, by design
//! (Flink restores from its last checkpoint, which flushes first).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::lsm::batch::{BatchOp, WriteBatch};
use crate::lsm::cache::BlockCache;
use crate::lsm::column_family::{ColumnFamily, family_range, id_for_name, prefixed_key};
use crate::lsm::db_iterator::DbIterator;
use crate::lsm::key::{MAX_SEQ, SeqNo};
use crate::lsm::memtable::MemTable;
use crate::lsm::options::{DbOptions, NUM_LEVELS};
use crate::lsm::range_tombstone::RangeTombstone;
use crate::lsm::read::ScanRange;
use crate::lsm::sst::MAX_ENTRY_BYTES;
use crate::lsm::stats::{DbStats, EngineCounters};
use crate::lsm::ttl::{TtlFilter, TtlFilters};
use crate::lsm::version::manifest::{
    FileRecord, ManifestData, delete_manifests_before, manifest_path, read_latest_manifest,
    split_location, write_manifest,
};
use crate::lsm::version::{ObsoleteFiles, TableFile, Version, delete_orphans};
use crate::lsm::writer_lock;
use crate::lsm::{compaction, flush, read};
use crate::storage::{
    IoCounters, MeteredStorage, StorageOptions, StorageRef, block_on, open_storage,
};
use crate::{Error, Result};

/// Source of `DbInner::instance`.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// What a read needs, captured at once: the active memtable, frozen memtables waiting for flush
/// (newest first) and the current version.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    pub frozen: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

/// Guarded by one mutex that serializes manifest writes.
pub(crate) struct MetaState {
    manifest_number: u64,
    /// See `ManifestData::released`.
    released: Vec<String>,
}

#[derive(Default)]
pub(crate) struct BackgroundState {
    pub shutdown: bool,
    /// Memtables flushed since open, in the order they were frozen (see `DbInner::frozen_total`).
    pub flushes_done: u64,
    pub compaction_requested: bool,
    /// Writers waiting for a frozen memtable to be flushed (they hold no lock meanwhile).
    pub stalled_writers: usize,
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
    /// One compaction at a time, background or manual.
    pub compaction_lock: Mutex<()>,
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

/// An open database. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Db {
    pub(crate) inner: Arc<DbInner>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl Db {
    /// Opens (or creates) the database at a storage URL (`file:///...`, `memory://name`,
    /// `s3://bucket/prefix`).
    pub fn open(url: &str, options: DbOptions) -> Result<Db> {
        Self::open_with_storage(open_storage(url, &StorageOptions::default())?, options)
    }

    pub fn open_with_storage(storage: StorageRef, options: DbOptions) -> Result<Db> {
        Self::open_resolving(storage, options, &|url| open_storage(url, &StorageOptions::default()))
    }

    /// As `open_with_storage`; `resolve` opens the directories (URLs) of the files that live
    /// outside the database's own (checkpoint files restored by reference).
    pub fn open_resolving(
        storage: StorageRef,
        options: DbOptions,
        resolve: &dyn Fn(&str) -> Result<StorageRef>,
    ) -> Result<Db> {
        options.validate()?;
        let mut session = [0u8; 8];
        getrandom::fill(&mut session).map_err(|e| Error::io("getrandom", e))?;
        let session = u64::from_le_bytes(session);
        block_on(writer_lock::acquire(storage.as_ref(), session))?;
        Self::open_claimed(storage.clone(), options, resolve, session).inspect_err(|_| {
            block_on(writer_lock::release(storage.as_ref()));
        })
    }

    /// Opens the database once this process holds the directory (`writer_lock`).
    fn open_claimed(
        storage: StorageRef,
        options: DbOptions,
        resolve: &dyn Fn(&str) -> Result<StorageRef>,
        session: u64,
    ) -> Result<Db> {
        let metered = MeteredStorage::new(storage);
        let io = metered.counters();
        let storage: StorageRef = Arc::new(metered);
        let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
        let (manifest_number, mut data) = match block_on(read_latest_manifest(storage.as_ref()))? {
            Some(found) => found,
            None => (0, ManifestData { next_file_number: 1, ..Default::default() }),
        };
        let mut released = std::mem::take(&mut data.released);
        let in_directory = data.files.iter().filter(|f| f.location.is_none());
        let live: HashSet<&str> = in_directory.map(|f| f.path.as_str()).collect();
        let orphans = block_on(delete_orphans(storage.as_ref(), &live, &mut released))?;
        if orphans > 0 {
            tracing::info!("deleted {orphans} SST files the manifest does not list");
        }
        let obsolete_files = Arc::new(ObsoleteFiles::default());
        let version = load_version(&storage, resolve, &cache, &obsolete_files, &data)?;
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
            super_version: RwLock::new(Arc::new(SuperVersion {
                mem: Arc::new(MemTable::new()),
                frozen: Vec::new(),
                version: Arc::new(version),
            })),
            meta: Mutex::new(MetaState { manifest_number, released }),
            families: RwLock::new(
                data.column_families
                    .iter()
                    .map(|(name, id)| (name.clone(), ColumnFamily::new(*id, name, instance)))
                    .collect(),
            ),
            instance,
            compaction_lock: Mutex::new(()),
            ttl: TtlFilters::default(),
            background: Mutex::new(BackgroundState::default()),
            background_changed: Condvar::new(),
            closed: AtomicBool::new(false),
            failure: OnceLock::new(),
            counters: EngineCounters::default(),
            io,
            options,
        });
        if manifest_number == 0 {
            // Claim the directory: a second opener racing on an empty directory fails here.
            let mut meta = inner.meta.lock().unwrap();
            let version = inner.current().version.clone();
            inner.persist(&mut meta, &version)?;
        }
        let workers = vec![
            spawn_worker("forst-flush", &inner, flush::run_flush_worker),
            spawn_worker("forst-compact", &inner, compaction::run_compaction_worker),
        ];
        inner.request_compaction();
        Ok(Db { inner, workers: Mutex::new(workers) })
    }

    /// Creates a column family, or returns the existing one of that name.
    pub fn create_cf(&self, name: &str) -> Result<ColumnFamily> {
        self.inner.check_open()?;
        if let Some(cf) = self.cf(name) {
            return Ok(cf);
        }
        let mut meta = self.inner.meta.lock().unwrap();
        let cf = {
            let mut families = self.inner.families.write().unwrap();
            if let Some(cf) = families.get(name) {
                return Ok(cf.clone());
            }
            let id = id_for_name(name, |id| families.values().any(|used| used.id == id));
            let cf = ColumnFamily::new(id, name, self.inner.instance);
            families.insert(name.to_string(), cf.clone());
            cf
        };
        let version = self.inner.current().version.clone();
        if let Err(e) = self.inner.persist(&mut meta, &version) {
            self.inner.families.write().unwrap().remove(name);
            return Err(e);
        }
        Ok(cf)
    }

    pub fn cf(&self, name: &str) -> Option<ColumnFamily> {
        self.inner.families.read().unwrap().get(name).cloned()
    }

    pub fn cf_names(&self) -> Vec<String> {
        self.inner.families.read().unwrap().keys().cloned().collect()
    }

    /// Drops a column family and all of its data (one range deletion; compaction reclaims space).
    /// Every handle of it is refused from now on, also once a family of the same name exists.
    pub fn drop_cf(&self, cf: &ColumnFamily) -> Result<()> {
        self.inner.check_open()?;
        self.inner.check_family(cf)?;
        if self.cf(cf.name()).as_ref() != Some(cf) {
            return Err(Error::invalid(format!("no column family {:?}", cf.name())));
        }
        // Refused first, so that no write through a handle lands after the range deletion.
        cf.mark_dropped();
        let mut batch = WriteBatch::new();
        batch.delete_prefix(cf, &[]);
        self.apply(&batch, false)?;
        let mut meta = self.inner.meta.lock().unwrap();
        self.inner.families.write().unwrap().remove(cf.name());
        self.inner.ttl.set(cf.id, None);
        let version = self.inner.current().version.clone();
        self.inner.persist(&mut meta, &version)
    }

    /// Sets (or with `None` clears) the TTL filter compactions apply to `cf` (see `lsm::ttl`).
    pub fn set_ttl_filter(&self, cf: &ColumnFamily, filter: Option<TtlFilter>) -> Result<()> {
        self.inner.check_open()?;
        if self.cf(cf.name()).as_ref() != Some(cf) {
            return Err(Error::invalid(format!("no column family {:?}", cf.name())));
        }
        self.inner.ttl.set(cf.id, filter);
        Ok(())
    }

    pub fn put(&self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(cf, key, value);
        self.write(&batch)
    }

    pub fn delete(&self, cf: &ColumnFamily, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(cf, key);
        self.write(&batch)
    }

    /// Appends to the list at `key` (Flink list state layout, see `lsm::merge`).
    pub fn merge(&self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.merge(cf, key, value);
        self.write(&batch)
    }

    /// Deletes every key in [start, end) of `cf`.
    pub fn delete_range(&self, cf: &ColumnFamily, start: &[u8], end: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_range(cf, start, end);
        self.write(&batch)
    }

    pub fn get(&self, cf: &ColumnFamily, key: &[u8]) -> Result<Option<Bytes>> {
        self.inner.check_family(cf)?;
        let key = prefixed_key(cf.id, key);
        Ok(read::multi_get(&self.inner, std::slice::from_ref(&key), &[])?.pop().flatten())
    }

    /// Reads many keys of any column families at once; their block reads from storage are
    /// issued concurrently. Results are in the order of `keys`.
    pub fn multi_get(&self, keys: &[(&ColumnFamily, &[u8])]) -> Result<Vec<Option<Bytes>>> {
        self.multi_get_and_prefetch(keys, &[])
    }

    /// `multi_get`, with the first blocks of the prefix scans the caller runs next loaded into
    /// the block cache in the same flight of requests: a batch's gets, scans and prefix checks
    /// wait for one round trip together, not one each.
    pub fn multi_get_and_prefetch(
        &self,
        keys: &[(&ColumnFamily, &[u8])],
        scans: &[ScanBounds<'_>],
    ) -> Result<Vec<Option<Bytes>>> {
        keys.iter().try_for_each(|(cf, _)| self.inner.check_family(cf))?;
        scans.iter().try_for_each(|(cf, _, _)| self.inner.check_family(cf))?;
        let keys: Vec<Bytes> = keys.iter().map(|(cf, key)| prefixed_key(cf.id, key)).collect();
        let scans: Vec<ScanRange> = scans
            .iter()
            .map(|&(cf, start, end)| ScanRange {
                start: prefixed_key(cf.id, start),
                end: end.map_or_else(|| family_range(cf.id).1, |end| prefixed_key(cf.id, end)),
            })
            .collect();
        read::multi_get(&self.inner, &keys, &scans)
    }

    /// Iterates the keys of `cf` in [start, end) (`None`: unbounded), as of now.
    pub fn iter(
        &self,
        cf: &ColumnFamily,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<DbIterator> {
        self.inner.check_family(cf)?;
        DbIterator::new(&self.inner, cf, start, end)
    }

    /// Iterates the keys of `cf` that start with `prefix`, as of now.
    pub fn iter_prefix(&self, cf: &ColumnFamily, prefix: &[u8]) -> Result<DbIterator> {
        self.inner.check_family(cf)?;
        DbIterator::with_prefix(&self.inner, cf, prefix)
    }

    /// Applies a batch atomically: readers see all of it or none of it.
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.apply(batch, true)
    }

    /// `write`; `check_families: false` skips the check of the batch's handles (`drop_cf` writes
    /// through the one it just refused).
    fn apply(&self, batch: &WriteBatch, check_families: bool) -> Result<()> {
        self.inner.check_open()?;
        if batch.is_empty() {
            return Ok(());
        }
        // Refuse what no SST could hold now, rather than fail every flush later.
        if let Some(len) = batch.ops.iter().map(BatchOp::entry_bytes).find(|&n| n > MAX_ENTRY_BYTES)
        {
            return Err(Error::invalid(format!(
                "entry of {len} bytes exceeds the limit of {MAX_ENTRY_BYTES} bytes for key + value"
            )));
        }
        // Wait for room without the write lock: a stalled writer must not hold up a checkpoint's
        // synchronous phase (or other writers' checks) for as long as a flush takes.
        let _writer = loop {
            self.inner.wait_for_memtable_room()?;
            let writer = self.inner.write_lock.lock().unwrap();
            if self.inner.has_memtable_room() {
                break writer;
            }
        };
        // Under the write lock: a family dropped before this point has its range deletion at a
        // lower sequence number, so a write accepted here can never outlive the drop.
        if check_families {
            batch.families.iter().try_for_each(|cf| self.inner.check_family(cf))?;
        }
        let mem = self.inner.current().mem.clone();
        let mut seq = self.inner.visible_seq.load(Ordering::Acquire);
        if seq + batch.len() as u64 > MAX_SEQ {
            return Err(Error::invalid("sequence numbers exhausted"));
        }
        for op in &batch.ops {
            seq += 1;
            match op {
                BatchOp::Write { kind, key, value } => {
                    mem.insert(key.clone(), seq, *kind, value.clone())
                }
                BatchOp::DeleteRange { start, end } => mem.add_tombstone(RangeTombstone {
                    start: start.clone(),
                    end: end.clone(),
                    seq,
                }),
            }
        }
        // Publish only after the whole batch is in the memtable.
        self.inner.visible_seq.store(seq, Ordering::Release);
        self.inner.counters.written(batch.ops.iter().map(|op| op.entry_bytes() as u64).sum());
        if mem.approximate_bytes() >= self.inner.options.memtable_bytes {
            self.inner.freeze_memtable();
        }
        Ok(())
    }

    /// Freezes the active memtable and hands it to the flush thread. Does no I/O and does not
    /// wait: a checkpoint's synchronous phase calls this.
    pub fn freeze_memtable(&self) -> Result<()> {
        self.inner.check_open()?;
        let _writer = self.inner.write_lock.lock().unwrap();
        self.inner.freeze_memtable();
        Ok(())
    }

    /// Flushes everything written so far and waits until it is durable in a manifest. A flush
    /// failing with a transient error is retried in the background meanwhile; one that fails for
    /// good fails the database, and this returns that failure.
    pub fn flush(&self) -> Result<()> {
        self.freeze_memtable()?;
        // Memtables flush in the order they were frozen.
        let frozen = self.inner.frozen_total.load(Ordering::Acquire);
        let inner = &self.inner;
        let mut background = inner.background.lock().unwrap();
        loop {
            if background.flushes_done >= frozen {
                return Ok(());
            }
            inner.check_running(&background, "database closed during flush")?;
            background = inner.background_changed.wait(background).unwrap();
        }
    }

    /// Compacts every file into the last level, settling all deletes and merges.
    pub fn compact_all(&self) -> Result<()> {
        self.inner.check_open()?;
        compaction::compact_all(&self.inner)
    }

    /// Runs background-style compactions until no level needs one.
    pub fn compact_until_settled(&self) -> Result<()> {
        self.inner.check_open()?;
        while compaction::run_one_compaction(&self.inner)? {}
        Ok(())
    }

    /// Waits until every file that left the tree so far and has no reader, iterator or
    /// checkpoint left is deleted from storage (or its deletion failed, which is logged).
    pub fn wait_for_file_deletions(&self) {
        self.inner.obsolete_files.wait_idle();
    }

    /// Whether the current version lists the file `name` (a path relative to the database's
    /// directory): a file handed over to a checkpoint that the database still reads.
    pub fn holds_file(&self, name: &str) -> bool {
        self.inner.current().version.files().any(|f| f.path == name)
    }

    /// Counts one batch the executor ran (see `DbStats::batches`).
    pub fn record_batch(&self, requests: usize, took: std::time::Duration) {
        self.inner.counters.batch(requests, took);
    }

    pub fn stats(&self) -> DbStats {
        let inner = &self.inner;
        let sv = inner.current();
        let frozen_entries = sv.frozen.iter().map(|m| m.entries()).sum::<u64>();
        let mut stats = DbStats {
            block_cache_hits: inner.cache.hits(),
            block_cache_misses: inner.cache.misses(),
            block_cache_bytes: inner.cache.usage_bytes(),
            block_cache_capacity: inner.options.block_cache_bytes,
            block_cache_data_bytes: inner.cache.data_bytes(),
            block_cache_index_filter_bytes: inner.cache.index_filter_bytes(),
            index_filter_bytes_loaded: inner.cache.index_filter_bytes_inserted(),
            table_reader_bytes: inner.cache.reserved_bytes(),
            iterator_pinned_bytes: inner.cache.pinned_bytes(),
            memtable_bytes: sv.mem.approximate_bytes()
                + sv.frozen.iter().map(|m| m.approximate_bytes()).sum::<u64>(),
            active_memtable_bytes: sv.mem.approximate_bytes(),
            active_memtable_entries: sv.mem.entries(),
            frozen_memtable_entries: frozen_entries,
            frozen_memtables: sv.frozen.len(),
            stalled_writers: inner.background.lock().unwrap().stalled_writers,
            files_per_level: sv.version.levels.iter().map(|l| l.len()).collect(),
            bytes_per_level: (0..NUM_LEVELS).map(|l| sv.version.level_bytes(l)).collect(),
            sst_entries: sv.version.files().map(|f| f.props().entries).sum(),
            ttl_removed_entries: inner.ttl.removed(),
            ttl_trimmed_lists: inner.ttl.trimmed(),
            range_tombstones: sv.version.tombstones.len(),
            compaction_pending: compaction::picker::pick(&sv.version, &inner.options).is_some(),
            pending_compaction_bytes: compaction::picker::pending_bytes(
                &sv.version,
                &inner.options,
            ),
            failed: inner.failure.get().is_some(),
            io: inner.io.snapshot(),
            disk_cache: inner.storage.disk_cache_stats().unwrap_or_default(),
            ..DbStats::default()
        };
        inner.counters.fill(&mut stats);
        stats
    }

    /// Stops background work and waits for the deletions of obsolete files already issued, so
    /// that a closed database leaves only its live files (and whatever readers, iterators or
    /// checkpoints still hold). Data not flushed is dropped (no WAL, see the module docs).
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.background.lock().unwrap().shutdown = true;
        self.inner.notify_background();
        for worker in self.workers.lock().unwrap().drain(..) {
            let _ = worker.join();
        }
        self.inner.obsolete_files.wait_idle();
        block_on(writer_lock::release(self.inner.storage.as_ref()));
        Ok(())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl DbInner {
    /// Fails if the database is closed or failed (naming the error that failed it).
    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("database is closed".into()));
        }
        match self.failure.get() {
            Some(cause) => Err(Error::Failed(cause.clone())),
            None => Ok(()),
        }
    }

    /// For waiters on `background_changed`: fails once the database failed or shuts down.
    pub(crate) fn check_running(&self, background: &BackgroundState, closing: &str) -> Result<()> {
        if let Some(cause) = self.failure.get() {
            return Err(Error::Failed(cause.clone()));
        }
        if background.shutdown {
            return Err(Error::Closed(closing.into()));
        }
        Ok(())
    }

    /// For the background threads: true once they must stop (shutdown, or the database failed).
    pub(crate) fn stopped(&self, background: &BackgroundState) -> bool {
        background.shutdown || self.failure.get().is_some()
    }

    /// Stops the database after background work failed for good: every later call fails with
    /// `error` as its cause, and waiters wake up to that.
    pub(crate) fn fail(&self, error: Error) {
        tracing::error!("database {} failed, refusing every call: {error}", self.storage.url());
        let _ = self.failure.set(Arc::new(error));
        self.notify_background();
    }

    /// Waits `delay` before background work is retried; false if the database shuts down first.
    pub(crate) fn pause_before_retry(&self, delay: Duration) -> bool {
        let background = self.background.lock().unwrap();
        let (background, _) =
            self.background_changed.wait_timeout_while(background, delay, |b| !b.shutdown).unwrap();
        !background.shutdown
    }

    pub fn current(&self) -> Arc<SuperVersion> {
        self.super_version.read().unwrap().clone()
    }

    /// Column families by name, as the manifest stores them.
    pub fn column_families(&self) -> Vec<(String, u32)> {
        let families = self.families.read().unwrap();
        families.iter().map(|(name, cf)| (name.clone(), cf.id)).collect()
    }

    /// Fails unless `cf` is a live family of this database.
    pub(crate) fn check_family(&self, cf: &ColumnFamily) -> Result<()> {
        cf.check(self.instance)
    }

    pub fn visible_seq(&self) -> SeqNo {
        self.visible_seq.load(Ordering::Acquire)
    }

    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::Relaxed)
    }

    /// Freezes the active memtable and wakes the flush thread. Caller holds the write lock, so no
    /// insert races with the swap.
    pub(crate) fn freeze_memtable(&self) {
        self.freeze_memtable_quietly();
        self.notify_background();
    }

    /// Wakes every waiter on `background_changed` after a change they check. The lock is taken
    /// first so that a waiter between its check and its wait cannot miss the wake-up.
    pub(crate) fn notify_background(&self) {
        drop(self.background.lock().unwrap());
        self.background_changed.notify_all();
    }

    /// Freezes without waking anyone: on a busy machine the woken flush thread takes the caller's
    /// core for a scheduler slice (milliseconds), which a checkpoint's synchronous phase must not
    /// pay. Whoever calls this wakes the flush thread later.
    pub(crate) fn freeze_memtable_quietly(&self) {
        let mut sv = self.super_version.write().unwrap();
        if sv.mem.is_empty() {
            return;
        }
        let mut frozen = vec![sv.mem.clone()];
        frozen.extend(sv.frozen.iter().cloned());
        *sv = Arc::new(SuperVersion {
            mem: Arc::new(MemTable::new()),
            frozen,
            version: sv.version.clone(),
        });
        self.frozen_total.fetch_add(1, Ordering::AcqRel);
    }

    fn has_memtable_room(&self) -> bool {
        self.current().frozen.len() < self.options.max_frozen_memtables
    }

    /// Stalls the writer while too many frozen memtables wait for flush; bounded memory wins over
    /// latency. Fails if the database fails meanwhile (a flush that cannot succeed), so writers
    /// learn about it. The caller holds no lock, so room may be gone again when it takes the write
    /// lock.
    fn wait_for_memtable_room(&self) -> Result<()> {
        let mut background = self.background.lock().unwrap();
        let mut stalled = false;
        let started = Instant::now();
        let outcome = loop {
            if self.has_memtable_room() {
                break Ok(());
            }
            if let Err(e) = self.check_running(&background, "database is closed") {
                break Err(e);
            }
            if !stalled {
                stalled = true;
                background.stalled_writers += 1;
                self.background_changed.notify_all();
            }
            background = self.background_changed.wait(background).unwrap();
        };
        if stalled {
            self.counters.stalled(started.elapsed());
            background.stalled_writers -= 1;
            self.background_changed.notify_all();
        }
        outcome
    }

    pub fn request_compaction(&self) {
        if self.options.auto_compaction {
            self.background.lock().unwrap().compaction_requested = true;
            self.background_changed.notify_all();
        }
    }

    /// Applies a version change durably: under the meta lock, `edit` changes a copy of the current
    /// version (so concurrent flush and compaction never undo each other), the next manifest is
    /// written, the result becomes current, and files it dropped are let go. `flushed` leaves the
    /// frozen list in the same step.
    pub fn install_version(
        &self,
        edit: impl FnOnce(&mut Version),
        flushed: Option<&Arc<MemTable>>,
    ) -> Result<()> {
        let mut meta = self.meta.lock().unwrap();
        let current = self.current().version.clone();
        let mut version = (*current).clone();
        edit(&mut version);
        version.forget_spent_tombstones();
        let kept: HashSet<u64> = version.files().map(|f| f.number).collect();
        let given_away = current
            .files()
            .filter(|f| !kept.contains(&f.number) && !f.is_owned() && f.location.is_none());
        let released_before = meta.released.len();
        meta.released.extend(given_away.map(|f| f.path.clone()));
        if let Err(e) = self.persist(&mut meta, &version) {
            meta.released.truncate(released_before);
            return Err(e);
        }
        let mut sv = self.super_version.write().unwrap();
        let old = sv.version.clone();
        let frozen = sv
            .frozen
            .iter()
            .filter(|m| !flushed.is_some_and(|f| Arc::ptr_eq(f, m)))
            .cloned()
            .collect();
        let version = Arc::new(version);
        if let Some(memtable) = flushed {
            memtable.set_flushed_into(version.clone());
        }
        *sv = Arc::new(SuperVersion { mem: sv.mem.clone(), frozen, version });
        drop(sv);
        drop(meta);
        old.files().filter(|f| !kept.contains(&f.number)).for_each(|f| f.mark_obsolete());
        self.notify_background();
        Ok(())
    }

    /// Gives `files` away (see `TableFile::disown`) and records it in a new manifest: those
    /// still live as external, the others (a compaction replaced them since they were pinned)
    /// among the released files, so that open does not collect them as orphans. On failure the
    /// files this call disowned are owned again.
    pub fn give_away(&self, files: &[Arc<TableFile>]) -> Result<()> {
        let mut meta = self.meta.lock().unwrap();
        let disowned: Vec<&Arc<TableFile>> = files.iter().filter(|f| f.is_owned()).collect();
        if disowned.is_empty() {
            return Ok(());
        }
        disowned.iter().for_each(|f| f.disown());
        let current = self.current().version.clone();
        let live: HashSet<u64> = current.files().map(|f| f.number).collect();
        let released_before = meta.released.len();
        let dropped = disowned.iter().filter(|f| !live.contains(&f.number));
        meta.released.extend(dropped.map(|f| f.path.clone()));
        if let Err(e) = self.persist(&mut meta, &current) {
            meta.released.truncate(released_before);
            disowned.iter().for_each(|f| f.own_again());
            return Err(e);
        }
        Ok(())
    }

    /// Edits of the version go through here with the meta lock held, so the version passed is the
    /// one to persist and manifests are numbered without gaps.
    fn persist(&self, meta: &mut MutexGuard<'_, MetaState>, version: &Version) -> Result<()> {
        let data = ManifestData {
            last_seq: self.visible_seq(),
            next_file_number: self.next_file_number.load(Ordering::Relaxed),
            column_families: self.column_families(),
            tombstones: version.tombstones.clone(),
            files: version
                .levels
                .iter()
                .enumerate()
                .flat_map(|(level, files)| files.iter().map(move |f| FileRecord::of(level, f)))
                .collect(),
            released: meta.released.clone(),
        };
        let number = meta.manifest_number + 1;
        block_on(write_manifest(self.storage.as_ref(), number, &data))?;
        meta.manifest_number = number;
        // Keep the previous manifest too; the one before it is garbage (numbers have no gaps).
        if number > 2
            && let Err(e) = block_on(self.storage.delete(&manifest_path(number - 2)))
        {
            tracing::warn!("cannot delete an old manifest: {e}");
        }
        Ok(())
    }
}

/// The version a manifest describes; no file is read (tables open on first use).
fn load_version(
    storage: &StorageRef,
    resolve: &dyn Fn(&str) -> Result<StorageRef>,
    cache: &Arc<BlockCache>,
    obsolete_files: &Arc<ObsoleteFiles>,
    data: &ManifestData,
) -> Result<Version> {
    let mut version = Version { tombstones: data.tombstones.clone(), ..Default::default() };
    let mut elsewhere: HashMap<&str, StorageRef> = HashMap::new();
    for record in &data.files {
        let level = record.level as usize;
        if level >= NUM_LEVELS {
            return Err(Error::corruption(
                "manifest",
                0,
                format!("file {} at level {level}", record.path),
            ));
        }
        let holder = match record.location.as_deref() {
            None => storage.clone(),
            Some(location) => {
                let (dir, _) = split_location(location).ok_or_else(|| {
                    Error::corruption("manifest", 0, format!("bad file location {location:?}"))
                })?;
                match elsewhere.get(dir) {
                    Some(holder) => holder.clone(),
                    None => elsewhere.entry(dir).or_insert(resolve(dir)?).clone(),
                }
            }
        };
        let file = TableFile::from_record(record, holder, cache.clone(), obsolete_files.clone());
        version.levels[level].push(Arc::new(file));
    }
    Ok(version)
}

fn spawn_worker(name: &str, inner: &Arc<DbInner>, body: fn(&DbInner)) -> JoinHandle<()> {
    let inner = inner.clone();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || body(&inner))
        .expect("cannot spawn a background thread")
}

/// A range a caller is about to scan: family, start, and exclusive end (`None`: the family's
/// end).
pub type ScanBounds<'a> = (&'a ColumnFamily, &'a [u8], Option<&'a [u8]>);

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
