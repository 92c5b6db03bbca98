//! Entry points for the fuzz targets (`fuzz/`) and their regression test
//! (`tests/fuzz_regressions.rs`), re-exported by `crate::fuzzing`: each feeds untrusted bytes to
//! one family of SST decoders the way the reader does and returns whether they decoded. None may
//! panic, hang or allocate far beyond its input, whatever the bytes.
//!
//! Checksums would stop a fuzzer at the first block, so every entry decodes its input once as
//! given and once "sealed" (checksums recomputed over the mutated bytes, `seal_table`): the
//! decoders behind the checksums see mutated structure.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::block::{Block, BlockIter};
use super::bloom::{Bloom, hash64};
use super::coding::Decoded;
use super::footer::{FOOTER_LEN, FORMAT_WHOLE_INDEX, Footer};
use super::framing::{BLOCK_TRAILER_LEN, checksum, read_block};
use super::handle::BlockHandle;
use super::index::Index;
use super::partitions::decode_directory;
use super::{Table, properties};
use crate::Result;
use crate::lsm::cache::BlockCache;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{MAX_SEQ, SeqNo};
use crate::storage::{StorageOptions, StorageRef, WriteMode, block_on, open_storage};

/// Keys looked up again after a scan, so the work per input stays linear in its size.
const MAX_PROBED_KEYS: usize = 64;

/// Fixed lookups every decoded index or block is also asked about: empty, short, and keys that
/// tie on a 16-byte head with longer ones.
fn probe_keys() -> [(&'static [u8], SeqNo); 5] {
    [
        (b"", MAX_SEQ),
        (b"a", 0),
        (b"key00100", 50),
        (&[0xff; 24], MAX_SEQ),
        (b"mmmmmmmmmmmmmmmmz", 7),
    ]
}

/// One stored block (`payload | type | crc`): unframed (checksum, LZ4) and decoded as a data
/// block, then walked and searched. With `data[0]` odd, the rest is a raw data block instead.
pub fn sst_block(data: &[u8]) -> bool {
    let Some((&mode, rest)) = data.split_first() else {
        return false;
    };
    if mode & 1 == 1 {
        return walk_block(Bytes::copy_from_slice(rest)).is_ok();
    }
    let _ = read_block(&Bytes::copy_from_slice(rest));
    let mut sealed = rest.to_vec();
    seal_stored(&mut sealed);
    read_block(&Bytes::from(sealed)).and_then(walk_block).is_ok()
}

fn walk_block(raw: Bytes) -> Decoded<()> {
    let block = Arc::new(Block::decode(raw)?);
    let mut it = BlockIter::new(Arc::clone(&block));
    it.seek_to_first()?;
    let mut keys = Vec::new();
    while it.valid() {
        if keys.len() < MAX_PROBED_KEYS {
            keys.push((it.user_key().to_vec(), it.seq()));
        }
        let _ = (it.kind(), it.value(), it.value_bytes());
        it.next()?;
    }
    let fixed = probe_keys().map(|(k, s)| (k.to_vec(), s));
    for (key, seq) in keys.iter().chain(&fixed) {
        it.seek(key, *seq)?;
        if it.valid() {
            it.next()?;
        }
    }
    Ok(())
}

/// A bloom filter partition, probed for a few keys.
pub fn filter(data: &[u8]) -> bool {
    let Ok(bloom) = Bloom::decode(Bytes::copy_from_slice(data)) else {
        return false;
    };
    for (key, _) in probe_keys() {
        let hash = hash64(key);
        bloom.prefetch(hash);
        let _ = bloom.may_contain_hashed(hash);
    }
    let _ = bloom.memory_size();
    true
}

/// The meta blocks of a file, chosen by `data[0] % 4` and decoded from the rest: 0 an index
/// (partition or top level) searched for a few keys, 1 the footer (sealed), 2 the properties,
/// 3 a filter directory whose partition count is `data[1]`.
pub fn sst_meta(data: &[u8]) -> bool {
    let Some((&kind, rest)) = data.split_first() else {
        return false;
    };
    match kind % 4 {
        0 => {
            let mut ok = false;
            for data_end in [rest.len() as u64, u64::MAX] {
                if let Ok(index) = Index::decode(rest, data_end) {
                    probe_index(&index);
                    ok = true;
                }
            }
            ok
        }
        1 => {
            let _ = Footer::decode(rest);
            let mut sealed = rest.to_vec();
            seal_footer(&mut sealed);
            Footer::decode(&sealed).is_ok()
        }
        2 => properties::decode(rest, rest.len() as u64).is_ok(),
        _ => {
            let Some((&count, rest)) = rest.split_first() else {
                return false;
            };
            decode_directory(rest, usize::from(count), u64::MAX).is_ok()
        }
    }
}

fn probe_index(index: &Index) {
    for i in 0..index.len() {
        let _ = index.handle(i);
    }
    for (key, seq) in probe_keys() {
        let found = index.find(key, seq);
        if found < index.len() {
            let _ = index.compare_last_key(found, key);
        }
    }
    let _ = index.memory_size();
}

/// Names the files `sst_table` stores, so that concurrent callers (test threads) do not meet.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// A whole SST file image, sealed (`seal_table`), opened from an in-memory store through
/// `Table::open` and read as the engine does: every entry by a user scan and by a compaction's
/// readahead scan, then point lookups (filter, index partition, blocks) and seeks for the keys
/// found, and a scan's block prefetch.
pub fn sst_table(data: &[u8]) -> bool {
    let mut file = data.to_vec();
    seal_table(&mut file);
    let storage = memory_storage();
    let path = format!("fuzz-{}.sst", NEXT_FILE.fetch_add(1, Ordering::Relaxed));
    if block_on(storage.put(&path, Bytes::from(file), WriteMode::Overwrite)).is_err() {
        return false;
    }
    let cache = Arc::new(BlockCache::new(16 << 20));
    let size = data.len() as u64;
    let read = block_on(Table::open(storage.clone(), path.clone(), size, cache))
        .map(Arc::new)
        .and_then(|table| read_table(&table));
    let _ = block_on(storage.delete(&path));
    read.is_ok()
}

fn memory_storage() -> StorageRef {
    open_storage("memory://forst-fuzz-sst", &StorageOptions::default())
        .expect("a memory store opens")
}

fn read_table(table: &Arc<Table>) -> Result<()> {
    let _ = (table.properties(), table.memory_size());
    let mut keys = Vec::new();
    for readahead in [0, 4096] {
        let mut it = table.iter(readahead);
        it.seek_to_first()?;
        while it.valid() {
            if keys.len() < MAX_PROBED_KEYS {
                keys.push((it.key().to_vec(), it.seq()));
            }
            let _ = (it.kind(), it.value());
            it.next()?;
        }
    }
    let fixed = probe_keys().map(|(k, s)| (k.to_vec(), s));
    for (key, seq) in keys.iter().chain(&fixed) {
        point_lookup(table, key, *seq)?;
        let mut it = table.iter(0);
        it.seek(key)?;
        let mut end = key.clone();
        end.push(0xff);
        let blocks = block_on(table.blocks_to_prefetch(key, &end, 1 << 20))?;
        block_on(table.prefetch_blocks(blocks))?;
    }
    Ok(())
}

/// What `read::PartitionMemo` does for one key of a `multi_get`.
fn point_lookup(table: &Table, key: &[u8], seq: SeqNo) -> Result<()> {
    let Some(p) = table.partition_of(key, seq) else {
        return Ok(());
    };
    table.prefetch_filter_slot(p);
    table.prefetch_filter_counts(p);
    let _ = table.cached_filter_partition(p);
    if let Some(bloom) = block_on(table.filter_partition(p))?
        && !bloom.may_contain_hashed(hash64(key))
    {
        return Ok(());
    }
    let index = block_on(table.index_partition(p))?;
    block_on(table.get_in_partition(key, seq, p, index, |_, _, _| false))?;
    Ok(())
}

/// Recomputes every checksum the reader will verify, walking the file as `Table::open` and the
/// reads do: the footer's, then those of the blocks it points at, of the index and filter
/// partitions, and of the data blocks the partitions list. Where a block does not decode the
/// walk stops there (the reader fails there too). Deterministic, so a sealed input reproduces.
pub fn seal_table(file: &mut [u8]) {
    walk_table(file, true, &mut |_, _| {});
}

/// The pieces of an SST file as inputs of the other targets, named by target: its data blocks
/// (`sst_block`, stored and raw), filter partitions (`filter`), and index partitions, top-level
/// index, footer, properties and filter directory (`sst_meta`). Seeds the fuzzers with real
/// structure.
pub fn table_seeds(file: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    // A few data blocks are variety enough; a large file has thousands.
    const DATA_BLOCKS: usize = 8;
    let mut seeds = Vec::new();
    let mut data_blocks = 0;
    let mut copy = file.to_vec();
    walk_table(&mut copy, false, &mut |part, stored| {
        let raw =
            || read_block(&Bytes::copy_from_slice(stored)).map(|b| b.to_vec()).unwrap_or_default();
        let with = |head: &[u8], body: Vec<u8>| [head, &body].concat();
        match part {
            Part::Footer => seeds.push(("sst_meta", with(&[1], stored.to_vec()))),
            Part::Properties => seeds.push(("sst_meta", with(&[2], raw()))),
            Part::Index => seeds.push(("sst_meta", with(&[0], raw()))),
            Part::Directory(count) => seeds.push(("sst_meta", with(&[3, count as u8], raw()))),
            Part::Filter => seeds.push(("filter", raw())),
            Part::Data if data_blocks < DATA_BLOCKS => {
                data_blocks += 1;
                seeds.push(("sst_block", with(&[0], stored.to_vec())));
                seeds.push(("sst_block", with(&[1], raw())));
            }
            Part::Data => {}
        }
    });
    seeds
}

/// What a stored piece of an SST file is.
enum Part {
    Footer,
    Properties,
    /// The top-level index or an index partition.
    Index,
    /// The filter directory, of that many partitions.
    Directory(usize),
    Filter,
    Data,
}

/// Visits each piece of `file` the reader would reach (sealing it first if `seal`), in the
/// reader's order.
fn walk_table(file: &mut [u8], seal: bool, visit: &mut dyn FnMut(Part, &[u8])) {
    let Some(footer_at) = file.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    if seal {
        seal_footer(&mut file[footer_at..]);
    }
    visit(Part::Footer, &file[footer_at..]);
    let Ok(footer) = Footer::decode(&file[footer_at..]) else {
        return;
    };
    let metas = [Some(footer.index), footer.filter, Some(footer.properties)];
    let meta_start = metas.iter().flatten().map(|h| h.offset).min().unwrap_or(0);
    let mut piece = |file: &mut [u8], part: Part, h: BlockHandle| {
        let stored = block_range(h).and_then(|range| file.get_mut(range))?;
        if seal {
            seal_stored(stored);
        }
        visit(part, stored);
        Some(Bytes::copy_from_slice(stored))
    };
    let _ = piece(file, Part::Properties, footer.properties);
    let whole_index = footer.version == FORMAT_WHOLE_INDEX;
    let (partitions, filters, data_end) = if whole_index {
        // Format 1: one partition, the whole index and filter, before the properties.
        (vec![footer.index], footer.filter.into_iter().collect(), meta_start)
    } else {
        let top = piece(file, Part::Index, footer.index)
            .and_then(|stored| decode(&stored, |raw| Index::decode(raw, meta_start)));
        let Some(top) = top else { return };
        let partitions: Vec<BlockHandle> = top.handles().collect();
        let filters = footer
            .filter
            .and_then(|h| piece(file, Part::Directory(partitions.len()), h))
            .and_then(|stored| {
                decode(&stored, |raw| decode_directory(raw, partitions.len(), meta_start))
            })
            .unwrap_or_default();
        // As `Table::open` finds it: where the first partition (filter or index) starts.
        let first = partitions.first().map_or(0, |h| h.offset);
        let data_end = filters.first().map_or(first, |f: &BlockHandle| f.offset.min(first));
        (partitions, filters, data_end)
    };
    for f in filters {
        let _ = piece(file, Part::Filter, f);
    }
    for p in partitions {
        let index = piece(file, Part::Index, p)
            .and_then(|stored| decode(&stored, |raw| Index::decode(raw, data_end)));
        for block in index.iter().flat_map(|index| index.handles()) {
            let _ = piece(file, Part::Data, block);
        }
    }
}

/// A stored block, unframed and decoded, if it decodes.
fn decode<T>(stored: &Bytes, decode: impl FnOnce(&[u8]) -> Decoded<T>) -> Option<T> {
    read_block(stored).and_then(|raw| decode(&raw)).ok()
}

fn block_range(h: BlockHandle) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(h.offset).ok()?;
    Some(start..usize::try_from(h.end()?).ok()?)
}

/// Recomputes the checksum of one stored block (`payload | type | crc`).
fn seal_stored(stored: &mut [u8]) {
    if let Some(crc_at) = stored.len().checked_sub(BLOCK_TRAILER_LEN - 1)
        && stored.len() >= BLOCK_TRAILER_LEN
    {
        let crc = checksum(&stored[..crc_at]);
        stored[crc_at..].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Recomputes a footer's checksum (its magic and version are left as they are).
fn seal_footer(footer: &mut [u8]) {
    if footer.len() == FOOTER_LEN {
        let crc = checksum(&footer[..52]);
        footer[52..56].copy_from_slice(&crc.to_le_bytes());
    }
}
