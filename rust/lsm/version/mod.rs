//! Versions: the immutable set of live SST files per level plus the range tombstones, swapped
//! atomically on every flush and compaction. A reader or a checkpoint that holds an
//! `Arc<Version>` (or the files' Arcs) keeps those files alive: a file leaves storage only when it
//! is out of every version and its last Arc drops, and only if the database owns it: a file
//! handed over to a checkpoint is external from then on, its new owner deletes it.

mod bounds;
mod file_map;
pub mod manifest;
mod obsolete;

pub use bounds::Bounds;
pub(crate) use file_map::FileMap;
pub use obsolete::{ObsoleteFiles, delete_orphans};

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::Result;
use crate::lsm::cache::BlockCache;
use crate::lsm::iterators::file::FileIterator;
use crate::lsm::key::SeqNo;
use crate::lsm::options::NUM_LEVELS;
use crate::lsm::range_tombstone::FragmentedTombstones;
use crate::lsm::sst::{Located, Table, TableProperties, TableSource};
use crate::lsm::tombstone_files::{self, TOMBSTONE_LEVEL, TombstoneFile};
use crate::lsm::version::manifest::{FileRecord, split_location};
use crate::storage::{StorageRef, block_on};

/// The name of table file `number` written by the database instance (or restore) `session`: a
/// name never used before, so a restarted or concurrent instance can never overwrite a file
/// another one (or a checkpoint) still references.
pub fn table_file_name(number: u64, session: u64) -> String {
    format!("{number:012}-{session:016x}.sst")
}

/// One live SST file.
pub struct TableFile {
    pub number: u64,
    /// The file's name in this database: its path relative to the database's directory, unless
    /// `location` says it lives elsewhere.
    pub path: String,
    /// The storage that holds the file, its path there and its location (see
    /// `manifest::FileRecord::location`), shared with the open table; changed only by
    /// `relocate`.
    source: TableSource,
    pub size: u64,
    props: TableProperties,
    /// Opened on first read, so a database (re)opened or restored on a DFS reads no file before
    /// it needs one: a restore costs the same at any state size.
    table: tokio::sync::OnceCell<Arc<Table>>,
    cache: Arc<BlockCache>,
    /// Every range tombstone with a sequence number up to this was applied when the file was
    /// written: the file holds no entry such a tombstone covers.
    pub tombstones_applied_through: SeqNo,
    /// What this database sees of the file, when that is less than the whole file (a restore
    /// clipped it to a narrower key-group range); may be wider than the keys it lets through.
    pub bounds: Option<Bounds>,
    obsolete: AtomicBool,
    /// False once the file was handed over (see `manifest::FileRecord::owned`).
    owned: AtomicBool,
    deleter: Arc<ObsoleteFiles>,
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableFile").field("path", &self.path).field("size", &self.size).finish()
    }
}

impl TableFile {
    /// A file just written, with its table already open.
    pub fn new(
        number: u64,
        path: String,
        table: Arc<Table>,
        tombstones_applied_through: SeqNo,
        storage: StorageRef,
        cache: Arc<BlockCache>,
        deleter: Arc<ObsoleteFiles>,
    ) -> Self {
        TableFile {
            number,
            source: TableSource::new(storage, path.clone()),
            path,
            size: table.properties().size,
            props: table.properties().clone(),
            table: tokio::sync::OnceCell::new_with(Some(table)),
            cache,
            tombstones_applied_through,
            bounds: None,
            obsolete: AtomicBool::new(false),
            owned: AtomicBool::new(true),
            deleter,
        }
    }

    /// A file listed in a manifest, opened when first read; `storage` is the one that holds it
    /// (the database's, or the one at its location).
    pub fn from_record(
        record: &FileRecord,
        storage: StorageRef,
        cache: Arc<BlockCache>,
        deleter: Arc<ObsoleteFiles>,
    ) -> Self {
        TableFile {
            number: record.number,
            path: record.path.clone(),
            source: TableSource::at(Located {
                storage,
                path: match record.location.as_deref().and_then(split_location) {
                    Some((_, name)) => name.to_string(),
                    None => record.path.clone(),
                },
                location: record.location.clone(),
            }),
            size: record.size,
            props: record.props.clone(),
            table: tokio::sync::OnceCell::new(),
            cache,
            tombstones_applied_through: record.tombstones_applied_through,
            bounds: record.bounds.clone(),
            obsolete: AtomicBool::new(false),
            owned: AtomicBool::new(record.owned),
            deleter,
        }
    }

    /// The open table (footer, index and filter read on first use; a damaged file fails here,
    /// naming itself, and is tried again on the next read).
    /// The table, if a read opened it already.
    pub fn opened(&self) -> Option<&Arc<Table>> {
        self.table.get()
    }

    pub async fn table(&self) -> Result<&Arc<Table>> {
        self.table
            .get_or_try_init(|| async {
                let table = Table::open_source(self.source.clone(), self.size, self.cache.clone());
                Ok(Arc::new(table.await?))
            })
            .await
    }

    /// Limits what the database sees of the file to `bounds`.
    pub fn with_bounds(mut self, bounds: Option<Bounds>) -> Self {
        self.bounds = bounds;
        self
    }

    /// Iterates the visible part of the file.
    pub fn iter(&self, readahead: usize) -> Result<FileIterator> {
        // Scans open an iterator per file: skip entering the runtime once the table is open.
        let table = match self.table.get() {
            Some(table) => table,
            None => block_on(self.table())?,
        };
        Ok(FileIterator::new(table.iter(readahead), self.bounds.clone()))
    }

    /// How many fragments of `tombstones` may still delete entries of this file: those over its
    /// range, newer than some of its entries and not applied when it was written.
    pub fn unapplied_tombstones(&self, tombstones: &FragmentedTombstones) -> usize {
        self.unapplied_tombstone_indices(tombstones).count()
    }

    fn unapplied_tombstone_indices<'a>(
        &self,
        tombstones: &'a FragmentedTombstones,
    ) -> impl Iterator<Item = usize> + 'a {
        let newer_than = self.tombstones_applied_through.max(self.props().min_seq);
        let over = tombstones.overlapping_range(self.smallest(), self.largest());
        over.filter(move |&i| tombstones.get(i).seq > newer_than)
    }

    pub fn props(&self) -> &TableProperties {
        &self.props
    }

    /// No visible key is smaller.
    pub fn smallest(&self) -> &[u8] {
        self.bounds.as_ref().map_or(&self.props().smallest_key, |b| &b.smallest)
    }

    /// No visible key is larger: the largest one, or the exclusive end of the bounds. Exact checks
    /// use `ends_before` or `contains`; this serves inclusive ranges that may err wide (overlap
    /// for compaction picking, tombstones over the file).
    pub fn largest(&self) -> &[u8] {
        self.bounds.as_ref().map_or(&self.props().largest_key, |b| &b.end)
    }

    /// Whether every visible key lies below `key`.
    pub fn ends_before(&self, key: &[u8]) -> bool {
        match &self.bounds {
            Some(bounds) => bounds.ends_before(key),
            None => self.props().largest_key.as_ref() < key,
        }
    }

    /// Whether `key` is inside what the database sees of the file.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.smallest() <= key && !self.ends_before(key)
    }

    pub fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.smallest() <= largest && !self.ends_before(smallest)
    }

    /// Called once a new manifest no longer lists the file: it is deleted when its last user
    /// (reader, iterator, checkpoint pin) lets go.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    /// The storage that holds the file, and its path there.
    pub fn stored_at(&self) -> Arc<Located> {
        self.source.get()
    }

    /// The file's URI when it lives outside the database's directory (see
    /// `manifest::FileRecord::location`).
    pub fn location(&self) -> Option<String> {
        self.source.get().location.clone()
    }

    /// Reads the file from now on through `to`, a copy of the same bytes (the caller vouches
    /// for that) outside the database's directory: every reader, open table and pinned version
    /// follows, cached blocks stay valid. Returns where the file was read until now, to undo with.
    pub(crate) fn relocate(&self, to: Arc<Located>) -> Arc<Located> {
        self.source.set(to)
    }

    /// Whether the database deletes the file once obsolete.
    pub fn is_owned(&self) -> bool {
        self.owned.load(Ordering::Acquire)
    }

    /// Gives the file away (to a checkpoint): the database never deletes it from now on.
    pub fn disown(&self) {
        self.owned.store(false, Ordering::Release);
    }

    /// Undoes `disown`: when the hand-over could not be recorded (the file is still pinned by the
    /// checkpoint that tried, so it cannot have been deleted or dropped meanwhile), or when every
    /// checkpoint it was handed over to came to nothing (`DbInner::take_back`).
    pub(crate) fn own_again(&self) {
        self.owned.store(true, Ordering::Release);
    }
}

impl Drop for TableFile {
    fn drop(&mut self) {
        if !self.obsolete.load(Ordering::Acquire) {
            return;
        }
        let located = self.source.get();
        let (storage, path) = (located.storage.clone(), located.path.clone());
        if self.is_owned() {
            self.deleter.delete(storage, path);
        } else {
            self.deleter.forget(storage, path);
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Version {
    /// Level 0 holds flushed files, newest first, possibly overlapping. Deeper levels each hold
    /// non-overlapping files sorted by smallest key.
    pub levels: [Vec<Arc<TableFile>>; NUM_LEVELS],
    /// Range deletes flushed from memtables: exactly those of `tombstone_files` and
    /// `unfiled_tombstones`, fragmented together (what reads search).
    pub tombstones: Arc<FragmentedTombstones>,
    /// The files that hold them on storage (`lsm::tombstone_files`), oldest first.
    pub tombstone_files: Vec<TombstoneFile>,
    /// Range deletes no tombstone file holds: read from a manifest of format 5 or older, which
    /// listed them itself. Manifests list them too until a flush writes them into a file.
    pub unfiled_tombstones: Arc<FragmentedTombstones>,
}

impl Version {
    /// The data files, level by level.
    pub fn files(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.levels.iter().flatten()
    }

    /// Every file the version holds: the data files, then the tombstone files. What ownership,
    /// checkpoints and manifests deal with.
    pub fn all_files(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.files().chain(self.tombstone_files.iter().map(|t| &t.file))
    }

    /// The manifest's records of every file (`all_files`).
    pub fn file_records(&self) -> Vec<FileRecord> {
        let levels = self.levels.iter().enumerate();
        let data = levels.flat_map(|(level, files)| files.iter().map(move |f| (level, f)));
        let tombstones = self.tombstone_files.iter().map(|t| (TOMBSTONE_LEVEL as usize, &t.file));
        data.chain(tombstones).map(|(level, f)| FileRecord::of(level, f)).collect()
    }

    /// Heap bytes of the range deletes: the union and each file's own.
    pub fn tombstone_memory(&self) -> u64 {
        let files = self.tombstone_files.iter().map(|t| t.tombstones.memory_size());
        (self.tombstones.memory_size()
            + self.unfiled_tombstones.memory_size()
            + files.sum::<usize>()) as u64
    }

    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.size).sum()
    }

    /// Files of a sorted level (>= 1) overlapping [smallest, largest].
    pub fn overlapping(
        &self,
        level: usize,
        smallest: &[u8],
        largest: &[u8],
    ) -> Vec<Arc<TableFile>> {
        self.levels[level].iter().filter(|f| f.overlaps(smallest, largest)).cloned().collect()
    }

    /// Which fragments of `tombstones` may still delete something: some file may hold an entry
    /// they cover. (Memtables only hold entries newer than any flushed tombstone: memtables flush
    /// in order.) The others are spent.
    fn needed_tombstones(&self) -> Vec<bool> {
        let mut needed = vec![false; self.tombstones.len()];
        for file in self.files() {
            file.unapplied_tombstone_indices(&self.tombstones).for_each(|i| needed[i] = true);
        }
        needed
    }

    /// The fragments of `tombstones` that may still delete something.
    pub fn live_tombstones(&self) -> FragmentedTombstones {
        let needed = self.needed_tombstones();
        self.tombstones.retained(|i| needed[i])
    }

    /// Drops the tombstone files (and unfiled tombstones) none of whose range deletes may still
    /// delete anything: none of their sequence numbers is carried by a fragment still needed.
    /// Spent fragments of a file that is still needed stay (see `lsm::tombstone_files` for why).
    pub fn forget_spent_tombstones(&mut self) {
        if self.tombstones.is_empty() {
            return;
        }
        let needed = self.needed_tombstones();
        if needed.iter().all(|&n| n) {
            return;
        }
        let needed_seqs: HashSet<SeqNo> =
            (0..needed.len()).filter(|&i| needed[i]).map(|i| self.tombstones.get(i).seq).collect();
        let still_needed =
            |set: &FragmentedTombstones| set.iter().any(|f| needed_seqs.contains(&f.seq));
        let before = self.tombstone_files.len();
        self.tombstone_files.retain(|t| still_needed(&t.tombstones));
        let unfiled_spent =
            !self.unfiled_tombstones.is_empty() && !still_needed(&self.unfiled_tombstones);
        if unfiled_spent {
            self.unfiled_tombstones = Arc::default();
        }
        if self.tombstone_files.len() < before || unfiled_spent {
            self.tombstones =
                Arc::new(tombstone_files::union(&self.tombstone_files, &self.unfiled_tombstones));
        }
    }

    /// Files every entry of which a range delete covers: older than a tombstone over the
    /// file's whole range.
    pub fn files_deleted_by_tombstones(&self) -> Vec<Arc<TableFile>> {
        let deleted = |f: &&Arc<TableFile>| {
            self.tombstones.covers_all_newer_than(f.smallest(), f.largest(), f.props().max_seq)
        };
        match self.tombstones.is_empty() {
            true => Vec::new(),
            false => self.files().filter(deleted).cloned().collect(),
        }
    }

    /// Highest sequence number among the range tombstones. Compaction applies all of them, and
    /// every unspent tombstone up to this one is among them (they arrive in order by flush).
    pub fn max_tombstone_seq(&self) -> SeqNo {
        self.tombstones.max_seq()
    }
}

#[cfg(test)]
impl TableFile {
    /// A file of `size` bytes over [lo, hi] seen through `bounds`, with no table behind it: for
    /// tests of what reads only the files' metadata (the picker, the file map).
    pub(crate) fn without_table(
        number: u64,
        lo: &str,
        hi: &str,
        size: u64,
        bounds: Option<Bounds>,
    ) -> Arc<TableFile> {
        use crate::storage::{StorageOptions, open_storage};
        let props = TableProperties {
            smallest_key: bytes::Bytes::copy_from_slice(lo.as_bytes()),
            largest_key: bytes::Bytes::copy_from_slice(hi.as_bytes()),
            min_seq: 1,
            max_seq: 1,
            entries: 10,
            size,
        };
        let record = FileRecord {
            level: 0,
            number,
            path: format!("{number:06}.sst"),
            size,
            props,
            tombstones_applied_through: 0,
            bounds,
            owned: true,
            location: None,
        };
        let storage = open_storage("memory://metadata-only", &StorageOptions::default()).unwrap();
        let cache = Arc::new(BlockCache::new(1 << 20));
        Arc::new(TableFile::from_record(
            &record,
            storage,
            cache,
            Arc::new(ObsoleteFiles::default()),
        ))
    }
}
