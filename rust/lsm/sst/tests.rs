//! End-to-end tests of the SST format: build a file, open it from storage, read it back, and
//! damage it in every way the reader must survive.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::test_util::MemStorage;
use super::*;
use crate::lsm::cache::BlockCache;
use crate::lsm::iterator::InternalIterator;
use crate::lsm::key::{MAX_SEQ, SeqNo, ValueKind};
use crate::storage::block_on;
use crate::{Error, Result};

type Entry = (Vec<u8>, SeqNo, ValueKind, Vec<u8>);

fn user_key(i: usize) -> Vec<u8> {
    format!("\x01cf/user{i:06}").into_bytes()
}

/// Entries in internal order: `keys` user keys (every other index, so odd ones are absent),
/// 1..=4 versions each, and a few keys with long version chains that span several blocks.
fn dataset(keys: usize, seed: u64) -> Vec<Entry> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for i in 0..keys {
        let key = user_key(i * 2);
        let versions = if i % 97 == 5 { 60 } else { rng.random_range(1..=4) };
        let mut seqs: Vec<SeqNo> = Vec::new();
        while seqs.len() < versions {
            let s = rng.random_range(1..100_000);
            if !seqs.contains(&s) {
                seqs.push(s);
            }
        }
        seqs.sort_unstable_by(|a, b| b.cmp(a));
        for seq in seqs {
            let kind = match rng.random_range(0..10) {
                0..=3 => ValueKind::Merge,
                4 => ValueKind::Delete,
                _ => ValueKind::Put,
            };
            let value = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                let len = rng.random_range(0..120);
                // Repetitive, so LZ4 has something to gain.
                format!("value-{i}-{seq}-").into_bytes().into_iter().cycle().take(len).collect()
            };
            out.push((key.clone(), seq, kind, value));
        }
    }
    out
}

fn build(entries: &[Entry], options: TableOptions) -> (Bytes, TableProperties) {
    let mut b = TableBuilder::new(options);
    assert!(b.is_empty());
    for (k, s, kind, v) in entries {
        b.add(k, *s, *kind, v);
    }
    assert!(!b.is_empty());
    let estimate = b.estimated_size();
    let (data, props) = b.finish().unwrap();
    assert_eq!(props.size, data.len() as u64);
    let diff = (estimate as f64 - data.len() as f64).abs();
    // The open block counts uncompressed, so allow one block of slack.
    assert!(diff <= data.len() as f64 * 0.2 + 4096.0, "estimate {estimate} vs {}", data.len());
    (data, props)
}

fn small_blocks() -> TableOptions {
    TableOptions { block_size: 256, restart_interval: 4, ..TableOptions::default() }
}

fn open_table(
    storage: &Arc<MemStorage>,
    path: &str,
    cache: &Arc<BlockCache>,
) -> Result<Arc<Table>> {
    let size = storage.get(path).len() as u64;
    block_on(Table::open(storage.as_ref(), path.to_string(), size, Arc::clone(cache))).map(Arc::new)
}

fn store(data: Bytes) -> (Arc<MemStorage>, Arc<BlockCache>) {
    let storage = MemStorage::new();
    storage.insert("db/000001.sst", data);
    (storage, Arc::new(BlockCache::new(64 << 20)))
}

const PATH: &str = "db/000001.sst";

fn scan(it: &mut TableIterator) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.seq(), it.kind(), it.value().to_vec()));
        it.next()?;
    }
    Ok(out)
}

fn scan_all(table: &Arc<Table>, readahead: usize) -> Result<Vec<Entry>> {
    let mut it = table.iter(readahead);
    assert!(!it.valid(), "iterators start unpositioned");
    it.seek_to_first()?;
    scan(&mut it)
}

/// What `Table::get` must return, computed from the entry list.
fn model_get(entries: &[Entry], key: &[u8], snapshot: SeqNo) -> Vec<(SeqNo, ValueKind, Vec<u8>)> {
    let mut out = Vec::new();
    for (k, s, kind, v) in entries {
        if k == key && *s <= snapshot {
            out.push((*s, *kind, v.clone()));
            if *kind != ValueKind::Merge {
                break;
            }
        }
    }
    out
}

fn get(table: &Table, key: &[u8], snapshot: SeqNo) -> Result<Vec<(SeqNo, ValueKind, Vec<u8>)>> {
    let mut found = Vec::new();
    block_on(table.get(key, snapshot, |s, k, v| {
        found.push((s, k, v.to_vec()));
        false
    }))?;
    Ok(found)
}

fn assert_corruption<T: std::fmt::Debug>(r: Result<T>, what: &str) -> u64 {
    match r {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, PATH, "{what}");
            offset
        }
        other => panic!("{what}: expected corruption, got {other:?}"),
    }
}

#[test]
fn roundtrip_scan_and_properties() {
    let entries = dataset(2000, 1);
    for options in [
        small_blocks(),
        TableOptions::default(),
        TableOptions {
            compression: Compression::None,
            bloom_bits_per_key: 0,
            restart_interval: 1,
            ..small_blocks()
        },
    ] {
        let (data, props) = build(&entries, options.clone());
        assert_eq!(props.entries, entries.len() as u64);
        assert_eq!(&props.smallest_key[..], &entries[0].0[..]);
        assert_eq!(&props.largest_key[..], &entries.last().unwrap().0[..]);
        assert_eq!(props.min_seq, entries.iter().map(|e| e.1).min().unwrap());
        assert_eq!(props.max_seq, entries.iter().map(|e| e.1).max().unwrap());

        let (storage, cache) = store(data);
        let table = open_table(&storage, PATH, &cache).unwrap();
        assert_eq!(table.path(), PATH);
        let p = table.properties();
        assert_eq!(
            (&p.smallest_key, &p.largest_key, p.min_seq, p.max_seq, p.entries, p.size),
            (
                &props.smallest_key,
                &props.largest_key,
                props.min_seq,
                props.max_seq,
                props.entries,
                props.size
            )
        );
        for readahead in [0, 1, 1000, 64 << 10, 1 << 30] {
            assert_eq!(scan_all(&table, readahead).unwrap(), entries, "{options:?} {readahead}");
        }
    }
}

#[test]
fn versions_spanning_blocks_and_snapshots() {
    let entries = dataset(600, 2);
    let (data, _) = build(&entries, small_blocks());
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    let blocks = block_on(table.block_handles()).unwrap().len();
    assert!(blocks > 50, "want many blocks, got {blocks}");

    let mut rng = StdRng::seed_from_u64(3);
    for i in 0..1200 {
        let key = user_key(i);
        let mut snapshots = vec![0, 1, MAX_SEQ, rng.random_range(0..100_000)];
        // Exactly at and just below each version's seq.
        for (k, s, _, _) in entries.iter().filter(|e| e.0 == key).take(8) {
            assert_eq!(k, &key);
            snapshots.extend([*s, s - 1, s + 1]);
        }
        for snapshot in snapshots {
            assert_eq!(
                get(&table, &key, snapshot).unwrap(),
                model_get(&entries, &key, snapshot),
                "key {i} snapshot {snapshot}"
            );
        }
    }
    // Keys outside the table's range.
    assert!(get(&table, b"", MAX_SEQ).unwrap().is_empty());
    assert!(get(&table, b"\xff", MAX_SEQ).unwrap().is_empty());

    // The long chains do span blocks: a full merge chain comes back whole.
    let long = user_key(5 * 2);
    let chain = model_get(&entries, &long, MAX_SEQ);
    assert_eq!(get(&table, &long, MAX_SEQ).unwrap(), chain);
    let all: usize = entries.iter().filter(|e| e.0 == long).count();
    assert_eq!(all, 60);
}

#[test]
fn merge_chains_and_deletes() {
    // Hand-built: a merge chain over a delete over a put, one key per kind.
    let entries: Vec<Entry> = vec![
        (b"a".to_vec(), 9, ValueKind::Merge, b"+3".to_vec()),
        (b"a".to_vec(), 8, ValueKind::Merge, b"+2".to_vec()),
        (b"a".to_vec(), 7, ValueKind::Delete, Vec::new()),
        (b"a".to_vec(), 6, ValueKind::Put, b"old".to_vec()),
        (b"b".to_vec(), 5, ValueKind::Merge, b"only merges".to_vec()),
        (b"b".to_vec(), 4, ValueKind::Merge, b"x".to_vec()),
        (b"c".to_vec(), 3, ValueKind::Delete, Vec::new()),
        (b"d".to_vec(), 2, ValueKind::Put, b"".to_vec()),
    ];
    for block_size in [1, 4096] {
        let (data, _) = build(&entries, TableOptions { block_size, ..TableOptions::default() });
        let (storage, cache) = store(data);
        let table = open_table(&storage, PATH, &cache).unwrap();
        let g = |k: &[u8], s| get(&table, k, s).unwrap();
        assert_eq!(
            g(b"a", 100),
            vec![
                (9, ValueKind::Merge, b"+3".to_vec()),
                (8, ValueKind::Merge, b"+2".to_vec()),
                (7, ValueKind::Delete, vec![])
            ]
        );
        assert_eq!(
            g(b"a", 8),
            vec![(8, ValueKind::Merge, b"+2".to_vec()), (7, ValueKind::Delete, vec![])]
        );
        assert_eq!(g(b"a", 6), vec![(6, ValueKind::Put, b"old".to_vec())]);
        assert_eq!(g(b"a", 5), vec![]);
        assert_eq!(g(b"b", 100).len(), 2);
        assert_eq!(g(b"c", 3), vec![(3, ValueKind::Delete, vec![])]);
        assert_eq!(g(b"c", 2), vec![]);
        assert_eq!(g(b"d", 2), vec![(2, ValueKind::Put, vec![])]);
        assert_eq!(g(b"bb", 100), vec![]);
        assert_eq!(scan_all(&table, 0).unwrap(), entries);
    }
}

#[test]
fn seek_lands_on_newest_version() {
    let entries = dataset(500, 4);
    let (data, _) = build(&entries, small_blocks());
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    for readahead in [0, 4096] {
        let mut it = table.iter(readahead);
        for i in (0..1001).step_by(7) {
            let key = user_key(i);
            it.seek(&key).unwrap();
            let pos = entries.partition_point(|e| e.0 < key);
            if pos == entries.len() {
                assert!(!it.valid());
                continue;
            }
            assert!(it.valid());
            let e = &entries[pos];
            assert_eq!((it.key(), it.seq(), it.kind(), it.value()), (&e.0[..], e.1, e.2, &e.3[..]));
            // Walk a few entries on from there, across block boundaries.
            for e in entries[pos..].iter().take(20) {
                assert_eq!((it.key(), it.seq()), (&e.0[..], e.1));
                it.next().unwrap();
            }
        }
        it.seek(b"").unwrap();
        assert_eq!(it.key(), &entries[0].0[..]);
        it.seek(b"\xff").unwrap();
        assert!(!it.valid());
        it.next().unwrap();
        assert!(!it.valid());
        // Seeking backwards works too.
        it.seek(&user_key(0)).unwrap();
        assert_eq!(scan(&mut it).unwrap(), entries);
    }
}

#[test]
fn lz4_shrinks_compressible_files() {
    let entries = dataset(1000, 5);
    let (lz4, _) = build(&entries, TableOptions::default());
    let (raw, _) =
        build(&entries, TableOptions { compression: Compression::None, ..TableOptions::default() });
    assert!(lz4.len() < raw.len() * 3 / 4, "lz4 {} raw {}", lz4.len(), raw.len());
    for data in [lz4, raw] {
        let (storage, cache) = store(data);
        let table = open_table(&storage, PATH, &cache).unwrap();
        assert_eq!(scan_all(&table, 0).unwrap(), entries);
    }
}

#[test]
fn empty_and_large_values() {
    let big: Vec<u8> =
        (0..1 << 20).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let entries: Vec<Entry> = vec![
        (b"a".to_vec(), 3, ValueKind::Put, Vec::new()),
        (b"b".to_vec(), 3, ValueKind::Put, big.clone()),
        (b"b".to_vec(), 2, ValueKind::Merge, b"small".to_vec()),
        (b"c".to_vec(), 1, ValueKind::Put, big.iter().rev().copied().collect()),
        (
            Vec::new().into_iter().chain(b"d".iter().copied()).collect(),
            1,
            ValueKind::Put,
            Vec::new(),
        ),
    ];
    for compression in [Compression::Lz4, Compression::None] {
        let (data, _) = build(&entries, TableOptions { compression, ..TableOptions::default() });
        // A cache too small for the big block still serves it, just without keeping it.
        for cache_size in [0, 64 << 20] {
            let storage = MemStorage::new();
            storage.insert(PATH, data.clone());
            let cache = Arc::new(BlockCache::new(cache_size));
            let table = open_table(&storage, PATH, &cache).unwrap();
            assert_eq!(get(&table, b"a", 10).unwrap(), vec![(3, ValueKind::Put, vec![])]);
            assert_eq!(get(&table, b"b", 10).unwrap(), vec![(3, ValueKind::Put, big.clone())]);
            assert_eq!(get(&table, b"c", 10).unwrap()[0].2, entries[3].3);
            for readahead in [0, 1 << 16] {
                assert_eq!(scan_all(&table, readahead).unwrap(), entries);
            }
        }
    }
}

#[test]
fn bloom_filter_rejects_absent_keys() {
    let entries = dataset(5000, 6);
    let (data, _) = build(&entries, TableOptions::default());
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    let may_contain = |t: &Table, k: &[u8]| block_on(t.may_contain(k)).unwrap();
    for e in &entries {
        assert!(may_contain(&table, &e.0));
    }
    let absent = (0..5000).map(|i| user_key(i * 2 + 1));
    let fp = absent.filter(|k| may_contain(&table, k)).count();
    assert!(fp < 5000 * 2 / 100, "{fp} false positives in 5000");

    // An absent key costs no storage request.
    let before = storage.reads.load(Ordering::Relaxed);
    let misses: Vec<Vec<u8>> =
        (0..5000).map(|i| user_key(i * 2 + 1)).filter(|k| !may_contain(&table, k)).collect();
    for k in &misses {
        assert!(get(&table, k, MAX_SEQ).unwrap().is_empty());
    }
    assert_eq!(storage.reads.load(Ordering::Relaxed), before);

    // Without a filter every key may be present.
    let (data, _) =
        build(&entries, TableOptions { bloom_bits_per_key: 0, ..TableOptions::default() });
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    assert!(may_contain(&table, &entries[1].0[..]));
    assert!(may_contain(&table, &user_key(1)));
}

#[test]
fn open_reads_small_files_in_one_request() {
    let entries = dataset(200, 7);
    let (data, _) = build(&entries, TableOptions::default());
    assert!(data.len() < 64 << 10);
    let (storage, cache) = store(data);
    open_table(&storage, PATH, &cache).unwrap();
    assert_eq!(storage.reads.load(Ordering::Relaxed), 1);

    // A large file: the tail read holds the footer, the top-level index and the filter
    // directory; partitions are read when needed, through the cache.
    let entries = dataset(40_000, 8);
    let (data, _) = build(&entries, small_blocks());
    assert!(data.len() > 1 << 20);
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    assert_eq!(storage.reads.load(Ordering::Relaxed), 1);
    assert!(table.partitions() > 50, "{} partitions", table.partitions());
    assert_eq!(cache.reserved_bytes(), table.memory_size() as u64);
    assert_eq!(cache.usage_bytes(), 0);
    // What the open reader holds is a small fraction of the file's index.
    block_on(table.block_handles()).unwrap();
    let index = cache.index_filter_bytes();
    assert!(table.memory_size() * 10 < index as usize, "{} vs {index}", table.memory_size());
    assert_eq!(
        get(&table, &entries[777].0, MAX_SEQ).unwrap(),
        model_get(&entries, &entries[777].0, MAX_SEQ)
    );
}

#[test]
fn block_cache_counts_and_shares_loads() {
    let entries = dataset(2000, 9);
    let (data, _) = build(&entries, TableOptions::default());
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    let key = entries[1000].0.clone();
    let reads = storage.reads.load(Ordering::Relaxed);

    // Concurrent misses on one block: one storage read, the rest wait for it.
    storage.yield_once.store(true, Ordering::Relaxed);
    let found = AtomicUsize::new(0);
    let count = |_, _, _| {
        found.fetch_add(1, Ordering::Relaxed);
        false
    };
    let results =
        block_on(futures::future::join_all((0..8).map(|_| table.get(&key, MAX_SEQ, count))));
    storage.yield_once.store(false, Ordering::Relaxed);
    results.into_iter().collect::<Result<Vec<_>>>().unwrap();
    assert_eq!(found.load(Ordering::Relaxed), 8);
    // Filter partition, index partition, data block: one read each.
    assert_eq!(storage.reads.load(Ordering::Relaxed), reads + 3);
    assert_eq!(cache.misses(), 3);
    assert_eq!(cache.hits(), 21);
    assert!(cache.usage_bytes() > 0);
    assert!(cache.index_filter_bytes() > 0 && cache.data_bytes() > 0);
    assert_eq!(cache.index_filter_bytes() + cache.data_bytes(), cache.usage_bytes());

    // Compaction-style scans do not fill the cache; user scans do.
    let usage = cache.usage_bytes();
    scan_all(&table, 1 << 20).unwrap();
    assert_eq!(cache.data_bytes() + cache.index_filter_bytes(), usage);
    assert_eq!(cache.misses(), 3);
    scan_all(&table, 0).unwrap();
    assert!(cache.usage_bytes() > usage);
    let misses = cache.misses();
    scan_all(&table, 0).unwrap();
    assert_eq!(cache.misses(), misses);

    // Closing the table frees its blocks and its reservation.
    assert!(cache.reserved_bytes() > 0);
    drop(table);
    assert_eq!(cache.usage_bytes(), 0);
    assert_eq!((cache.data_bytes(), cache.index_filter_bytes()), (0, 0));
    assert_eq!(cache.reserved_bytes(), 0);
}

#[test]
fn table_is_send_sync_and_get_is_send() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<Table>();
    send_sync::<BlockCache>();
    send_sync::<TableBuilder>();
    let (data, _) = build(&dataset(10, 10), TableOptions::default());
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    let fut = table.get(b"k", 1, |_, _, _| false);
    send(&fut);
    let it = table.iter(0);
    send(&it);
}

#[test]
fn builder_rejects_misuse() {
    assert!(matches!(
        TableBuilder::new(TableOptions::default()).finish(),
        Err(Error::InvalidArgument(_))
    ));
    let mut b = TableBuilder::new(TableOptions::default());
    b.add(b"b", 5, ValueKind::Put, b"");
    b.add(b"a", 5, ValueKind::Put, b"");
    assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
    let mut b = TableBuilder::new(TableOptions::default());
    b.add(b"a", 5, ValueKind::Put, b"");
    b.add(b"a", 6, ValueKind::Put, b"");
    assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
    let mut b = TableBuilder::new(TableOptions::default());
    b.add(b"a", 5, ValueKind::Put, b"");
    b.add(b"a", 5, ValueKind::Merge, b"");
    assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
    let mut b = TableBuilder::new(TableOptions::default());
    b.add(b"a", MAX_SEQ + 1, ValueKind::Put, b"");
    assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
}

// ---- corruption ----

/// Reads everything a table holds; the first error wins.
fn read_everything(table: &Arc<Table>, entries: &[Entry]) -> Result<()> {
    for readahead in [0, 1 << 16] {
        let got = scan_all(table, readahead)?;
        assert_eq!(got, entries, "a damaged file returned wrong data");
    }
    for (k, _, _, _) in entries {
        let got = get(table, k, MAX_SEQ)?;
        assert_eq!(got, model_get(entries, k, MAX_SEQ), "a damaged file returned wrong data");
    }
    Ok(())
}

fn with_byte_flipped(data: &Bytes, at: usize, mask: u8) -> Bytes {
    let mut v = data.to_vec();
    v[at] ^= mask;
    Bytes::from(v)
}

#[test]
fn every_flipped_byte_is_caught() {
    let entries = dataset(40, 11);
    for options in [small_blocks(), TableOptions::default()] {
        let (data, _) = build(&entries, options);
        for at in 0..data.len() {
            let (storage, cache) = store(with_byte_flipped(&data, at, 0x20));
            let r = open_table(&storage, PATH, &cache).and_then(|t| read_everything(&t, &entries));
            assert_corruption(r, &format!("byte {at} of {}", data.len()));
        }
    }
}

#[test]
fn flipped_data_block_byte_names_the_block() {
    let entries = dataset(500, 12);
    let (data, _) = build(&entries, small_blocks());
    let (storage, cache) = store(data.clone());
    let table = open_table(&storage, PATH, &cache).unwrap();
    // A block holding the newest version of some key, so seeking to that key must read it.
    let tenth = block_on(table.block_handles()).unwrap()[10];
    let (victim, victim_key) = entries
        .iter()
        .map(|e| (block_on(table.seek_block(&e.0, MAX_SEQ, None)).unwrap().unwrap().handle(), &e.0))
        .find(|(h, _)| h.offset >= tenth.offset)
        .unwrap();
    let victim_key = victim_key.clone();
    drop(table);
    let (storage, cache) = store(with_byte_flipped(&data, victim.offset as usize + 3, 0x01));
    let table = open_table(&storage, PATH, &cache).unwrap();
    // Blocks other than the damaged one still read fine.
    assert_eq!(
        get(&table, &entries[0].0, MAX_SEQ).unwrap(),
        model_get(&entries, &entries[0].0, MAX_SEQ)
    );
    assert_eq!(assert_corruption(scan_all(&table, 0), "scan"), victim.offset);
    assert_eq!(assert_corruption(scan_all(&table, 1 << 20), "compaction scan"), victim.offset);
    // The iterator is invalid after an error.
    let mut it = table.iter(0);
    assert!(it.seek(&victim_key).is_err());
    assert!(!it.valid());
    it.seek(&entries[0].0).unwrap();
    assert!(it.valid());
}

#[test]
fn flipped_index_and_footer_bytes_fail_open() {
    let entries = dataset(300, 13);
    let (data, _) = build(&entries, small_blocks());
    let size = data.len();
    // The top-level index is the last block before the footer.
    let (storage, cache) = store(with_byte_flipped(&data, size - 64 - 10, 0x40));
    let at = assert_corruption(open_table(&storage, PATH, &cache), "index");
    assert!(at < (size - 64) as u64);
    for pos in [0, 20, 48, 52, 60, 63] {
        let (storage, cache) = store(with_byte_flipped(&data, size - 64 + pos, 0x40));
        let at = assert_corruption(open_table(&storage, PATH, &cache), "footer");
        assert_eq!(at, (size - 64) as u64);
    }
}

#[test]
fn truncated_files_fail_open() {
    let entries = dataset(300, 14);
    let (data, _) = build(&entries, small_blocks());
    for len in [0, 1, 63, 64, 65, data.len() / 2, data.len() - 1] {
        let (storage, cache) = store(data.slice(..len));
        assert_corruption(open_table(&storage, PATH, &cache), &format!("len {len}"));
    }
    // Cut before the footer, then a valid-looking footer glued on with handles past the end.
    let mut glued = data.slice(..100).to_vec();
    glued.extend_from_slice(&data[data.len() - 64..]);
    let (storage, cache) = store(Bytes::from(glued));
    assert_corruption(open_table(&storage, PATH, &cache), "handles past end");
}

#[test]
fn short_reads_are_corruption() {
    let entries = dataset(300, 15);
    let (data, _) = build(&entries, small_blocks());
    let (storage, cache) = store(data);
    storage.short_by.store(1, Ordering::Relaxed);
    assert_corruption(open_table(&storage, PATH, &cache), "short tail read");

    storage.short_by.store(0, Ordering::Relaxed);
    let table = open_table(&storage, PATH, &cache).unwrap();
    storage.short_by.store(3, Ordering::Relaxed);
    assert_corruption(get(&table, &entries[0].0, MAX_SEQ), "short block read");
    assert_corruption(scan_all(&table, 0), "short scan");
    assert_corruption(scan_all(&table, 1 << 16), "short readahead");
}

#[test]
fn malformed_block_contents_with_valid_checksums() {
    // A writer bug rather than bit rot: the checksum matches but the entries are nonsense.
    let entries = dataset(50, 16);
    let (data, _) =
        build(&entries, TableOptions { compression: Compression::None, ..TableOptions::default() });
    let (storage, cache) = store(data.clone());
    let table = open_table(&storage, PATH, &cache).unwrap();
    let h = block_on(table.block_handles()).unwrap()[0];
    drop(table);
    let payload = h.offset as usize..(h.offset + h.size) as usize - 5;
    for (at, value) in
        [(0, 0xff), (1, 0xff), (2, 0xff), (payload.len() - 1, 0x7f), (payload.len() - 6, 0xff)]
    {
        let mut bad = data.to_vec();
        bad[payload.start + at] = value;
        let crc = framing::checksum(&bad[payload.start..payload.end + 1]);
        bad[payload.end + 1..payload.end + 5].copy_from_slice(&crc.to_le_bytes());
        let (storage, cache) = store(Bytes::from(bad));
        let r = open_table(&storage, PATH, &cache).and_then(|t| read_everything(&t, &entries));
        assert_eq!(assert_corruption(r, &format!("payload byte {at}")), h.offset);
    }
}

#[test]
fn missing_file_is_not_corruption() {
    let storage = MemStorage::new();
    let cache = Arc::new(BlockCache::new(1 << 20));
    let r = block_on(Table::open(storage.as_ref(), "nope.sst".into(), 1000, cache));
    assert!(matches!(r, Err(Error::NotFound(_))), "{r:?}");
}

// ---- partitions and format versions ----

/// The same table as format 1 wrote it (data, whole filter, properties, whole index, footer),
/// rebuilt from a format-2 file of `entries`.
fn as_format1(data: &Bytes, entries: &[Entry]) -> Bytes {
    use super::bloom::BloomBuilder;
    use super::footer::{FORMAT_WHOLE_INDEX, Footer};
    use super::framing::write_block;
    use super::handle::BlockHandle;
    use super::index::IndexBuilder;

    let (storage, cache) = store(data.clone());
    let table = open_table(&storage, PATH, &cache).unwrap();
    let mut out = data[..table.data_end() as usize].to_vec();
    let mut bloom = BloomBuilder::new(10);
    let mut previous: Option<&[u8]> = None;
    for (k, _, _, _) in entries {
        if previous != Some(&k[..]) {
            bloom.add(k);
        }
        previous = Some(k);
    }
    let offset = out.len() as u64;
    let size = write_block(&mut out, &bloom.finish(), Compression::None) as u64;
    let filter = Some(BlockHandle::new(offset, size));
    let offset = out.len() as u64;
    let size =
        write_block(&mut out, &properties::encode(table.properties()), Compression::None) as u64;
    let props = BlockHandle::new(offset, size);
    let mut index = IndexBuilder::default();
    for h in block_on(table.block_handles()).unwrap() {
        let mut it = block::BlockIter::new(block_on(table.cached_block(h)).unwrap());
        it.seek_to_first().unwrap();
        let mut last = (Vec::new(), 0);
        while it.valid() {
            last = (it.user_key().to_vec(), it.seq());
            it.next().unwrap();
        }
        index.add(&last.0, last.1, h);
    }
    let offset = out.len() as u64;
    let size = write_block(&mut out, &index.finish(), Compression::None) as u64;
    let index = BlockHandle::new(offset, size);
    Footer { version: FORMAT_WHOLE_INDEX, index, filter, properties: props }.encode(&mut out);
    Bytes::from(out)
}

#[test]
fn format1_files_still_open_and_read() {
    let entries = dataset(3000, 20);
    let (data, _) = build(&entries, small_blocks());
    let old = as_format1(&data, &entries);
    let (storage, cache) = store(old);
    let table = open_table(&storage, PATH, &cache).unwrap();
    assert_eq!(table.partitions(), 1);
    read_everything(&table, &entries).unwrap();
    for i in [1, 2001, 5999] {
        assert!(get(&table, &user_key(i), MAX_SEQ).unwrap().is_empty());
    }
    // Its whole index and filter live in the cache, not in the reader.
    assert!(cache.index_filter_bytes() > table.memory_size() as u64 * 10);
}

#[test]
fn versions_spanning_partitions_are_found_at_every_snapshot() {
    // One key with a merge chain longer than several index partitions, between other keys.
    let long = user_key(500);
    let mut entries: Vec<Entry> =
        (0..250).map(|i| (user_key(i * 2), 7, ValueKind::Put, vec![1])).collect();
    for seq in (1..=6000u64).rev() {
        let kind = if seq == 1 { ValueKind::Put } else { ValueKind::Merge };
        entries.push((long.clone(), seq * 2, kind, seq.to_le_bytes().to_vec()));
    }
    entries.extend((251..500).map(|i| (user_key(i * 2), 7, ValueKind::Put, vec![2])));
    let (data, _) = build(&entries, TableOptions { block_size: 64, ..small_blocks() });
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    assert!(table.partitions() >= 4, "{} partitions", table.partitions());
    for snapshot in [0, 1, 2, 3, 999, 1000, 1001, 4567, 8000, 11_999, 12_000, MAX_SEQ] {
        assert_eq!(
            get(&table, &long, snapshot).unwrap(),
            model_get(&entries, &long, snapshot),
            "snapshot {snapshot}"
        );
    }
    for i in [0, 498, 502, 998] {
        assert_eq!(
            get(&table, &user_key(i), MAX_SEQ).unwrap(),
            model_get(&entries, &user_key(i), MAX_SEQ)
        );
    }
    assert_eq!(scan_all(&table, 0).unwrap(), entries);
    let mut it = table.iter(0);
    it.seek(&user_key(501)).unwrap();
    assert_eq!(it.key(), &user_key(502)[..]);
}

#[test]
fn iterators_count_what_they_pin() {
    let entries = dataset(2000, 21);
    let (data, _) = build(&entries, small_blocks());
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    let mut it = table.iter(0);
    assert_eq!(cache.pinned_bytes(), 0);
    it.seek_to_first().unwrap();
    let one = cache.pinned_bytes();
    assert!(one > 0);
    let mut compaction = table.iter(64 << 10);
    compaction.seek_to_first().unwrap();
    assert!(cache.pinned_bytes() > one + (32 << 10), "readahead buffer counted");
    // The buffer is never in the cache, so it is charged to it, as open readers are.
    assert!(cache.buffer_bytes() > 32 << 10, "readahead buffer charged");
    drop(compaction);
    assert_eq!(cache.pinned_bytes(), one);
    assert_eq!(cache.buffer_bytes(), 0, "the charge ends with the iterator");
    drop(it);
    assert_eq!(cache.pinned_bytes(), 0);
}

/// A compaction scan reads every index partition in one request (not one per partition, each a
/// round trip on a remote store), then the data once, in consecutive spans: each span is read
/// from where the previous one ended (in the background, while that one is consumed), and a block
/// that a span cuts is completed from the next span, not read again from its start. Nothing it
/// reads goes into the block cache.
#[test]
fn a_readahead_scan_reads_the_index_at_once_and_the_data_once_in_consecutive_spans() {
    let entries = dataset(4000, 23);
    let (data, _) = build(&entries, small_blocks());
    let (storage, cache) = store(data);
    let table = open_table(&storage, PATH, &cache).unwrap();
    assert!(table.partitions() >= 5, "{} index partitions", table.partitions());
    storage.ranges.lock().unwrap().clear();
    let readahead = 10_000; // never a whole number of blocks
    assert_eq!(scan_all(&table, readahead).unwrap(), entries);
    let ranges = storage.ranges.lock().unwrap().clone();
    let (index, spans) = ranges.split_first().expect("reads");
    assert!(index.start >= table.data_end(), "the index region first: {ranges:?}");
    assert_eq!(cache.usage_bytes(), 0, "the scan left the cache alone");
    assert!(spans.len() >= 5, "the data spans several reads: {ranges:?}");
    assert_eq!(spans[0].start, 0, "{ranges:?}");
    assert_eq!(spans.last().unwrap().end, table.data_end(), "{ranges:?}");
    for pair in spans.windows(2) {
        assert_eq!(pair[1].start, pair[0].end, "each span starts where the last ended: {ranges:?}");
        assert_eq!(pair[0].end - pair[0].start, readahead as u64, "{ranges:?}");
    }
}
