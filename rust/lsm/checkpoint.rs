//! Checkpoints (FLIP-428): the synchronous phase freezes the memtable and pins the current files,
//! without I/O; the asynchronous phase waits for the frozen data to be flushed, then describes the
//! checkpoint (its files and a manifest) and either hands the files over where they are (they
//! become the checkpoint's; the database never deletes them again) or, when the checkpoint lives
//! on another file system or must own its files (native savepoints), copies them into a
//! checkpoint directory, inside the storage whenever it can (hard link, server-side copy).
//!
//! What a checkpoint holds is exact: the version that the flush of the last memtable frozen at the
//! synchronous phase installed. Memtables flush in order, so that version has every write up to
//! the freeze and none after, whatever flushes and compactions run meanwhile.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::lsm::db::Db;
use crate::lsm::db_state::DbInner;
use crate::lsm::key::SeqNo;
use crate::lsm::locks::Recover;
use crate::lsm::memtable::MemTable;
use crate::lsm::version::manifest::{self, ManifestData};
use crate::lsm::version::{TableFile, Version};
use crate::storage::{Storage, block_on, read_range_exact};
use crate::{Error, Result};

/// Copies in flight at once: enough to hide per-request latency of a DFS.
const COPY_CONCURRENCY: usize = 8;

/// A checkpoint being taken. Its files stay on storage until it is dropped.
pub struct Checkpoint {
    db: Arc<DbInner>,
    /// The newest memtable frozen by the synchronous phase; None once its flush is seen (or if
    /// nothing was waiting).
    pending: Option<Arc<MemTable>>,
    /// The files of the checkpoint once `pending` is None; until then, the files at the freeze
    /// (pinned so that the asynchronous phase finds them).
    version: Arc<Version>,
    last_seq: SeqNo,
    column_families: Vec<(String, u32)>,
}

impl Db {
    /// The synchronous phase of a checkpoint: freezes the memtable and pins the live files. No
    /// I/O, no waiting on background work, cost independent of state and memtable size.
    pub fn checkpoint(&self) -> Result<Checkpoint> {
        let inner = &self.inner;
        inner.check_open()?;
        let _writer = inner.write_lock.lock().recover();
        // `wait_durable` wakes the flush thread, off the task thread.
        inner.freeze_memtable_quietly();
        let sv = inner.current();
        let column_families = inner.column_families();
        Ok(Checkpoint {
            db: inner.clone(),
            // Frozen memtables are listed newest first.
            pending: sv.frozen.first().cloned(),
            version: sv.version.clone(),
            last_seq: inner.visible_seq(),
            column_families,
        })
    }
}

impl Drop for Checkpoint {
    fn drop(&mut self) {
        // Released before its asynchronous phase: the flush thread still has to learn about the
        // memtable the synchronous phase froze.
        if self.pending.is_some() {
            self.db.notify_background();
        }
    }
}

impl Checkpoint {
    /// Every write up to the checkpoint has a sequence number <= this.
    pub fn last_seq(&self) -> SeqNo {
        self.last_seq
    }

    /// Waits until the data frozen by the synchronous phase is in files (asynchronous phase).
    /// Fails if the database fails or closes meanwhile.
    pub fn wait_durable(&mut self) -> Result<()> {
        let Some(pending) = self.pending.clone() else {
            return Ok(());
        };
        let db = &self.db;
        db.notify_background();
        let mut background = db.background.lock().recover();
        loop {
            if let Some(version) = pending.flushed_into() {
                self.version = version.clone();
                self.pending = None;
                return Ok(());
            }
            db.check_running(&background, "database closed during a checkpoint")?;
            background = db.background_changed.wait(background).recover();
        }
    }

    fn durable_version(&self) -> Result<&Arc<Version>> {
        if self.pending.is_some() {
            return Err(Error::invalid("checkpoint is not durable yet: call wait_durable first"));
        }
        Ok(&self.version)
    }

    /// The checkpoint's SST files: (name relative to the database directory, size).
    pub fn files(&self) -> Result<Vec<(String, u64)>> {
        Ok(self.durable_version()?.all_files().map(|f| (f.path.clone(), f.size)).collect())
    }

    /// Where each file of `files` lives when not in the database's directory (a checkpoint's
    /// file restored by reference: see `manifest::FileRecord::location`), in the same order. Such
    /// a file cannot be handed over; it is the earlier checkpoint's already.
    pub fn file_locations(&self) -> Result<Vec<Option<String>>> {
        Ok(self.durable_version()?.all_files().map(|f| f.location()).collect())
    }

    /// The checkpoint's manifest: what `restore` needs besides the files.
    pub fn manifest(&self) -> Result<Bytes> {
        let version = self.durable_version()?;
        Ok(manifest::encode(&ManifestData {
            last_seq: self.last_seq,
            next_file_number: 0,
            column_families: self.column_families.clone(),
            tombstones: version.unfiled_tombstones.clone(),
            files: version.file_records(),
            released: Vec::new(),
            hand_overs: Vec::new(),
        }))
    }

    /// Reads at most `max_len` bytes of the checkpoint's file `name` from `offset` (fewer only
    /// at the end of the file, none at or past it). For checkpoint storages that take streams
    /// rather than files (Flink's JobManager storage), which the files are streamed into.
    pub fn read_file(&self, name: &str, offset: u64, max_len: u64) -> Result<Bytes> {
        let file =
            self.durable_version()?.all_files().find(|f| f.path == name).ok_or_else(|| {
                Error::invalid(format!("{name} is not a file of this checkpoint"))
            })?;
        let start = offset.min(file.size);
        let end = offset.saturating_add(max_len).min(file.size);
        if start == end {
            return Ok(Bytes::new());
        }
        let at = file.stored_at();
        block_on(read_range_exact(at.storage.as_ref(), &at.path, start..end))
    }

    /// Hands the checkpoint's files `names` over to the checkpoint where they are, in the
    /// database's directory under the same names: no byte moves. From then on the database never
    /// deletes them (whoever holds the checkpoint does, Flink's SharedStateRegistry); a new
    /// manifest records that before this returns, so a reopen does not collect them either.
    /// `checkpoint_id` is recorded as the file's first hand-over unless an earlier one is.
    pub fn hand_over(&self, names: &[String], checkpoint_id: u64) -> Result<()> {
        let by_name: HashMap<&str, &Arc<TableFile>> =
            self.durable_version()?.all_files().map(|f| (f.path.as_str(), f)).collect();
        let mut files = Vec::with_capacity(names.len());
        for name in names {
            let file = by_name.get(name.as_str()).ok_or_else(|| {
                Error::invalid(format!("{name} is not a file of this checkpoint"))
            })?;
            if let Some(location) = file.location() {
                return Err(Error::invalid(format!(
                    "{name} is not in the database's directory but at {location}: it cannot be \
                     handed over"
                )));
            }
            files.push((*file).clone());
        }
        self.db.give_away(&files, checkpoint_id)
    }

    /// Copies files of the checkpoint, `(name, destination name)`, into `dest`, concurrently.
    /// Returns the bytes that passed through this process (0 if every copy stayed inside the
    /// storage). On failure, copies already made are left for the caller to delete.
    pub fn copy_files(&self, copies: &[(String, String)], dest: &dyn Storage) -> Result<u64> {
        let by_name: HashMap<&str, &Arc<TableFile>> =
            self.durable_version()?.all_files().map(|f| (f.path.as_str(), f)).collect();
        let mut jobs = Vec::with_capacity(copies.len());
        for (name, dest_name) in copies {
            let file = by_name.get(name.as_str()).ok_or_else(|| {
                Error::invalid(format!("{name} is not a file of this checkpoint"))
            })?;
            let at = file.stored_at();
            jobs.push(async move { dest.copy_in(at.storage.as_ref(), &at.path, dest_name).await });
        }
        block_on(
            futures::stream::iter(jobs).buffer_unordered(COPY_CONCURRENCY).try_fold(
                0u64,
                |total, transfer| async move { Ok(total + transfer.streamed_bytes()) },
            ),
        )
    }
}
