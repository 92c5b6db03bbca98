//! Reading a checkpoint where it lies, read-only: the tree one checkpointed database (one
//! subtask's `IncrementalRemoteKeyedStateHandle`) holds, built from its manifest and the
//! locations of its files, for tools that inspect, verify, diff and dump state without running
//! the job.
//!
//! Unlike `restore`, nothing is claimed, placed or written: no directory is created, no writer
//! lock taken, no manifest written, no file copied, and the files are never deleted (no file of
//! the tree is ever obsolete). Reads go straight to the files' storage, through a block cache of
//! the reader's own and no disk cache. The tree is the one a restore at the checkpoint's own
//! key-group range would open (`restore::plan`), so reads see what the job saw.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::lsm::cache::BlockCache;
use crate::lsm::column_family::{ColumnFamilyId, family_of};
use crate::lsm::db_iterator::DbIterator;
use crate::lsm::options::NUM_LEVELS;
use crate::lsm::range_tombstone::FragmentedTombstones;
use crate::lsm::restore::{self, KeyGroupLayout, RestoreSource};
use crate::lsm::tombstone_files::{TOMBSTONE_LEVEL, TombstoneFile};
use crate::lsm::version::manifest::FileRecord;
use crate::lsm::version::{ObsoleteFiles, TableFile, Version};
use crate::storage::block_on;
use crate::{Error, Result};

/// The reader's block cache: scans and verification stream through it.
const CACHE_BYTES: u64 = 64 << 20;

/// One file of the checkpoint's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Its level; `TOMBSTONE_LEVEL` for a file of range deletes (`lsm::tombstone_files`).
    pub level: usize,
    /// Its name in the checkpointed database (the manifest's).
    pub name: String,
    /// Where it is: the directory URL of its storage and its name there.
    pub location: String,
    pub size: u64,
    /// Entries the file holds (all versions, deletes and merges; not what a reader sees).
    pub entries: u64,
    /// The column family (state) whose keys it holds: a file never holds two.
    pub family: Option<String>,
}

/// A checkpointed database opened read-only (see the module's comment).
pub struct CheckpointReader {
    families: Vec<(String, ColumnFamilyId)>,
    version: Arc<Version>,
    /// Why the range deletes could not be read (a tombstone file is damaged or missing): reads
    /// fail with it, `verify` names the file.
    tombstones_unreadable: Option<String>,
    /// Names the handle gave a location for that the manifest does not list.
    unlisted: Vec<String>,
}

impl CheckpointReader {
    /// Opens the tree of `source` (its manifest and file locations), seen through its own
    /// key-group range; `prefix_bytes`: bytes of key-group prefix of every key. Reads nothing
    /// but the manifest given and the tombstone files: data files open on first read.
    pub fn open(source: RestoreSource, prefix_bytes: usize) -> Result<CheckpointReader> {
        let layout = KeyGroupLayout { range: source.key_groups, prefix_bytes };
        let given: Vec<String> = source.files.keys().cloned().collect();
        let plan = restore::plan(vec![source], &layout)?;
        let tombstone_files = plan.tombstone_files.iter().map(|t| &t.file);
        let listed: HashSet<&str> =
            plan.files.iter().chain(tombstone_files).map(|p| p.record.path.as_str()).collect();
        let mut unlisted: Vec<String> =
            given.into_iter().filter(|name| !listed.contains(name.as_str())).collect();
        unlisted.sort();
        let cache = Arc::new(BlockCache::new(CACHE_BYTES));
        let never_deletes = Arc::new(ObsoleteFiles::default());
        let mut storages = HashMap::new();
        let records: Vec<FileRecord> = plan
            .files
            .into_iter()
            .map(|planned| {
                let (storage, name) = planned.source;
                let mut record = planned.record;
                record.location = Some(format!("{}/{name}", storage.url()));
                record.owned = false;
                storages.insert(record.path.clone(), storage);
                record
            })
            .collect();
        let mut version = Version::default();
        let mut tombstones = plan.tombstones;
        let mut tombstones_unreadable = None;
        for planned in &plan.tombstone_files {
            let file = Arc::new(planned.table_file(cache.clone()));
            let read = planned.read(&file).unwrap_or_else(|e| {
                tombstones_unreadable = Some(format!("{}: {e}", file.path));
                Vec::new()
            });
            tombstones.extend(read.iter().cloned());
            let tombstones = Arc::new(FragmentedTombstones::new(read));
            version.tombstone_files.push(TombstoneFile { file, tombstones });
        }
        version.tombstones = Arc::new(FragmentedTombstones::new(tombstones));
        for record in restore::order_levels(records)? {
            let storage = storages[&record.path].clone();
            let file =
                TableFile::from_record(&record, storage, cache.clone(), never_deletes.clone());
            version.levels[record.level as usize].push(Arc::new(file));
        }
        Ok(CheckpointReader {
            families: plan.families,
            version: Arc::new(version),
            tombstones_unreadable,
            unlisted,
        })
    }

    /// The column families (states) of the checkpoint: name and id.
    pub fn families(&self) -> &[(String, ColumnFamilyId)] {
        &self.families
    }

    /// Every file of the tree, level by level (level 0 newest first, deeper levels by key), then
    /// the tombstone files (of no family: their range deletes may span several).
    pub fn files(&self) -> Vec<FileInfo> {
        let levels = self.version.levels.iter().enumerate().take(NUM_LEVELS);
        let data = levels.flat_map(|(level, tables)| tables.iter().map(move |t| (level, t)));
        let tombstones = self.version.tombstone_files.iter();
        let all = data.chain(tombstones.map(|t| (TOMBSTONE_LEVEL as usize, &t.file)));
        all.map(|(level, table)| {
            let at = table.stored_at();
            let id = family_of(table.smallest()).filter(|_| level < NUM_LEVELS);
            let family = self.families.iter().find(|(_, f)| Some(*f) == id);
            FileInfo {
                level,
                name: table.path.clone(),
                location: format!("{}/{}", at.storage.url(), at.path),
                size: table.size,
                entries: table.props().entries,
                family: family.map(|(name, _)| name.clone()),
            }
        })
        .collect()
    }

    /// Iterates what a reader of the job saw of family `name` in [start, end) (keys without the
    /// family's prefix; `None`: unbounded).
    pub fn iter(&self, name: &str, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<DbIterator> {
        let Some(&(_, id)) = self.families.iter().find(|(n, _)| n == name) else {
            return Err(Error::invalid(format!("the checkpoint has no state {name:?}")));
        };
        if let Some(why) = &self.tombstones_unreadable {
            return Err(Error::invalid(format!("cannot read the range deletes of {why}")));
        }
        DbIterator::over_version(self.version.clone(), id, start, end)
    }

    /// Checks the whole tree: every file present with the size the manifest recorded, every
    /// block's checksum and structure, every file the handle names listed by the manifest.
    /// Returns one problem per bad file (empty: all good), each naming the file.
    pub fn verify(&self) -> Vec<String> {
        let mut problems: Vec<String> = self
            .unlisted
            .iter()
            .map(|name| format!("{name}: the handle names it but the manifest does not list it"))
            .collect();
        for file in self.version.all_files() {
            let at = file.stored_at();
            let location = format!("{}/{}", at.storage.url(), at.path);
            if let Err(e) = block_on(verify_file(file)) {
                problems.push(format!("{location}: {e}"));
            }
        }
        problems
    }
}

async fn verify_file(file: &TableFile) -> Result<u64> {
    let at = file.stored_at();
    let (storage, name) = (&at.storage, at.path.as_str());
    let actual = storage.size(name).await?;
    if actual != file.size {
        return Err(Error::corruption(
            name,
            actual,
            format!("file is {actual} bytes but the manifest recorded {}", file.size),
        ));
    }
    file.table().await?.verify().await
}
