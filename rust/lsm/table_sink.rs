//! Writes a sorted stream of entries into SST files of about the target size (flush and
//! compaction output). Each finished file goes to storage in one put, under a name never used
//! before: `<number>-<session>.sst`, where the session is random per open, so a restarted or
//! concurrent instance can never overwrite a file another one (or a checkpoint) still references.
//!
//! A file never spans two column families: a family's keys then lie in files of their own, so a
//! restore can clip a file to one key-group range with a single pair of bounds.

use std::sync::Arc;

use crate::Result;
use crate::lsm::column_family::{ColumnFamilyId, family_of};
use crate::lsm::db::DbInner;
use crate::lsm::key::{SeqNo, ValueKind};
use crate::lsm::sst::{Table, TableBuilder};
use crate::lsm::version::TableFile;
use crate::storage::{WriteMode, block_on};

pub struct TableSink<'a> {
    db: &'a DbInner,
    builder: Option<TableBuilder>,
    outputs: Vec<Arc<TableFile>>,
    tombstones_applied_through: SeqNo,
    /// Column family of the file being built.
    family: Option<ColumnFamilyId>,
}

impl<'a> TableSink<'a> {
    /// `tombstones_applied_through`: see `TableFile`; the caller drops what those tombstones cover.
    pub fn new(db: &'a DbInner, tombstones_applied_through: SeqNo) -> Self {
        TableSink {
            db,
            builder: None,
            outputs: Vec::new(),
            tombstones_applied_through,
            family: None,
        }
    }

    /// Adds an entry; the caller guarantees internal order and one entry per user key.
    pub fn add(&mut self, key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> Result<()> {
        let family = family_of(key);
        if self.family != family {
            self.finish_file()?;
            self.family = family;
        }
        let builder =
            self.builder.get_or_insert_with(|| TableBuilder::new(self.db.options.table.clone()));
        builder.add(key, seq, kind, value);
        if builder.estimated_size() >= self.db.options.target_file_bytes {
            self.finish_file()?;
        }
        Ok(())
    }

    /// Writes the last file and returns every file written. On error, files already written are
    /// dropped as obsolete, so nothing is left behind.
    pub fn finish(mut self) -> Result<Vec<Arc<TableFile>>> {
        if let Err(e) = self.finish_file() {
            self.outputs.iter().for_each(|f| f.mark_obsolete());
            return Err(e);
        }
        Ok(std::mem::take(&mut self.outputs))
    }

    fn finish_file(&mut self) -> Result<()> {
        let Some(builder) = self.builder.take().filter(|b| !b.is_empty()) else {
            return Ok(());
        };
        let (bytes, props) = builder.finish()?;
        let number = self.db.new_file_number();
        let path = format!("{number:012}-{:016x}.sst", self.db.session);
        let storage = self.db.storage.clone();
        let size = bytes.len() as u64;
        debug_assert_eq!(size, props.size);
        let table = block_on(async {
            storage.put(&path, bytes, WriteMode::CreateNew).await?;
            Table::open(storage.clone(), path.clone(), size, self.db.cache.clone()).await
        });
        let table = match table {
            Ok(t) => t,
            Err(e) => {
                // The put may have succeeded; the file is unreferenced either way.
                let _ = block_on(self.db.storage.delete(&path));
                return Err(e);
            }
        };
        self.outputs.push(Arc::new(TableFile::new(
            number,
            path,
            Arc::new(table),
            self.tombstones_applied_through,
            storage,
            self.db.cache.clone(),
            self.db.obsolete_files.clone(),
        )));
        Ok(())
    }
}

impl Drop for TableSink<'_> {
    fn drop(&mut self) {
        // Outputs not handed over by `finish` belong to a failed flush or compaction.
        self.outputs.iter().for_each(|f| f.mark_obsolete());
    }
}
