//! Restore and rescale (FLIP-428): a new database is built from the manifests and files of one or
//! more checkpoints. Files are referenced where they are (external in the new manifest, with their
//! location; the checkpoints own them) and never copied or rewritten, not even when the new
//! key-group range is narrower:
//! a file that holds key groups outside it gets visible bounds instead (`TableFile::bounds`), the
//! way SlateDB projects an SST to a key range. Reads, scans and compactions see only the bounds,
//! so the first compaction that touches such a file drops the rest.
//!
//! The bounds come from the key-group range alone: a restore reads no SST, not even one that
//! straddles a boundary, so its cost follows the number of files, not their size. (It reads the
//! sources' tombstone files, whose range deletes it clips and writes into one file of its own:
//! their size follows the live range deletes, not the state.) (Narrowing the
//! bounds to the keys the file holds would cost its footer and index, plus block reads, per
//! straddling file; even from the top-level index alone it would be a request per file.) The
//! price is bounds wider than the keys, with an exclusive end (`version::Bounds`), and a file
//! that may hold no visible key until compaction drops it.
//!
//! Why bounds and not range deletions: several checkpoints are combined into one tree, and a
//! range deletion would apply to every source's keys, including the ones another source owns.
//! Bounds belong to a file, so sources never see each other's keys. Two facts make it work:
//! a file never spans column families (`table_sink`), and family ids derive from names
//! (`column_family::id_for_name`), so every database of a job lays keys out alike:
//! `family id | key group | ...`. A level of the combined tree is still sorted and disjoint,
//! because sources own disjoint key groups.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};

use crate::lsm::cache::BlockCache;
use crate::lsm::column_family::{ColumnFamilyId, family_of};
use crate::lsm::db::Db;
use crate::lsm::options::{DbOptions, NUM_LEVELS};
use crate::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use crate::lsm::tombstone_files::{self, TOMBSTONE_LEVEL};
use crate::lsm::version::manifest::{self, FileRecord, ManifestData, read_latest_manifest};
use crate::lsm::version::{ObsoleteFiles, TableFile, table_file_name};
use crate::storage::{StorageOptions, StorageRef, block_on, open_storage};
use crate::{Error, Result};

/// Files placed at once during a restore.
const CONCURRENCY: usize = 8;
/// The block cache a restore reads the sources' tombstone files through.
const TOMBSTONE_READ_CACHE_BYTES: u64 = 4 << 20;

/// An inclusive range of Flink key groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyGroups {
    pub first: u32,
    pub last: u32,
}

impl KeyGroups {
    pub fn new(first: u32, last: u32) -> Self {
        KeyGroups { first, last }
    }

    fn intersect(self, other: KeyGroups) -> Option<KeyGroups> {
        let (first, last) = (self.first.max(other.first), self.last.min(other.last));
        (first <= last).then_some(KeyGroups { first, last })
    }

    /// The stored keys [start, end) of these key groups in family `cf`, where every key starts
    /// with `prefix_bytes` bytes of big-endian key group.
    fn key_range(self, cf: ColumnFamilyId, prefix_bytes: usize) -> (Bytes, Bytes) {
        let key = |cf: ColumnFamilyId, group: Option<u32>| {
            let mut out = BytesMut::with_capacity(4 + prefix_bytes);
            out.put_u32(cf);
            if let Some(group) = group {
                out.put_slice(&group.to_be_bytes()[4 - prefix_bytes..]);
            }
            out.freeze()
        };
        let end = if u64::from(self.last) + 1 < 1 << (8 * prefix_bytes) {
            key(cf, Some(self.last + 1))
        } else {
            // Past the last key group: the next family's prefix (ids never reach u32::MAX).
            key(cf + 1, None)
        };
        (key(cf, Some(self.first)), end)
    }
}

/// One checkpoint to restore from.
#[derive(Clone)]
pub struct RestoreSource {
    /// The bytes `Checkpoint::manifest` returned.
    pub manifest: Bytes,
    /// Where each file the manifest names is now: name -> (storage, path in it).
    pub files: HashMap<String, (StorageRef, String)>,
    /// The key groups the checkpointed database owned.
    pub key_groups: KeyGroups,
}

/// What the new database keeps.
#[derive(Debug, Clone, Copy)]
pub struct KeyGroupLayout {
    pub range: KeyGroups,
    /// Bytes of key-group prefix at the start of every key (Flink: 1 up to 128 key groups, else 2).
    pub prefix_bytes: usize,
}

/// A file of a source going into the new database, its bounds already clipped.
pub(crate) struct Planned {
    pub record: FileRecord,
    /// The storage that holds the file and its path there.
    pub source: (StorageRef, String),
}

/// A tombstone file of a source (`lsm::tombstone_files`), and what of its range deletes the new
/// database keeps.
pub(crate) struct PlannedTombstones {
    pub file: Planned,
    families: Vec<ColumnFamilyId>,
    visible: KeyGroups,
    prefix_bytes: usize,
}

impl PlannedTombstones {
    /// The file where it is, read through `cache`; never deleted.
    pub fn table_file(&self, cache: Arc<BlockCache>) -> TableFile {
        let (storage, path) = &self.file.source;
        let mut record = self.file.record.clone();
        record.location = Some(format!("{}/{path}", storage.url()));
        record.owned = false;
        TableFile::from_record(&record, storage.clone(), cache, Arc::new(ObsoleteFiles::default()))
    }

    /// The range deletes of `file` (this one's `table_file`) the new database keeps.
    pub fn read(&self, file: &TableFile) -> Result<Vec<RangeTombstone>> {
        let tombstones = tombstone_files::read(file)?;
        Ok(clip_tombstones(&tombstones, &self.families, self.visible, self.prefix_bytes))
    }
}

/// Builds a database at `storage` (which must hold none) from `sources`, keeping `layout.range`,
/// and opens it.
pub fn restore(
    storage: StorageRef,
    sources: Vec<RestoreSource>,
    layout: KeyGroupLayout,
    options: DbOptions,
) -> Result<Db> {
    validate(&layout)?;
    // A deleted database that kept files its checkpoints own is an empty one (see
    // `delete_database`): the restored database goes on protecting them.
    let (previous_manifest, previous) =
        block_on(read_latest_manifest(storage.as_ref()))?.unwrap_or_default();
    if !previous.files.is_empty() || !previous.column_families.is_empty() {
        return Err(Error::invalid(format!(
            "cannot restore into {}: it already holds a database",
            storage.url()
        )));
    }
    let plan = plan(sources, &layout)?;
    let mut tombstones = plan.tombstones;
    let cache = Arc::new(BlockCache::new(TOMBSTONE_READ_CACHE_BYTES));
    for planned in &plan.tombstone_files {
        tombstones.extend(planned.read(&planned.table_file(cache.clone()))?);
    }
    let tombstones = FragmentedTombstones::new(tombstones);
    let session = random_session()?;
    let holders: HashMap<String, StorageRef> =
        plan.files.iter().map(|p| (p.source.0.url().to_string(), p.source.0.clone())).collect();
    let mut files = order_levels(block_on(place(&storage, plan.files, session))?)?;
    if !tombstones.is_empty() {
        let number = files.len() as u64 + 1;
        let table = options.table.clone();
        let write =
            tombstone_files::write_record(storage.as_ref(), &tombstones, number, session, table);
        files.push(block_on(write)?);
    }
    let data = ManifestData {
        last_seq: plan.last_seq,
        next_file_number: files.len() as u64 + 1,
        column_families: plan.families,
        tombstones: Arc::default(),
        files,
        released: previous.released,
        hand_overs: previous.hand_overs,
    };
    block_on(manifest::write_manifest(storage.as_ref(), previous_manifest + 1, &data))?;
    Db::open_resolving(storage, options, &|url| match holders.get(url) {
        Some(holder) => Ok(holder.clone()),
        None => open_storage(url, &StorageOptions::default()),
    })
}

/// What a database built from some checkpoints holds, before any file is placed: every kept
/// file of the sources (bounds clipped to the layout's range, where it lies now), the combined
/// families, range deletions and last sequence number. Reads nothing but the manifests given.
pub(crate) struct Plan {
    pub families: Vec<(String, ColumnFamilyId)>,
    pub last_seq: u64,
    /// The range deletions the sources' manifests list themselves, clipped.
    pub tombstones: Vec<RangeTombstone>,
    /// The sources' tombstone files: the rest of the range deletions.
    pub tombstone_files: Vec<PlannedTombstones>,
    pub files: Vec<Planned>,
}

/// Plans the database `restore` builds (and a `CheckpointReader` reads) from `sources`.
pub(crate) fn plan(sources: Vec<RestoreSource>, layout: &KeyGroupLayout) -> Result<Plan> {
    validate(layout)?;
    let mut families = BTreeMap::new();
    let mut last_seq = 0;
    let mut tombstones = Vec::new();
    let mut tombstone_files = Vec::new();
    let mut planned = Vec::new();
    for (i, source) in sources.into_iter().enumerate() {
        let data = manifest::decode(&format!("checkpoint manifest {i}"), source.manifest)?;
        merge_families(&mut families, &data.column_families)?;
        let Some(visible) = source.key_groups.intersect(layout.range) else {
            continue;
        };
        last_seq = last_seq.max(data.last_seq);
        let ids: Vec<ColumnFamilyId> = data.column_families.iter().map(|(_, id)| *id).collect();
        tombstones.extend(clip_tombstones(
            &data.tombstones.to_tombstones(),
            &ids,
            visible,
            layout.prefix_bytes,
        ));
        for record in data.files {
            let source_file = source.files.get(&record.path).cloned().ok_or_else(|| {
                Error::invalid(format!(
                    "checkpoint {i} lists {} but no location for it",
                    record.path
                ))
            })?;
            if record.level == TOMBSTONE_LEVEL {
                tombstone_files.push(PlannedTombstones {
                    file: Planned { record, source: source_file },
                    families: ids.clone(),
                    visible,
                    prefix_bytes: layout.prefix_bytes,
                });
            } else if let Some(file) = plan_file(record, source_file, visible, layout)? {
                planned.push(file);
            }
        }
    }
    Ok(Plan {
        families: families.into_iter().collect(),
        last_seq,
        tombstones,
        tombstone_files,
        files: planned,
    })
}

fn validate(layout: &KeyGroupLayout) -> Result<()> {
    let KeyGroupLayout { range, prefix_bytes } = *layout;
    if !(1..=2).contains(&prefix_bytes) {
        return Err(Error::invalid(format!(
            "key-group prefix must be 1 or 2 bytes, not {prefix_bytes}"
        )));
    }
    if range.first > range.last || u64::from(range.last) >= 1 << (8 * prefix_bytes) {
        return Err(Error::invalid(format!(
            "bad key-group range {}..={} for a {prefix_bytes}-byte prefix",
            range.first, range.last
        )));
    }
    Ok(())
}

/// Adds a source's families; the same name must have the same id everywhere.
fn merge_families(into: &mut BTreeMap<String, u32>, families: &[(String, u32)]) -> Result<()> {
    for (name, id) in families {
        if let Some(other) = into.iter().find(|(n, i)| (*n == name) != (*i == id)) {
            return Err(Error::invalid(format!(
                "cannot combine checkpoints: family {name:?} has id {id}, but {:?} has id {}",
                other.0, other.1
            )));
        }
        into.insert(name.clone(), *id);
    }
    Ok(())
}

/// A source's range deletions, cut to the keys it owns in the new database.
fn clip_tombstones(
    tombstones: &[RangeTombstone],
    families: &[ColumnFamilyId],
    visible: KeyGroups,
    prefix_bytes: usize,
) -> Vec<RangeTombstone> {
    let mut out = Vec::new();
    for t in tombstones {
        for &cf in families {
            let (lo, hi) = visible.key_range(cf, prefix_bytes);
            let start = t.start.clone().max(lo);
            let end = t.end.clone().min(hi);
            if start < end {
                out.push(RangeTombstone { start, end, seq: t.seq });
            }
        }
    }
    out
}

/// Whether a file of a source goes into the new database, and with which bounds: those it had,
/// cut to the key range of `visible` in its family. No I/O (see the module's comment).
fn plan_file(
    mut record: FileRecord,
    source: (StorageRef, String),
    visible: KeyGroups,
    layout: &KeyGroupLayout,
) -> Result<Option<Planned>> {
    let seen = record.visible();
    // An exclusive end may be the next family's first key (a clip to a family's last key group).
    let ends_in = |cf: ColumnFamilyId| {
        family_of(&seen.end) == Some(cf)
            || seen.end_exclusive && seen.end.as_ref() == cf.wrapping_add(1).to_be_bytes()
    };
    let cf = family_of(&seen.smallest).filter(|&cf| ends_in(cf)).ok_or_else(|| {
        Error::corruption(&record.path, 0, "file spans column families; cannot clip it")
    })?;
    let (start, end) = visible.key_range(cf, layout.prefix_bytes);
    let Some(clipped) = seen.clip(&start, &end) else {
        return Ok(None);
    };
    if clipped != seen {
        record.bounds = Some(clipped);
    }
    Ok(Some(Planned { record, source }))
}

/// Places every planned file. A checkpoint's file is referenced where it is (external: the
/// checkpoint owns it). Only a file staged inside the new directory (bytes the JobManager kept,
/// segments of merged files, written there by the caller, who deletes the staging area
/// afterwards) is moved into the database under a new name, inside the storage (hard link), and
/// owned.
async fn place(
    storage: &StorageRef,
    planned: Vec<Planned>,
    session: u64,
) -> Result<Vec<FileRecord>> {
    let staging = format!("{}/", storage.url());
    let jobs = planned.into_iter().enumerate().map(|(i, file)| {
        let (storage, staging) = (storage.clone(), staging.clone());
        async move {
            let number = i as u64 + 1;
            let (src, src_path) = file.source;
            let mut record = file.record;
            record.number = number;
            if src.url().starts_with(&staging) {
                let path = table_file_name(number, session);
                storage.copy_in(src.as_ref(), &src_path, &path).await?;
                record.path = path;
                record.owned = true;
                record.location = None;
            } else {
                record.owned = false;
                record.location = Some(format!("{}/{src_path}", src.url()));
            }
            Ok::<_, Error>(record)
        }
    });
    // `buffered`, not `buffer_unordered`: level 0 must keep each source's newest-first order.
    futures::stream::iter(jobs).buffered(CONCURRENCY).try_collect().await
}

/// Level 0 keeps each source's order (sources never share a key); deeper levels are sorted by
/// smallest visible key and must stay disjoint.
pub(crate) fn order_levels(files: Vec<FileRecord>) -> Result<Vec<FileRecord>> {
    let mut levels: Vec<Vec<FileRecord>> = (0..NUM_LEVELS).map(|_| Vec::new()).collect();
    for file in files {
        let level = file.level as usize;
        if level >= NUM_LEVELS {
            return Err(Error::corruption(&file.path, 0, format!("file at level {level}")));
        }
        levels[level].push(file);
    }
    for level in levels.iter_mut().skip(1) {
        level.sort_by_key(|f| f.visible().smallest);
        if let Some(pair) = level.windows(2).find(|w| !w[0].visible().precedes(&w[1].visible())) {
            return Err(Error::invalid(format!(
                "checkpoints overlap in key range ({} and {}): do their key groups overlap?",
                pair[0].path, pair[1].path
            )));
        }
    }
    Ok(levels.into_iter().flatten().collect())
}

fn random_session() -> Result<u64> {
    let mut session = [0u8; 8];
    getrandom::fill(&mut session).map_err(|e| Error::io("getrandom", e))?;
    Ok(u64::from_le_bytes(session))
}
