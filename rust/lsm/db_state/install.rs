//! Version installation: every change of what the manifest records goes through here under the
//! meta lock (flush and compaction results, files given away to checkpoints, column families),
//! so manifests are numbered without gaps and concurrent changes never undo each other; and the
//! way back, the version a manifest describes.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use futures::{StreamExt, TryStreamExt};

use crate::lsm::cache::BlockCache;
use crate::lsm::locks::Recover;
use crate::lsm::memtable::MemTable;
use crate::lsm::options::NUM_LEVELS;
use crate::lsm::sst::Located;
use crate::lsm::tombstone_files::{self, TOMBSTONE_LEVEL, TombstoneFile};
use crate::lsm::version::manifest::{ManifestData, manifest_path, split_location, write_manifest};
use crate::lsm::version::{ObsoleteFiles, TableFile, Version};
use crate::storage::{StorageRef, block_on};
use crate::{Error, Result};

use super::{DbInner, MetaState, SuperVersion};

/// Size requests `relocate` keeps in flight.
const SIZE_REQUESTS: usize = 32;

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
        let installed = self.try_install_version(
            |version| {
                edit(version);
                true
            },
            flushed,
        )?;
        debug_assert!(installed);
        Ok(())
    }

    /// As `install_version`, unless `edit` finds the current version is not the one its change
    /// was made for and returns false: then nothing changes and false is returned.
    pub(crate) fn try_install_version(
        &self,
        edit: impl FnOnce(&mut Version) -> bool,
        flushed: Option<&Arc<MemTable>>,
    ) -> Result<bool> {
        let mut meta = self.meta.lock().recover();
        let current = self.current().version.clone();
        let mut version = (*current).clone();
        if !edit(&mut version) {
            return Ok(false);
        }
        version.forget_spent_tombstones();
        let kept: HashSet<u64> = version.all_files().map(|f| f.number).collect();
        let given_away: Vec<&Arc<TableFile>> = current
            .all_files()
            .filter(|f| !kept.contains(&f.number) && !f.is_owned() && f.location().is_none())
            .collect();
        let released_before = meta.released.len();
        meta.released.extend(given_away.iter().map(|f| f.path.clone()));
        if let Err(e) = self.persist(&mut meta, &version) {
            meta.released.truncate(released_before);
            return Err(e);
        }
        hold_released(&mut meta, given_away.into_iter());
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
        self.cache.charge_tombstones(old.tombstone_memory(), version.tombstone_memory());
        *sv = Arc::new(SuperVersion::new(sv.mem.clone(), frozen, version));
        drop(sv);
        drop(meta);
        old.all_files().filter(|f| !kept.contains(&f.number)).for_each(|f| f.mark_obsolete());
        if flushed.is_some() {
            self.charge_memtables();
        }
        self.notify_background();
        Ok(true)
    }

    /// Gives `files` away (see `TableFile::disown`) and records it in a new manifest: those
    /// still live as external, the others (a compaction replaced them since they were pinned)
    /// among the released files, so that open does not collect them as orphans. On failure the
    /// files this call disowned are owned again.
    pub(crate) fn give_away(&self, files: &[Arc<TableFile>], checkpoint_id: u64) -> Result<()> {
        let mut meta = self.meta.lock().recover();
        let disowned: Vec<&Arc<TableFile>> = files.iter().filter(|f| f.is_owned()).collect();
        if disowned.is_empty() {
            return Ok(());
        }
        disowned.iter().for_each(|f| f.disown());
        for file in &disowned {
            meta.hand_overs.entry(file.path.clone()).or_insert(checkpoint_id);
        }
        let current = self.current().version.clone();
        let live: HashSet<u64> = current.all_files().map(|f| f.number).collect();
        let released_before = meta.released.len();
        let dropped: Vec<&Arc<TableFile>> =
            disowned.iter().copied().filter(|f| !live.contains(&f.number)).collect();
        meta.released.extend(dropped.iter().map(|f| f.path.clone()));
        if let Err(e) = self.persist(&mut meta, &current) {
            meta.released.truncate(released_before);
            disowned.iter().for_each(|f| {
                f.own_again();
                meta.hand_overs.remove(&f.path);
            });
            return Err(e);
        }
        hold_released(&mut meta, dropped.into_iter());
        Ok(())
    }

    /// Takes back files given away to checkpoints that all came to nothing (aborted or discarded
    /// before Flink heard of them): the database owns them again. A file still in the current
    /// version is deleted once a compaction replaces it; one that left the version is deleted by
    /// its last holder, or now if nothing holds it. Names the database never gave away (or took
    /// back already) are ignored: taking back twice is harmless. Recorded in a new manifest before
    /// anything is deleted, so a reopen never keeps or collects a file against this decision.
    pub(crate) fn take_back(&self, names: &[String]) -> Result<()> {
        let mut meta = self.meta.lock().recover();
        let current = self.current().version.clone();
        let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
        let live: Vec<&Arc<TableFile>> = current
            .all_files()
            .filter(|f| wanted.contains(f.path.as_str()) && !f.is_owned() && f.location().is_none())
            .collect();
        let released_before = meta.released.clone();
        meta.released.retain(|name| !wanted.contains(name.as_str()));
        let left: Vec<String> =
            released_before.iter().filter(|n| wanted.contains(n.as_str())).cloned().collect();
        if live.is_empty() && left.is_empty() {
            return Ok(());
        }
        live.iter().for_each(|f| f.own_again());
        let hand_overs_before = meta.hand_overs.clone();
        meta.hand_overs.retain(|name, _| !wanted.contains(name.as_str()));
        if let Err(e) = self.persist(&mut meta, &current) {
            meta.released = released_before;
            meta.hand_overs = hand_overs_before;
            live.iter().for_each(|f| f.disown());
            return Err(e);
        }
        for name in left {
            match meta.released_held.remove(&name).and_then(|held| held.upgrade()) {
                // Obsolete already: dropping the last Arc deletes it now that it is owned.
                Some(held) => held.own_again(),
                None => self.obsolete_files.delete(self.storage.clone(), name),
            }
        }
        Ok(())
    }

    /// Re-points files restored by reference at copies of the same bytes (`TableFile::relocate`):
    /// `copies` maps a file's name to the storage and path of its copy. Only files of the current
    /// version that live outside the database's directory move, and only to a copy of their
    /// recorded size (one size request each, concurrent, before any lock); a file the database
    /// no longer holds, or holds there already, is skipped. Recorded in a new manifest; on failure
    /// every file stays where it was. Returns how many files moved.
    pub(crate) fn relocate(&self, copies: &HashMap<String, (StorageRef, String)>) -> Result<usize> {
        let current = self.current().version.clone();
        let mut candidates = Vec::new();
        for file in current.all_files() {
            let (Some(from), Some((storage, path))) = (file.location(), copies.get(&file.path))
            else {
                continue;
            };
            let to = format!("{}/{path}", storage.url());
            if from != to {
                candidates.push((file.clone(), from, to, storage.clone(), path.clone()));
            }
        }
        // The copies' sizes, requested together (one round trip on a DFS, not one per file).
        let checks = candidates.into_iter().map(|(file, from, to, storage, path)| async move {
            let size = storage.size(&path).await?;
            if size != file.size {
                return Err(Error::invalid(format!(
                    "{to} is {size} bytes, not a copy of {from} ({} bytes)",
                    file.size
                )));
            }
            Ok((file, Arc::new(Located { storage, path, location: Some(to) })))
        });
        let moves: Vec<_> =
            block_on(futures::stream::iter(checks).buffer_unordered(SIZE_REQUESTS).try_collect())?;
        if moves.is_empty() {
            return Ok(0);
        }
        let mut meta = self.meta.lock().recover();
        let undo: Vec<_> =
            moves.iter().map(|(file, located)| (file, file.relocate(located.clone()))).collect();
        // The current version, not the one read above: a compaction may have installed another
        // since (it shares the moved files' Arcs, so it records their new places too).
        let version = self.current().version.clone();
        if let Err(e) = self.persist(&mut meta, &version) {
            undo.into_iter().for_each(|(file, previous)| {
                file.relocate(previous);
            });
            return Err(e);
        }
        Ok(moves.len())
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
            tombstones: version.unfiled_tombstones.clone(),
            files: version.file_records(),
            released: meta.released.clone(),
            hand_overs: meta.hand_overs.iter().map(|(n, c)| (n.clone(), *c)).collect(),
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

/// Remembers files just released while something may still hold them (see
/// `MetaState::released_held`), forgetting those nothing holds any more.
fn hold_released<'a>(meta: &mut MetaState, files: impl Iterator<Item = &'a Arc<TableFile>>) {
    meta.released_held.retain(|_, held| held.strong_count() > 0);
    for file in files {
        meta.released_held.insert(file.path.clone(), Arc::downgrade(file));
    }
}

/// The version a manifest describes. No data file is read (tables open on first use); the
/// tombstone files are, for the range deletes they hold.
pub(super) fn load_version(
    storage: &StorageRef,
    resolve: &dyn Fn(&str) -> Result<StorageRef>,
    cache: &Arc<BlockCache>,
    obsolete_files: &Arc<ObsoleteFiles>,
    data: &ManifestData,
) -> Result<Version> {
    let mut version = Version::default();
    let mut elsewhere: HashMap<&str, StorageRef> = HashMap::new();
    for record in &data.files {
        let level = record.level as usize;
        if level >= NUM_LEVELS && record.level != TOMBSTONE_LEVEL {
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
        match record.level {
            TOMBSTONE_LEVEL => version.tombstone_files.push(TombstoneFile::load(Arc::new(file))?),
            _ => version.levels[level].push(Arc::new(file)),
        }
    }
    version.unfiled_tombstones = data.tombstones.clone();
    version.tombstones =
        Arc::new(tombstone_files::union(&version.tombstone_files, &version.unfiled_tombstones));
    Ok(version)
}
