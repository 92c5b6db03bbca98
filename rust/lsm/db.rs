//! The public database API, `Db`: a facade over the shared engine state (`lsm::db_state`) that
//! opens and closes it, checks handles and keys, and hands each call to the part that does it
//! (write path, read path, flush, compaction, column families).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;

use crate::lsm::batch::WriteBatch;
use crate::lsm::column_family::{ColumnFamily, family_range, prefixed_key};
use crate::lsm::db_iterator::DbIterator;
use crate::lsm::db_state::DbInner;
use crate::lsm::locks::Recover;
use crate::lsm::options::{DbOptions, NUM_LEVELS};
use crate::lsm::read::{Reads, ScanRange};
use crate::lsm::stats::DbStats;
use crate::lsm::ttl::TtlFilter;
use crate::lsm::writer_lock;
use crate::lsm::{compaction, flush, read};
use crate::storage::{StorageOptions, StorageRef, block_on, open_storage};
use crate::{Error, Result};

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
        let inner = DbInner::open(storage, options, resolve, session)?;
        let mut workers = vec![inner.spawn_worker("forst-flush", "flush", flush::run_flush_worker)];
        for i in 0..inner.options.max_background_compactions {
            let name = format!("forst-compact-{i}");
            let body = compaction::run_compaction_worker;
            workers.push(inner.spawn_worker(&name, "compaction", body));
        }
        inner.request_compaction();
        Ok(Db { inner, workers: Mutex::new(workers) })
    }

    /// Creates a column family, or returns the existing one of that name.
    pub fn create_cf(&self, name: &str) -> Result<ColumnFamily> {
        self.inner.create_family(name)
    }

    pub fn cf(&self, name: &str) -> Option<ColumnFamily> {
        self.inner.family(name)
    }

    pub fn cf_names(&self) -> Vec<String> {
        self.inner.family_names()
    }

    /// Drops a column family and all of its data (one range deletion; compaction reclaims space).
    /// Every handle of it is refused from now on, also once a family of the same name exists.
    pub fn drop_cf(&self, cf: &ColumnFamily) -> Result<()> {
        self.inner.drop_family(cf)
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
        let mut batch = WriteBatch::for_one_write(cf, key.len(), value.len());
        batch.put(cf, key, value);
        self.write(&batch)
    }

    pub fn delete(&self, cf: &ColumnFamily, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::for_one_write(cf, key.len(), 0);
        batch.delete(cf, key);
        self.write(&batch)
    }

    /// Appends to the list at `key` (Flink list state layout, see `lsm::merge`).
    pub fn merge(&self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::for_one_write(cf, key.len(), value.len());
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
        Ok(read::multi_get(&self.inner, std::slice::from_ref(&key), &[])?.values.pop().flatten())
    }

    /// Reads many keys of any column families at once; their block reads from storage are
    /// issued concurrently. Results are in the order of `keys`.
    pub fn multi_get(&self, keys: &[(&ColumnFamily, &[u8])]) -> Result<Vec<Option<Bytes>>> {
        Ok(self.multi_get_and_prefetch(keys, &[])?.values)
    }

    /// `multi_get`, with the first blocks of the prefix scans the caller runs next loaded into
    /// the block cache in the same flight of requests: a batch's gets, scans and prefix checks
    /// wait for one round trip together, not one each.
    pub fn multi_get_and_prefetch(
        &self,
        keys: &[(&ColumnFamily, &[u8])],
        scans: &[ScanBounds<'_>],
    ) -> Result<Reads> {
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
        self.inner.apply(batch, true)
    }

    /// Freezes the active memtable and hands it to the flush thread. Does no I/O and does not
    /// wait: a checkpoint's synchronous phase calls this.
    pub fn freeze_memtable(&self) -> Result<()> {
        self.inner.check_open()?;
        let _writer = self.inner.write_lock.lock().recover();
        self.inner.freeze_memtable();
        Ok(())
    }

    /// Flushes everything written so far and waits until it is durable in a manifest. A flush
    /// failing with a transient error is retried in the background meanwhile; one that fails for
    /// good fails the database, and this returns that failure.
    pub fn flush(&self) -> Result<()> {
        self.freeze_memtable()?;
        self.inner.wait_for_flushes()
    }

    /// Compacts every file into the last level, settling all deletes and merges. A panic in it
    /// fails the database, as one in a background compaction does.
    pub fn compact_all(&self) -> Result<()> {
        self.inner.check_open()?;
        compaction::compact_all(&self.inner)
    }

    /// Runs background-style compactions until no level needs one. Background compactions may
    /// run meanwhile: when all that is left is theirs, this waits for them and looks again.
    /// Fails once the database fails (also by a panic in a compaction, here or in the
    /// background).
    pub fn compact_until_settled(&self) -> Result<()> {
        let inner = &self.inner;
        inner.check_open()?;
        loop {
            while compaction::run_one_compaction(inner)? {}
            if !inner.compactions.wait_idle() {
                return inner.check_open();
            }
            inner.check_open()?;
        }
    }

    /// Waits until every file that left the tree so far and has no reader, iterator or
    /// checkpoint left is deleted from storage (or its deletion failed, which is logged).
    pub fn wait_for_file_deletions(&self) {
        self.inner.obsolete_files.wait_idle();
    }

    /// Whether the current version lists the file `name` (a path relative to the database's
    /// directory): a file handed over to a checkpoint that the database still reads.
    pub fn holds_file(&self, name: &str) -> bool {
        self.inner.current().version.all_files().any(|f| f.path == name)
    }

    /// Takes back files handed over to checkpoints that all came to nothing: the database owns
    /// (and in time deletes) them again. See `DbInner::take_back`.
    pub fn take_back(&self, names: &[String]) -> Result<()> {
        self.inner.check_open()?;
        self.inner.take_back(names)
    }

    /// Reads files restored by reference from copies of the same bytes from now on (a NO_CLAIM
    /// restore's snapshot, which the user may delete once a checkpoint holds copies). See
    /// `DbInner::relocate`.
    pub fn relocate(&self, copies: &HashMap<String, (StorageRef, String)>) -> Result<usize> {
        self.inner.check_open()?;
        self.inner.relocate(copies)
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
            index_filter_room_bytes: inner.cache.index_filter_tier_capacity(),
            index_filter_bytes_loaded: inner.cache.index_filter_bytes_inserted(),
            table_reader_bytes: inner.cache.reserved_bytes(),
            io_buffer_bytes: inner.cache.buffer_bytes(),
            range_tombstone_bytes: inner.cache.tombstone_bytes(),
            iterator_pinned_bytes: inner.cache.pinned_bytes(),
            memtable_bytes: sv.memtable_bytes(),
            active_memtable_bytes: sv.mem.approximate_bytes(),
            active_memtable_entries: sv.mem.entries(),
            frozen_memtable_entries: frozen_entries,
            frozen_memtables: sv.frozen.len(),
            stalled_writers: inner.background.lock().recover().stalled_writers,
            files_per_level: sv.version.levels.iter().map(|l| l.len()).collect(),
            bytes_per_level: (0..NUM_LEVELS).map(|l| sv.version.level_bytes(l)).collect(),
            sst_entries: sv.version.files().map(|f| f.props().entries).sum(),
            ttl_removed_entries: inner.ttl.removed(),
            ttl_trimmed_lists: inner.ttl.trimmed(),
            range_tombstones: sv.version.tombstones.len(),
            range_tombstone_files: sv.version.tombstone_files.len(),
            compaction_pending: compaction::picker::pick(
                &sv.version,
                &inner.options,
                &Default::default(),
            )
            .is_some(),
            pending_compaction_bytes: compaction::picker::pending_bytes(
                &sv.version,
                &inner.options,
            ),
            failed: inner.failed(),
            io: inner.io().snapshot(),
            disk_cache: inner.storage.disk_cache_stats().unwrap_or_default(),
            ..DbStats::default()
        };
        inner.counters.fill(&mut stats);
        let in_flight = inner.compactions.lock();
        (stats.running_compactions, stats.max_running_compactions) =
            (in_flight.running(), in_flight.max_running());
        drop(in_flight);
        stats
    }

    /// Stops background work and waits for the deletions of obsolete files already issued, so
    /// that a closed database leaves only its live files (and whatever readers, iterators or
    /// checkpoints still hold). Data not flushed is dropped (no WAL, see `lsm::db_state`).
    pub fn close(&self) -> Result<()> {
        if !self.inner.mark_closed() {
            return Ok(());
        }
        self.inner.stop_background();
        for worker in self.workers.lock().recover().drain(..) {
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

/// A range a caller is about to scan: family, start, and exclusive end (`None`: the family's
/// end).
pub type ScanBounds<'a> = (&'a ColumnFamily, &'a [u8], Option<&'a [u8]>);
