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
use crate::lsm::db_state::DbInner;
use crate::lsm::key::{SeqNo, ValueKind};
use crate::lsm::sst::{Table, TableBuilder};
use crate::lsm::version::{TableFile, table_file_name};
use crate::storage::{FileWriter, WriteMode, block_on};

/// A file being built streams its finished blocks to storage in pieces of this size, so flush and
/// compaction hold about this much of each output in memory rather than the whole file (which
/// would sit outside the memory budget). Smaller files go to storage in one put.
const STREAM_BYTES: usize = 4 << 20;

/// The charge of the builder's memory to the block cache follows it in steps of this size, so the
/// cache's capacity is not recomputed for every block.
const CHARGE_STEP: u64 = 64 << 10;

/// A file being streamed: its number, name and open writer.
struct Streaming {
    number: u64,
    path: String,
    writer: Box<dyn FileWriter>,
    /// What the writer held after the last chunk (read per chunk, not per entry: asking an
    /// object-store writer reaps its finished part uploads).
    writer_held: u64,
}

pub struct TableSink<'a> {
    db: &'a DbInner,
    /// A file is cut once it reaches this size.
    target_file_bytes: u64,
    builder: Option<TableBuilder>,
    streaming: Option<Streaming>,
    outputs: Vec<Arc<TableFile>>,
    tombstones_applied_through: SeqNo,
    /// Column family of the file being built.
    family: Option<ColumnFamilyId>,
    /// Bytes of the builder's and the writer's memory charged to the block cache (see
    /// `charge_held`).
    charged: u64,
}

impl<'a> TableSink<'a> {
    /// `tombstones_applied_through`: see `TableFile`; the caller drops what those tombstones cover.
    pub fn new(db: &'a DbInner, tombstones_applied_through: SeqNo) -> Self {
        TableSink {
            db,
            target_file_bytes: db.options.target_file_bytes,
            builder: None,
            streaming: None,
            outputs: Vec::new(),
            tombstones_applied_through,
            family: None,
            charged: 0,
        }
    }

    /// A sink writing one file per column family, whatever its size: a flush adds one sorted run
    /// to level 0, so the L0 file count that triggers compaction counts flushes (as in RocksDB)
    /// rather than target-sized pieces of them.
    pub fn for_flush(db: &'a DbInner, tombstones_applied_through: SeqNo) -> Self {
        let mut sink = Self::new(db, tombstones_applied_through);
        sink.target_file_bytes = u64::MAX;
        sink
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
        if builder.estimated_size() >= self.target_file_bytes {
            self.finish_file()?;
        } else if builder.buffered() >= STREAM_BYTES {
            self.stream()?;
        }
        self.charge_held();
        Ok(())
    }

    /// Keeps the block cache charged with what the builder holds (blocks waiting to be streamed,
    /// the file's index and filter) and what the file's writer holds (its buffer, parts still
    /// uploading to an object store): flush and compaction output is memory of the engine too.
    fn charge_held(&mut self) {
        let building = self.builder.as_ref().map_or(0, TableBuilder::held_bytes);
        let writing = self.streaming.as_ref().map_or(0, |s| s.writer_held);
        let held = building + writing;
        if held.abs_diff(self.charged) >= CHARGE_STEP || (held == 0 && self.charged > 0) {
            self.db.cache.charge_buffer(self.charged, held);
            self.charged = held;
        }
    }

    /// Hands the finished blocks of the file being built to its writer (opened on first use).
    fn stream(&mut self) -> Result<()> {
        let Some(builder) = self.builder.as_mut() else {
            return Ok(());
        };
        let chunk = builder.drain();
        if self.streaming.is_none() {
            let (number, path) = self.new_file_name();
            let writer = block_on(self.db.storage.create(&path))?;
            self.streaming = Some(Streaming { number, path, writer, writer_held: 0 });
        }
        let streaming = self.streaming.as_mut().expect("opened above");
        let written = block_on(streaming.writer.write(chunk));
        streaming.writer_held = streaming.writer.held_bytes();
        if written.is_err() {
            self.abort_streaming();
        }
        written
    }

    fn new_file_name(&self) -> (u64, String) {
        let number = self.db.new_file_number();
        (number, table_file_name(number, self.db.session))
    }

    /// Drops the file being streamed (a failed flush or compaction leaves nothing behind).
    fn abort_streaming(&mut self) {
        if let Some(streaming) = self.streaming.take()
            && let Err(e) = block_on(streaming.writer.abort())
        {
            tracing::warn!("could not abort {}: {e}", streaming.path);
        }
    }

    /// Writes the last file and returns every file written. On error, files already written are
    /// dropped as obsolete, so nothing is left behind.
    pub fn finish(mut self) -> Result<Vec<Arc<TableFile>>> {
        let finished = self.finish_file();
        self.charge_held();
        if let Err(e) = finished {
            self.outputs.iter().for_each(|f| f.mark_obsolete());
            return Err(e);
        }
        Ok(std::mem::take(&mut self.outputs))
    }

    fn finish_file(&mut self) -> Result<()> {
        let Some(builder) = self.builder.take().filter(|b| !b.is_empty()) else {
            return Ok(());
        };
        let (bytes, props) = match builder.finish() {
            Ok(finished) => finished,
            Err(e) => {
                self.abort_streaming();
                return Err(e);
            }
        };
        let storage = self.db.storage.clone();
        let size = props.size;
        let (number, path, stored) = match self.streaming.take() {
            None => {
                let (number, path) = self.new_file_name();
                let stored = block_on(storage.put(&path, bytes, WriteMode::CreateNew));
                (number, path, stored)
            }
            Some(Streaming { number, path, mut writer, .. }) => {
                let stored = block_on(async {
                    if let Err(e) = writer.write(bytes).await {
                        let _ = writer.abort().await;
                        return Err(e);
                    }
                    let written = writer.finish().await?;
                    if written != size {
                        return Err(crate::Error::corruption(
                            &path,
                            written,
                            format!("wrote {written} bytes of a {size}-byte file"),
                        ));
                    }
                    Ok(())
                });
                (number, path, stored)
            }
        };
        let table = stored.and_then(|()| {
            block_on(Table::open(storage.clone(), path.clone(), size, self.db.cache.clone()))
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
        self.abort_streaming();
        self.db.cache.charge_buffer(self.charged, 0);
    }
}
