//! Point reads. Memtables answer first, in memory; keys they cannot settle walk the files newest
//! to oldest. A batch of keys walks the files concurrently: each key is one future, and all of
//! them are in flight at once, so N block reads from the DFS cost about one round trip, not N.
//! The keys go in key order, and neighbours reuse each file's filter and index partition.
//! The scans of the same batch load their first blocks in the same flight (`prefetch_scans`), so
//! the iterators that follow find them in the block cache.

use std::cell::RefCell;
use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::{try_join, try_join_all};
use smallvec::SmallVec;

use crate::Result;
use crate::lsm::db_state::{DbInner, SuperVersion, read_view};
use crate::lsm::key::{SeqNo, ValueKind};
use crate::lsm::resolve::VersionResolver;
use crate::lsm::sst::{BlockHandle, Bloom, Index, Table, hash64};
use crate::lsm::version::{TableFile, Version};
use crate::storage::{block_on, io_runtime};

/// Data bytes a scan prefetches per file: the first blocks of a map's entries or a timer
/// queue's head, not a whole range.
const SCAN_PREFETCH_BYTES: u64 = 16 << 10;

/// A prefixed key range [start, end) that the caller is about to iterate.
pub(crate) struct ScanRange {
    pub start: Bytes,
    pub end: Bytes,
}

/// What a multi-get read: the values, in the order of its keys, and whether it waited for storage.
pub struct Reads {
    pub values: Vec<Option<Bytes>>,
    /// Whether a read (or a scan's prefetch) had to wait for storage: the memtables, the block
    /// cache and a local disk answer at once, the DFS and the Flink file systems do not.
    pub waited: bool,
}

/// Values of prefixed `keys`, in order; meanwhile the first blocks of `scans` are loaded into the
/// block cache, all of it one flight of requests.
pub(crate) fn multi_get(db: &DbInner, keys: &[Bytes], scans: &[ScanRange]) -> Result<Reads> {
    db.check_open()?;
    let (snapshot, sv) = read_view(db);
    let mut values = vec![None; keys.len()];
    let mut pending = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let mut resolver = VersionResolver::new(covering_seq(&sv, key, snapshot));
        if resolve_in_memtables(&sv, key, snapshot, &mut resolver) {
            values[i] = resolver.into_value();
        } else {
            pending.push((i, key, resolver));
        }
    }
    if pending.is_empty() && scans.is_empty() {
        return Ok(Reads { values, waited: false });
    }
    // In key order, lookups that land in the same file partition or block follow each other and
    // find its index, filter and block still in the CPU's caches.
    pending.sort_unstable_by(|a, b| a.1.cmp(b.1));
    let sv = &*sv;
    let version = &sv.version;
    let memo = &PartitionMemo::default();
    // Prefetched blocks must still be cached when their scans run.
    let prefetch_budget = db.cache.block_capacity() / 4;
    // Everything runs as far as it can at once, in the runtime's context (a cache miss may start
    // storage work) but outside `block_on`, whose entry costs more than a cached lookup. A lookup
    // whose blocks are cached or on a local disk finishes there; only those waiting for storage
    // stay in the join. (A join of every lookup would hold all their states, a few KiB each, at
    // once.)
    let in_runtime = io_runtime().enter();
    if let ([_], []) = (&pending[..], scans) {
        // One lookup, as a request run at issue makes: its future (a few KiB) stays on the
        // stack, where the general path below boxes it.
        let (i, key, mut resolver) = pending.pop().expect("one lookup");
        let waited = {
            let mut lookup = pin!(resolve_in_files(sv, key, snapshot, &mut resolver, memo));
            match lookup.as_mut().now_or_never() {
                Some(done) => {
                    done?;
                    false
                }
                None => {
                    drop(in_runtime);
                    block_on(lookup)?;
                    true
                }
            }
        };
        values[i] = resolver.into_value();
        return Ok(Reads { values, waited });
    }
    let mut waiting = Vec::new();
    for (i, key, mut resolver) in pending {
        let mut lookup = Box::pin(async move {
            resolve_in_files(sv, key, snapshot, &mut resolver, memo).await?;
            Ok::<_, crate::Error>((i, resolver.into_value()))
        });
        match (&mut lookup).now_or_never() {
            Some(done) => {
                let (i, value) = done?;
                values[i] = value;
            }
            None => waiting.push(lookup),
        }
    }
    if waiting.is_empty() && scans.is_empty() {
        return Ok(Reads { values, waited: false });
    }
    let mut rest =
        Box::pin(try_join(try_join_all(waiting), prefetch_scans(version, scans, prefetch_budget)));
    let (found, waited) = match (&mut rest).now_or_never() {
        Some(done) => (done?.0, false),
        None => {
            drop(in_runtime);
            (block_on(rest)?.0, true)
        }
    };
    for (i, value) in found {
        values[i] = value;
    }
    Ok(Reads { values, waited })
}

/// Loads the first blocks of every scan into the block cache, at most `budget` bytes: the tables'
/// index partitions in one flight, then each table's blocks, deduplicated and coalesced, in a
/// second.
async fn prefetch_scans(version: &Version, scans: &[ScanRange], budget: u64) -> Result<()> {
    let wanted = scans.iter().flat_map(|scan| files_to_prefetch(version, scan)).map(
        |(file, scan)| async move {
            let table = file.table().await?;
            let start = scan.start.as_ref().max(file.smallest());
            let blocks = table.blocks_to_prefetch(start, &scan.end, SCAN_PREFETCH_BYTES).await?;
            Ok::<_, crate::Error>((table, blocks))
        },
    );
    let mut per_table: HashMap<*const Table, (&Arc<Table>, Vec<BlockHandle>)> = HashMap::new();
    for (table, blocks) in try_join_all(wanted).await? {
        per_table.entry(Arc::as_ptr(table)).or_insert((table, Vec::new())).1.extend(blocks);
    }
    let mut left = budget;
    let loads = per_table.into_values().map(|(table, mut blocks)| {
        blocks.sort_by_key(|h| h.offset);
        blocks.dedup_by_key(|h| h.offset);
        let mut fit = 0;
        while let Some(h) = blocks.get(fit).filter(|h| h.size <= left) {
            left -= h.size;
            fit += 1;
        }
        blocks.truncate(fit);
        table.prefetch_blocks(blocks)
    });
    try_join_all(loads).await?;
    Ok(())
}

/// The files a scan of `scan` reads: every level-0 file over the range and, in each deeper level
/// (sorted, disjoint), those over it, usually one.
fn files_to_prefetch<'a>(
    version: &'a Version,
    scan: &'a ScanRange,
) -> impl Iterator<Item = (&'a Arc<TableFile>, &'a ScanRange)> + 'a {
    let starts_before_end = |f: &&Arc<TableFile>| f.smallest() < scan.end.as_ref();
    let level0 = version.levels[0].iter().filter(move |f| !f.ends_before(&scan.start));
    let deeper = version.levels[1..].iter().flat_map(move |level| {
        let first = level.partition_point(|f| f.ends_before(&scan.start));
        level[first..].iter().take_while(starts_before_end)
    });
    level0.filter(starts_before_end).chain(deeper).map(move |f| (f, scan))
}

/// Highest sequence number of a range delete covering `key` at `snapshot`: a binary search in the
/// active memtable, in each frozen one and in the version.
fn covering_seq(sv: &SuperVersion, key: &[u8], snapshot: SeqNo) -> SeqNo {
    let frozen = sv.frozen.iter().map(|m| m.frozen_tombstones().covering_seq(key));
    let flushed = sv.version.tombstones.covering_seq(key);
    let older = frozen.fold(flushed, SeqNo::max);
    // `read_view`: the snapshot includes every write of the frozen memtables and the version.
    debug_assert!(older <= snapshot, "tombstone {older} newer than snapshot {snapshot}");
    sv.mem.covering_seq(key, snapshot).max(older)
}

/// True once no older version can matter.
fn resolve_in_memtables(
    sv: &SuperVersion,
    key: &[u8],
    snapshot: SeqNo,
    resolver: &mut VersionResolver,
) -> bool {
    std::iter::once(&sv.mem)
        .chain(sv.frozen.iter())
        .any(|mem| mem.get(key, snapshot, |seq, kind, value| resolver.push(seq, kind, value)))
}

async fn resolve_in_files(
    sv: &SuperVersion,
    key: &[u8],
    snapshot: SeqNo,
    resolver: &mut VersionResolver,
    memo: &PartitionMemo,
) -> Result<()> {
    // Searched once: the prefetches and the probes below walk the same files.
    let files: SmallVec<[(usize, &Arc<TableFile>); 16]> =
        sv.file_map.files_for_key(&sv.version, key).collect();
    let lookup = Lookup { key, hash: hash64(key), snapshot };
    // The key's partition in each file already open, found once for the prefetches and the probe.
    let found: SmallVec<[Option<Option<usize>>; 16]> =
        files.iter().map(|(_, f)| f.opened().map(|t| t.partition_of(key, snapshot))).collect();
    // Each file's filter bits are a few steps away in memory (slot, counts, bits); each step
    // is taken for all files before the next, so the files' misses overlap.
    let open: SmallVec<[(usize, &Arc<Table>, usize); 16]> = files
        .iter()
        .zip(&found)
        .filter_map(|(&(n, f), found)| Some((n, f.opened()?, (*found)??)))
        .collect();
    open.iter().for_each(|&(_, t, p)| t.prefetch_filter_slot(p));
    open.iter().for_each(|&(_, t, p)| t.prefetch_filter_counts(p));
    open.iter().for_each(|&(n, t, p)| memo.prefetch_filter(n, t, p, &lookup));
    for (&(n, file), found) in files.iter().zip(found) {
        let table = file.table().await?;
        let Some(p) = found.unwrap_or_else(|| table.partition_of(key, snapshot)) else {
            continue;
        };
        let visit = |seq, kind, value| resolver.push(seq, kind, value);
        // Consults the file's bloom filter first.
        if memo.get(n, table, p, &lookup, visit).await? {
            return Ok(());
        }
    }
    Ok(())
}

/// A key looked up at `snapshot`, with its `hash64` for the filters.
struct Lookup<'a> {
    key: &'a [u8],
    hash: u64,
    snapshot: SeqNo,
}

/// The filter and index partition each file's latest lookup in a batch used. The batch looks
/// its keys up in key order, so neighbours land in the same partitions one after the other and
/// find both here instead of in the block cache (two lookups fewer per file probed). It holds one
/// entry per file, by the file's ordinal in the version (`FileMap`), for one batch (a partition
/// is a few KiB, usually also in the cache). A key first takes the filters of all files it will
/// probe (`prefetch_filter`), then probes them one by one.
#[derive(Default)]
struct PartitionMemo(RefCell<Vec<Option<MemoEntry>>>);

struct MemoEntry {
    partition: usize,
    /// Loaded once the first lookup in the partition needed it: the filter (`Some(None)`: the
    /// table has none), the index partition.
    filter: Option<Option<Arc<Bloom>>>,
    index: Option<Arc<Index>>,
}

impl PartitionMemo {
    /// `Table::get` through the memo, `table` being file `n` of the version and `p` the key's
    /// partition of it.
    async fn get(
        &self,
        n: usize,
        table: &Table,
        p: usize,
        lookup: &Lookup<'_>,
        visit: impl FnMut(SeqNo, ValueKind, Bytes) -> bool,
    ) -> Result<bool> {
        let may_contain = |filter: &Option<Arc<Bloom>>| {
            filter.as_ref().is_none_or(|b| b.may_contain_hashed(lookup.hash))
        };
        let passed = match self.with_entry(n, p, |e| e.filter.as_ref().map(may_contain)) {
            Some(passed) => passed,
            None => {
                let filter = table.filter_partition(p).await?;
                let passed = may_contain(&filter);
                self.with_entry(n, p, |e| e.filter = Some(filter));
                passed
            }
        };
        if !passed {
            return Ok(false);
        }
        let index = match self.with_entry(n, p, |e| e.index.clone()) {
            Some(index) => index,
            None => {
                let index = table.index_partition(p).await?;
                self.with_entry(n, p, |e| e.index = Some(Arc::clone(&index)));
                index
            }
        };
        table.get_in_partition(lookup.key, lookup.snapshot, p, index, visit).await
    }

    /// Prefetches the filter bits of the key in its filter partition `p` of `table`, file `n` of
    /// the version, if that partition is in memory (the memo, else the block cache, and then the
    /// memo).
    fn prefetch_filter(&self, n: usize, table: &Table, p: usize, lookup: &Lookup<'_>) {
        let prefetch =
            |filter: &Option<Arc<Bloom>>| filter.iter().for_each(|b| b.prefetch(lookup.hash));
        let memoized = self.with_entry(n, p, |e| e.filter.as_ref().map(prefetch));
        if memoized.is_none()
            && let Some(filter) = table.cached_filter_partition(p)
        {
            prefetch(&filter);
            self.with_entry(n, p, |e| e.filter = Some(filter));
        }
    }

    /// Runs `f` on the entry of file `n`, for partition `p`: it replaces the file's entry for
    /// another partition. (Never held across an await: lookups interleave.)
    fn with_entry<T>(&self, n: usize, p: usize, f: impl FnOnce(&mut MemoEntry) -> T) -> T {
        let mut entries = self.0.borrow_mut();
        if entries.len() <= n {
            entries.resize_with(n + 1, || None);
        }
        let entry = &mut entries[n];
        if entry.as_ref().is_none_or(|e| e.partition != p) {
            *entry = Some(MemoEntry { partition: p, filter: None, index: None });
        }
        f(entry.as_mut().expect("set above"))
    }
}
