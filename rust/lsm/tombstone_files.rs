//! Range tombstones on storage. Flushed range deletes live in the version (`Version::tombstones`,
//! where reads find them) and, durably, in tombstone files that the manifest lists by name, not
//! in the manifest itself: a job that clears many maps would otherwise rewrite every one of its
//! tombstones in every manifest (one per flush, compaction and checkpoint hand-over).
//!
//! A tombstone file is an SST like any other (same format, checksums, ownership, hand-over to
//! checkpoints and restore by reference): one entry per fragment, its start as the key, its end as
//! the value, its sequence number as the entry's. The manifest lists it at `TOMBSTONE_LEVEL`; it
//! is never read as data.
//!
//! The version's tombstones are always exactly those of its files (each file's kept in memory
//! beside the union reads use), never fewer: a reopen or restore must not bring back a tombstone
//! the version had forgotten, since compaction gives bottom-level entries under no tombstone
//! sequence number 0 and a forgotten tombstone would delete them. So tombstones are forgotten a
//! file at a time: a file goes once none of its sequence numbers is carried by a fragment that may
//! still delete something (`Version::forget_spent_tombstones`); until then its spent fragments
//! stay in the version too. A flush writes its new range deletes that files still need into a
//! new file; when `MAX_FILES` are listed, or the spent fragments outnumber the live ones, it writes
//! the live ones into one file that replaces them all.

use std::sync::Arc;

use bytes::Bytes;

use crate::Result;
use crate::lsm::db_state::DbInner;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::ValueKind;
use crate::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use crate::lsm::sst::{Table, TableBuilder, TableOptions, TableProperties};
use crate::lsm::version::manifest::FileRecord;
use crate::lsm::version::{TableFile, table_file_name};
use crate::storage::{Storage, WriteMode, block_on};

/// The level byte of a tombstone file in the manifest (manifest format 6 on).
pub const TOMBSTONE_LEVEL: u8 = u8::MAX;

/// Tombstone files listed at most before a flush merges them into one.
pub const MAX_FILES: usize = 8;

/// Bytes per request when a tombstone file is read whole.
const READAHEAD: usize = 1 << 20;

/// Spent fragments the version keeps at most (or as many as it has live ones, if more) before a
/// flush rewrites its tombstone files.
pub const MAX_SPENT_FRAGMENTS: usize = 1024;

/// A tombstone file of the version and the range deletes it holds.
#[derive(Debug, Clone)]
pub struct TombstoneFile {
    pub file: Arc<TableFile>,
    pub tombstones: Arc<FragmentedTombstones>,
}

impl TombstoneFile {
    /// Reads the range deletes of `file`.
    pub(crate) fn load(file: Arc<TableFile>) -> Result<TombstoneFile> {
        let tombstones = Arc::new(FragmentedTombstones::new(read(&file)?));
        Ok(TombstoneFile { file, tombstones })
    }
}

/// Every range delete of `files` and `unfiled` (those a manifest listed itself), fragmented: the
/// version's tombstones.
pub(crate) fn union(
    files: &[TombstoneFile],
    unfiled: &FragmentedTombstones,
) -> FragmentedTombstones {
    let sets = files.iter().map(|t| t.tombstones.as_ref()).chain([unfiled]);
    let all: Vec<RangeTombstone> =
        sets.flat_map(|set| set.iter().map(|f| f.to_tombstone())).collect();
    FragmentedTombstones::new(all)
}

/// The bytes of a tombstone file holding `tombstones`, and its properties (keys: the first and
/// last fragment's start; sequence numbers: theirs).
pub(crate) fn encode(
    tombstones: &FragmentedTombstones,
    options: TableOptions,
) -> Result<(Bytes, TableProperties)> {
    // Read whole, never probed by key: no filter.
    let mut builder = TableBuilder::new(TableOptions { bloom_bits_per_key: 0, ..options });
    for fragment in tombstones.iter() {
        builder.add(fragment.start, fragment.seq, ValueKind::Put, fragment.end);
    }
    builder.finish()
}

/// Writes `tombstones` into a new tombstone file of the database.
pub(crate) fn write(db: &DbInner, tombstones: Arc<FragmentedTombstones>) -> Result<TombstoneFile> {
    let (bytes, props) = encode(&tombstones, db.options.table.clone())?;
    // The file's bytes are the engine's memory until stored.
    let held = bytes.len() as u64;
    db.cache.charge_buffer(0, held);
    let number = db.new_file_number();
    let stored = block_on(put(db.storage.as_ref(), bytes, props, number, db.session));
    db.cache.charge_buffer(held, 0);
    let record = stored?;
    let path = record.path;
    let opened =
        block_on(Table::open(db.storage.clone(), path.clone(), record.size, db.cache.clone()));
    let table = match opened {
        Ok(table) => table,
        Err(e) => {
            // The file is unreferenced.
            let _ = block_on(db.storage.delete(&path));
            return Err(e);
        }
    };
    let file = Arc::new(TableFile::new(
        number,
        path,
        Arc::new(table),
        record.tombstones_applied_through,
        db.storage.clone(),
        db.cache.clone(),
        db.obsolete_files.clone(),
    ));
    Ok(TombstoneFile { file, tombstones })
}

/// Writes `tombstones` into tombstone file `number` of `session` in `storage` and returns its
/// manifest record (owned).
pub(crate) async fn write_record(
    storage: &dyn Storage,
    tombstones: &FragmentedTombstones,
    number: u64,
    session: u64,
    options: TableOptions,
) -> Result<FileRecord> {
    let (bytes, props) = encode(tombstones, options)?;
    put(storage, bytes, props, number, session).await
}

async fn put(
    storage: &dyn Storage,
    bytes: Bytes,
    props: TableProperties,
    number: u64,
    session: u64,
) -> Result<FileRecord> {
    let path = table_file_name(number, session);
    storage.put(&path, bytes, WriteMode::CreateNew).await?;
    Ok(FileRecord {
        level: TOMBSTONE_LEVEL,
        number,
        size: props.size,
        path,
        props,
        // Never read as data: no tombstone applies to it.
        tombstones_applied_through: 0,
        bounds: None,
        owned: true,
        location: None,
    })
}

/// Every tombstone of a tombstone file, read in requests of up to `READAHEAD` bytes (a few round
/// trips on a DFS, not one per block), charged to the block cache while held.
pub(crate) fn read(file: &TableFile) -> Result<Vec<RangeTombstone>> {
    let mut it = file.iter(READAHEAD)?;
    it.seek(&[])?;
    let mut tombstones = Vec::with_capacity(file.props().entries as usize);
    while it.valid() {
        tombstones.push(RangeTombstone {
            start: Bytes::copy_from_slice(it.key()),
            end: Bytes::copy_from_slice(it.value()),
            seq: it.seq(),
        });
        it.next()?;
    }
    Ok(tombstones)
}
