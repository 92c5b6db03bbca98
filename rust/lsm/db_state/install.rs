//! Version installation: every change of what the manifest records goes through here under the
//! meta lock (flush and compaction results, files given away to checkpoints, column families),
//! so manifests are numbered without gaps and concurrent changes never undo each other; and the
//! way back, the version a manifest describes.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use crate::lsm::cache::BlockCache;
use crate::lsm::locks::Recover;
use crate::lsm::memtable::MemTable;
use crate::lsm::options::NUM_LEVELS;
use crate::lsm::version::manifest::{
    FileRecord, ManifestData, manifest_path, split_location, write_manifest,
};
use crate::lsm::version::{ObsoleteFiles, TableFile, Version};
use crate::storage::{StorageRef, block_on};
use crate::{Error, Result};

use super::{DbInner, MetaState, SuperVersion};

impl DbInner {
    /// Applies a version change durably: under the meta lock, `edit` changes a copy of the current
    /// version (so concurrent flush and compaction never undo each other), the next manifest is
    /// written, the result becomes current, and files it dropped are let go. `flushed` leaves the
    /// frozen list in the same step.
    pub(crate) fn install_version(
        &self,
        edit: impl FnOnce(&mut Version),
        flushed: Option<&Arc<MemTable>>,
    ) -> Result<()> {
        let mut meta = self.meta.lock().recover();
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
        let mut sv = self.super_version.write().recover();
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
        self.cache.charge_tombstones(
            old.tombstones.memory_size() as u64,
            version.tombstones.memory_size() as u64,
        );
        *sv = Arc::new(SuperVersion::new(sv.mem.clone(), frozen, version));
        drop(sv);
        drop(meta);
        old.files().filter(|f| !kept.contains(&f.number)).for_each(|f| f.mark_obsolete());
        if flushed.is_some() {
            self.charge_memtables();
        }
        self.notify_background();
        Ok(())
    }

    /// Gives `files` away (see `TableFile::disown`) and records it in a new manifest: those
    /// still live as external, the others (a compaction replaced them since they were pinned)
    /// among the released files, so that open does not collect them as orphans. On failure the
    /// files this call disowned are owned again.
    pub(crate) fn give_away(&self, files: &[Arc<TableFile>]) -> Result<()> {
        let mut meta = self.meta.lock().recover();
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
    pub(super) fn persist(
        &self,
        meta: &mut MutexGuard<'_, MetaState>,
        version: &Version,
    ) -> Result<()> {
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
pub(super) fn load_version(
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
