//! The database: opening and closing, the write path, column families, and the state that the
//! read path, flush and compaction share.
//!
//! Durability: there is no write-ahead log. A write is durable once its memtable is flushed and a
//! manifest lists the new file; a crash loses what was written after the last flush, by design
//! (Flink restores from its last checkpoint, which flushes first).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;

use crate::lsm::batch::{BatchOp, WriteBatch};
use crate::lsm::cache::BlockCache;
use crate::lsm::column_family::{ColumnFamily, id_for_name, prefixed_key};
use crate::lsm::db_iterator::DbIterator;
use crate::lsm::key::{MAX_SEQ, SeqNo};
use crate::lsm::memtable::MemTable;
use crate::lsm::options::{DbOptions, NUM_LEVELS};
use crate::lsm::range_tombstone::RangeTombstone;
use crate::lsm::sst::MAX_ENTRY_BYTES;
use crate::lsm::version::manifest::{
    FileRecord, ManifestData, delete_manifests_before, manifest_path, read_latest_manifest,
    write_manifest,
};
use crate::lsm::version::{TableFile, Version};
use crate::lsm::{compaction, flush, read};
use crate::storage::{StorageOptions, StorageRef, block_on, open_storage};
use crate::{Error, Result};

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
}

#[derive(Default)]
pub(crate) struct BackgroundState {
    pub shutdown: bool,
    /// Bumped on every failed flush, so a waiter can tell a failure that happened after it began.
    pub flush_failures: u64,
    pub last_flush_error: Option<String>,
    pub compaction_requested: bool,
    pub last_compaction_error: Option<String>,
}

pub(crate) struct DbInner {
    pub storage: StorageRef,
    pub options: DbOptions,
    pub cache: Arc<BlockCache>,
    /// Random per open; part of every new file name.
    pub session: u64,
    next_file_number: AtomicU64,
    /// Serializes writers: sequence numbers are handed out in order and a batch lands as a unit.
    pub(crate) write_lock: Mutex<()>,
    /// Highest sequence number visible to readers.
    visible_seq: AtomicU64,
    super_version: RwLock<Arc<SuperVersion>>,
    meta: Mutex<MetaState>,
    /// Column families by name. Changed only with `meta` held (they are in the manifest), but
    /// read without it: a checkpoint's synchronous phase must not wait behind a manifest write.
    families: RwLock<BTreeMap<String, u32>>,
    /// One compaction at a time, background or manual.
    pub compaction_lock: Mutex<()>,
    pub background: Mutex<BackgroundState>,
    pub background_changed: Condvar,
    closed: AtomicBool,
}

/// An open database. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Db {
    pub(crate) inner: Arc<DbInner>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Debug, Clone, Default)]
pub struct DbStats {
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_bytes: u64,
    pub memtable_bytes: u64,
    pub frozen_memtables: usize,
    pub files_per_level: Vec<usize>,
    pub bytes_per_level: Vec<u64>,
    /// Fragments of live range deletes in the version (flushed and not yet spent).
    pub range_tombstones: usize,
}

impl Db {
    /// Opens (or creates) the database at a storage URL (`file:///...`, `memory://name`,
    /// `s3://bucket/prefix`).
    pub fn open(url: &str, options: DbOptions) -> Result<Db> {
        Self::open_with_storage(open_storage(url, &StorageOptions::default())?, options)
    }

    pub fn open_with_storage(storage: StorageRef, options: DbOptions) -> Result<Db> {
        validate(&options)?;
        let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
        let (manifest_number, data) = match block_on(read_latest_manifest(storage.as_ref()))? {
            Some(found) => found,
            None => (0, ManifestData { next_file_number: 1, ..Default::default() }),
        };
        let version = load_version(&storage, &cache, &data)?;
        if manifest_number > 1 {
            // Left over from a crash between a manifest write and the cleanup after it.
            block_on(delete_manifests_before(storage.as_ref(), manifest_number - 1))?;
        }
        let mut session = [0u8; 8];
        getrandom::fill(&mut session).map_err(|e| Error::io("getrandom", e))?;
        let inner = Arc::new(DbInner {
            storage,
            cache,
            session: u64::from_le_bytes(session),
            next_file_number: AtomicU64::new(data.next_file_number),
            write_lock: Mutex::new(()),
            visible_seq: AtomicU64::new(data.last_seq),
            super_version: RwLock::new(Arc::new(SuperVersion {
                mem: Arc::new(MemTable::new()),
                frozen: Vec::new(),
                version: Arc::new(version),
            })),
            meta: Mutex::new(MetaState { manifest_number }),
            families: RwLock::new(data.column_families.into_iter().collect()),
            compaction_lock: Mutex::new(()),
            background: Mutex::new(BackgroundState::default()),
            background_changed: Condvar::new(),
            closed: AtomicBool::new(false),
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
        let id = {
            let mut families = self.inner.families.write().unwrap();
            if let Some(&id) = families.get(name) {
                return Ok(ColumnFamily { id, name: name.into() });
            }
            let id = id_for_name(name, |id| families.values().any(|&used| used == id));
            families.insert(name.to_string(), id);
            id
        };
        let version = self.inner.current().version.clone();
        if let Err(e) = self.inner.persist(&mut meta, &version) {
            self.inner.families.write().unwrap().remove(name);
            return Err(e);
        }
        Ok(ColumnFamily { id, name: name.into() })
    }

    pub fn cf(&self, name: &str) -> Option<ColumnFamily> {
        let families = self.inner.families.read().unwrap();
        families.get(name).map(|&id| ColumnFamily { id, name: name.into() })
    }

    pub fn cf_names(&self) -> Vec<String> {
        self.inner.families.read().unwrap().keys().cloned().collect()
    }

    /// Drops a column family and all of its data (one range deletion; compaction reclaims space).
    pub fn drop_cf(&self, cf: &ColumnFamily) -> Result<()> {
        self.inner.check_open()?;
        if self.cf(cf.name()).as_ref() != Some(cf) {
            return Err(Error::invalid(format!("no column family {:?}", cf.name())));
        }
        let mut batch = WriteBatch::new();
        batch.delete_prefix(cf, &[]);
        self.write(&batch)?;
        let mut meta = self.inner.meta.lock().unwrap();
        self.inner.families.write().unwrap().remove(cf.name());
        let version = self.inner.current().version.clone();
        self.inner.persist(&mut meta, &version)
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
        let key = prefixed_key(cf.id, key);
        Ok(read::multi_get(&self.inner, std::slice::from_ref(&key))?.pop().flatten())
    }

    /// Reads many keys of any column families at once; their block reads from storage are
    /// issued concurrently. Results are in the order of `keys`.
    pub fn multi_get(&self, keys: &[(&ColumnFamily, &[u8])]) -> Result<Vec<Option<Bytes>>> {
        let keys: Vec<Bytes> = keys.iter().map(|(cf, key)| prefixed_key(cf.id, key)).collect();
        read::multi_get(&self.inner, &keys)
    }

    /// Iterates the keys of `cf` in [start, end) (`None`: unbounded), as of now.
    pub fn iter(
        &self,
        cf: &ColumnFamily,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<DbIterator> {
        DbIterator::new(&self.inner, cf, start, end)
    }

    /// Iterates the keys of `cf` that start with `prefix`, as of now.
    pub fn iter_prefix(&self, cf: &ColumnFamily, prefix: &[u8]) -> Result<DbIterator> {
        DbIterator::with_prefix(&self.inner, cf, prefix)
    }

    /// Applies a batch atomically: readers see all of it or none of it.
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
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
        let _writer = self.inner.write_lock.lock().unwrap();
        self.inner.wait_for_memtable_room()?;
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

    /// Flushes everything written so far and waits until it is durable in a manifest.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_open()?;
        let failures_before = self.inner.background.lock().unwrap().flush_failures;
        self.freeze_memtable()?;
        let waiting_for = self.inner.current().frozen.clone();
        let mut background = self.inner.background.lock().unwrap();
        loop {
            let sv = self.inner.current();
            if !waiting_for.iter().any(|m| sv.frozen.iter().any(|f| Arc::ptr_eq(f, m))) {
                return Ok(());
            }
            if background.flush_failures > failures_before {
                let message = background.last_flush_error.clone().unwrap_or_default();
                return Err(Error::io(
                    self.inner.storage.url(),
                    format!("flush failed: {message}"),
                ));
            }
            if background.shutdown {
                return Err(Error::Closed("database closed during flush".into()));
            }
            background = self
                .inner
                .background_changed
                .wait_timeout(background, Duration::from_millis(100))
                .unwrap()
                .0;
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

    pub fn stats(&self) -> DbStats {
        let sv = self.inner.current();
        DbStats {
            block_cache_hits: self.inner.cache.hits(),
            block_cache_misses: self.inner.cache.misses(),
            block_cache_bytes: self.inner.cache.usage_bytes(),
            memtable_bytes: sv.mem.approximate_bytes()
                + sv.frozen.iter().map(|m| m.approximate_bytes()).sum::<u64>(),
            frozen_memtables: sv.frozen.len(),
            files_per_level: sv.version.levels.iter().map(|l| l.len()).collect(),
            bytes_per_level: (0..NUM_LEVELS).map(|l| sv.version.level_bytes(l)).collect(),
            range_tombstones: sv.version.tombstones.len(),
        }
    }

    /// Stops background work. Data not flushed is dropped (no WAL, see the module docs).
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.background.lock().unwrap().shutdown = true;
        self.inner.background_changed.notify_all();
        for worker in self.workers.lock().unwrap().drain(..) {
            let _ = worker.join();
        }
        Ok(())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl DbInner {
    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("database is closed".into()));
        }
        Ok(())
    }

    pub fn current(&self) -> Arc<SuperVersion> {
        self.super_version.read().unwrap().clone()
    }

    /// Column families by name, as the manifest stores them.
    pub fn column_families(&self) -> Vec<(String, u32)> {
        let families = self.families.read().unwrap();
        families.iter().map(|(name, id)| (name.clone(), *id)).collect()
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
    }

    /// Stalls the writer while too many frozen memtables wait for flush; bounded memory wins over
    /// latency. Fails if flushing keeps failing, so writers learn about it.
    fn wait_for_memtable_room(&self) -> Result<()> {
        let mut background = self.background.lock().unwrap();
        let failures_before = background.flush_failures;
        while self.current().frozen.len() >= self.options.max_frozen_memtables {
            if background.shutdown {
                return Err(Error::Closed("database is closed".into()));
            }
            if background.flush_failures > failures_before + 2 {
                let message = background.last_flush_error.clone().unwrap_or_default();
                return Err(Error::io(
                    self.storage.url(),
                    format!("write stalled, flush failing: {message}"),
                ));
            }
            background = self
                .background_changed
                .wait_timeout(background, Duration::from_millis(100))
                .unwrap()
                .0;
        }
        Ok(())
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
        let mut version = (*self.current().version).clone();
        edit(&mut version);
        version.forget_spent_tombstones();
        self.persist(&mut meta, &version)?;
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
        let live: std::collections::HashSet<u64> = sv.version.files().map(|f| f.number).collect();
        drop(sv);
        drop(meta);
        old.files().filter(|f| !live.contains(&f.number)).for_each(|f| f.mark_obsolete());
        self.background_changed.notify_all();
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
    cache: &Arc<BlockCache>,
    data: &ManifestData,
) -> Result<Version> {
    let mut version = Version { tombstones: data.tombstones.clone(), ..Default::default() };
    for record in &data.files {
        let level = record.level as usize;
        if level >= NUM_LEVELS {
            return Err(Error::corruption(
                "manifest",
                0,
                format!("file {} at level {level}", record.path),
            ));
        }
        let file = TableFile::from_record(record, storage.clone(), cache.clone());
        version.levels[level].push(Arc::new(file));
    }
    Ok(version)
}

fn validate(options: &DbOptions) -> Result<()> {
    let checks = [
        (options.memtable_bytes >= 4096, "memtable_bytes must be at least 4096"),
        (options.max_frozen_memtables >= 1, "max_frozen_memtables must be at least 1"),
        (options.target_file_bytes >= 4096, "target_file_bytes must be at least 4096"),
        (options.l0_compaction_trigger >= 1, "l0_compaction_trigger must be at least 1"),
        (
            options.l0_stop_trigger > options.l0_compaction_trigger,
            "l0_stop_trigger must be larger than l0_compaction_trigger",
        ),
        (options.level_size_multiplier >= 2, "level_size_multiplier must be at least 2"),
        (options.table.block_size >= 64, "table.block_size must be at least 64"),
        (options.table.restart_interval >= 1, "table.restart_interval must be at least 1"),
    ];
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, message)) => Err(Error::invalid(message)),
        None => Ok(()),
    }
}

fn spawn_worker(name: &str, inner: &Arc<DbInner>, body: fn(&DbInner)) -> JoinHandle<()> {
    let inner = inner.clone();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || body(&inner))
        .expect("cannot spawn a background thread")
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
