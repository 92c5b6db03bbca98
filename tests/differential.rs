//! Differential test: ForSt-RS against RocksDB (the oracle) over a long random sequence of
//! operations on several column families, with flushes, compactions and reopens interleaved.
//! Every read is compared. Two mixes: the general one, and one heavy in range deletes (narrow,
//! wide, nested and repeated ones, map-state prefix clears, deletes inside batches) over a small
//! key space, with iterators held open across writes, flushes and compactions. Set
//! FORST_DIFF_SEED to replay a failure, FORST_DIFF_OPS to change the length.
use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::storage::{StorageOptions, StorageRef, open_storage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rocksdb::{ColumnFamilyDescriptor, IteratorMode, MergeOperands, Options};

const FAMILIES: [&str; 3] = ["value-state", "list-state", "map-state"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Put,
    Get,
    Delete,
    Merge,
    WriteBatch,
    MultiGet,
    PrefixScan,
    RangeScan,
    DeleteRange,
    /// `MapState.clear()`: every key under a prefix.
    DeletePrefix,
    /// An iterator opened, then writes (range deletes among them) and a flush, then read: it must
    /// show the state as of its opening.
    HeldIterator,
    Flush,
    CompactAll,
    /// Background-style compactions until none is due (range deletes can make one due).
    CompactSettled,
    Reopen,
    AbsentGet,
}

struct Mix {
    /// Operation and its weight.
    ops: &'static [(Op, u32)],
    keys_per_family: u32,
    /// Range deletes in a batch of the `WriteBatch` op.
    batch_range_deletes: bool,
}

const GENERAL: Mix = Mix {
    ops: &[
        (Op::Put, 3000),
        (Op::Get, 2500),
        (Op::Delete, 800),
        (Op::Merge, 1200),
        (Op::WriteBatch, 500),
        (Op::MultiGet, 800),
        (Op::PrefixScan, 500),
        (Op::RangeScan, 100),
        (Op::DeleteRange, 40),
        (Op::Flush, 20),
        (Op::CompactAll, 3),
        (Op::Reopen, 2),
        (Op::AbsentGet, 535),
    ],
    keys_per_family: 20_000,
    batch_range_deletes: false,
};

const RANGE_DELETE_HEAVY: Mix = Mix {
    ops: &[
        (Op::Put, 2600),
        (Op::Get, 1800),
        (Op::Delete, 300),
        (Op::Merge, 800),
        (Op::WriteBatch, 600),
        (Op::MultiGet, 500),
        (Op::PrefixScan, 700),
        (Op::RangeScan, 300),
        (Op::DeleteRange, 700),
        (Op::DeletePrefix, 600),
        (Op::HeldIterator, 60),
        (Op::Flush, 25),
        (Op::CompactAll, 3),
        (Op::CompactSettled, 10),
        (Op::Reopen, 2),
    ],
    keys_per_family: 2_000,
    batch_range_deletes: true,
};

/// The range-delete heavy mix with four compaction threads and small files, so that background
/// compactions of disjoint ranges run beside each other, the foreground ones and the writes.
const PARALLEL_COMPACTIONS: Mix = Mix { keys_per_family: 10_000, ..RANGE_DELETE_HEAVY };

fn parallel_compaction_options() -> DbOptions {
    DbOptions {
        memtable_bytes: 32 << 10,
        target_file_bytes: 8 << 10,
        l1_target_bytes: 32 << 10,
        max_background_compactions: 4,
        ..small_options()
    }
}

impl Mix {
    fn pick(&self, rng: &mut StdRng) -> Op {
        let total: u32 = self.ops.iter().map(|(_, w)| w).sum();
        let mut roll = rng.random_range(0..total);
        for &(op, weight) in self.ops {
            if roll < weight {
                return op;
            }
            roll -= weight;
        }
        unreachable!("roll below the total weight")
    }
}

fn list_append(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let mut out = existing.map(|e| e.to_vec());
    for op in operands {
        match out.as_mut() {
            Some(v) => {
                v.push(b',');
                v.extend_from_slice(op);
            }
            None => out = Some(op.to_vec()),
        }
    }
    out
}

fn small_options() -> DbOptions {
    DbOptions {
        memtable_bytes: 256 << 10,
        target_file_bytes: 128 << 10,
        l0_compaction_trigger: 3,
        l1_target_bytes: 512 << 10,
        level_size_multiplier: 4,
        block_cache_bytes: 4 << 20,
        ..DbOptions::default()
    }
}

struct Oracle {
    db: rocksdb::DB,
}

impl Oracle {
    fn open(dir: &std::path::Path) -> Self {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let cfs = FAMILIES.iter().map(|name| {
            let mut cf_opts = Options::default();
            cf_opts.set_merge_operator_associative("list_append", list_append);
            ColumnFamilyDescriptor::new(*name, cf_opts)
        });
        Oracle { db: rocksdb::DB::open_cf_descriptors(&opts, dir, cfs).expect("open rocksdb") }
    }

    fn cf(&self, i: usize) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(FAMILIES[i]).unwrap()
    }
}

struct Ours {
    storage: StorageRef,
    options: DbOptions,
    db: Db,
    cfs: Vec<ColumnFamily>,
}

impl Ours {
    fn open(storage: StorageRef, options: DbOptions) -> Self {
        let db = Db::open_with_storage(storage.clone(), options.clone()).expect("open forst");
        let cfs = FAMILIES.iter().map(|n| db.create_cf(n).unwrap()).collect();
        Ours { storage, options, db, cfs }
    }

    fn reopen(self) -> Self {
        self.db.flush().unwrap();
        self.db.close().unwrap();
        let (storage, options) = (self.storage.clone(), self.options.clone());
        drop(self);
        Ours::open(storage, options)
    }
}

fn key(rng: &mut StdRng, keys: u32) -> Vec<u8> {
    // Skewed: a hot quarter of the key space gets half of the traffic, like word counts.
    let k = if rng.random_bool(0.5) {
        rng.random_range(0..keys / 4)
    } else {
        rng.random_range(0..keys)
    };
    format!("k{k:06}").into_bytes()
}

/// Bounds of a range delete: mostly narrow (a few keys), sometimes wide, so that they nest and
/// overlap; sometimes empty or reversed-and-fixed to equal bounds.
fn delete_bounds(rng: &mut StdRng, keys: u32) -> (Vec<u8>, Vec<u8>) {
    let a = key(rng, keys);
    let b = match rng.random_range(0..10) {
        0..6 => {
            let k: u32 = std::str::from_utf8(&a[1..]).unwrap().parse().unwrap();
            format!("k{:06}", k + rng.random_range(0..12)).into_bytes()
        }
        6..9 => key(rng, keys),
        _ => a.clone(),
    };
    if a <= b { (a, b) } else { (b, a) }
}

/// A prefix of 100 keys ("k0012") or 10 keys ("k00123").
fn map_prefix(rng: &mut StdRng, keys: u32) -> Vec<u8> {
    let k = key(rng, keys);
    k[..if rng.random_bool(0.5) { 5 } else { 6 }].to_vec()
}

fn successor(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    *end.last_mut().unwrap() += 1;
    end
}

fn collect_ours(it: &mut forst::lsm::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.advance().unwrap();
    }
    out
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    let len = rng.random_range(0..64);
    (0..len).map(|_| rng.random_range(b'a'..=b'z')).collect()
}

/// Sorted entries of `family` in the oracle whose keys lie in [lo, hi) (`None`: unbounded).
fn oracle_range(
    oracle: &Oracle,
    family: usize,
    lo: &[u8],
    hi: Option<&[u8]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    oracle
        .db
        .iterator_cf(oracle.cf(family), IteratorMode::From(lo, rocksdb::Direction::Forward))
        .map(|r| r.unwrap())
        .take_while(|(k, _)| hi.is_none_or(|hi| k.as_ref() < hi))
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

/// Applies one random write to both databases: put, delete, merge or a range delete.
fn random_write(rng: &mut StdRng, mix: &Mix, oracle: &Oracle, ours: &Ours, family: usize) {
    let keys = mix.keys_per_family;
    let (cf, theirs) = (&ours.cfs[family], oracle.cf(family));
    match rng.random_range(0..4) {
        0 => {
            let (k, v) = (key(rng, keys), value(rng));
            oracle.db.put_cf(theirs, &k, &v).unwrap();
            ours.db.put(cf, &k, &v).unwrap();
        }
        1 => {
            let k = key(rng, keys);
            oracle.db.delete_cf(theirs, &k).unwrap();
            ours.db.delete(cf, &k).unwrap();
        }
        2 => {
            let (k, v) = (key(rng, keys), value(rng));
            oracle.db.merge_cf(theirs, &k, &v).unwrap();
            ours.db.merge(cf, &k, &v).unwrap();
        }
        _ => {
            let (lo, hi) = delete_bounds(rng, keys);
            oracle.db.delete_range_cf(theirs, &lo, &hi).unwrap();
            ours.db.delete_range(cf, &lo, &hi).unwrap();
        }
    }
}

fn run(seed: u64, ops: u64, mix: &Mix, options: &DbOptions) {
    let mut rng = StdRng::seed_from_u64(seed);
    let keys = mix.keys_per_family;
    let oracle_dir = tempfile::tempdir().unwrap();
    let ours_dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::open(oracle_dir.path());
    let url = format!("file://{}", ours_dir.path().display());
    let storage = open_storage(&url, &StorageOptions::default()).unwrap();
    let mut ours = Ours::open(storage, options.clone());
    let mut counts = std::collections::BTreeMap::<Op, u64>::new();
    for step in 0..ops {
        let family = rng.random_range(0..FAMILIES.len());
        let op = mix.pick(&mut rng);
        let ctx = |what: &str| format!("seed {seed}, step {step}, {what}");
        match op {
            Op::Put => {
                let (k, v) = (key(&mut rng, keys), value(&mut rng));
                oracle.db.put_cf(oracle.cf(family), &k, &v).unwrap();
                ours.db.put(&ours.cfs[family], &k, &v).unwrap();
            }
            Op::Get => {
                let k = key(&mut rng, keys);
                let expected = oracle.db.get_cf(oracle.cf(family), &k).unwrap();
                let actual = ours.db.get(&ours.cfs[family], &k).unwrap().map(|b| b.to_vec());
                assert_eq!(
                    actual,
                    expected,
                    "{}",
                    ctx(&format!("get {:?}", String::from_utf8_lossy(&k)))
                );
            }
            Op::Delete => {
                let k = key(&mut rng, keys);
                oracle.db.delete_cf(oracle.cf(family), &k).unwrap();
                ours.db.delete(&ours.cfs[family], &k).unwrap();
            }
            Op::Merge => {
                let (k, v) = (key(&mut rng, keys), value(&mut rng));
                oracle.db.merge_cf(oracle.cf(family), &k, &v).unwrap();
                ours.db.merge(&ours.cfs[family], &k, &v).unwrap();
            }
            Op::WriteBatch => {
                let mut theirs = rocksdb::WriteBatch::default();
                let mut batch = WriteBatch::new();
                let kinds = if mix.batch_range_deletes { 5 } else { 3 };
                for _ in 0..rng.random_range(1..20) {
                    let f = rng.random_range(0..FAMILIES.len());
                    let (k, v) = (key(&mut rng, keys), value(&mut rng));
                    match rng.random_range(0..kinds) {
                        0 => {
                            theirs.put_cf(oracle.cf(f), &k, &v);
                            batch.put(&ours.cfs[f], &k, &v);
                        }
                        1 => {
                            theirs.delete_cf(oracle.cf(f), &k);
                            batch.delete(&ours.cfs[f], &k);
                        }
                        2 => {
                            theirs.merge_cf(oracle.cf(f), &k, &v);
                            batch.merge(&ours.cfs[f], &k, &v);
                        }
                        3 => {
                            let (lo, hi) = delete_bounds(&mut rng, keys);
                            theirs.delete_range_cf(oracle.cf(f), &lo, &hi);
                            batch.delete_range(&ours.cfs[f], &lo, &hi);
                        }
                        _ => {
                            let prefix = map_prefix(&mut rng, keys);
                            theirs.delete_range_cf(oracle.cf(f), &prefix, &successor(&prefix));
                            batch.delete_prefix(&ours.cfs[f], &prefix);
                        }
                    }
                }
                oracle.db.write(theirs).unwrap();
                ours.db.write(&batch).unwrap();
            }
            Op::MultiGet => {
                let keys: Vec<(usize, Vec<u8>)> = (0..rng.random_range(1..100))
                    .map(|_| (rng.random_range(0..FAMILIES.len()), key(&mut rng, keys)))
                    .collect();
                let expected: Vec<Option<Vec<u8>>> = oracle
                    .db
                    .multi_get_cf(keys.iter().map(|(f, k)| (oracle.cf(*f), k.as_slice())))
                    .into_iter()
                    .map(|r| r.unwrap())
                    .collect();
                let ours_keys: Vec<(&ColumnFamily, &[u8])> =
                    keys.iter().map(|(f, k)| (&ours.cfs[*f], k.as_slice())).collect();
                let actual: Vec<Option<Vec<u8>>> = ours
                    .db
                    .multi_get(&ours_keys)
                    .unwrap()
                    .into_iter()
                    .map(|v| v.map(|b| b.to_vec()))
                    .collect();
                assert_eq!(actual, expected, "{}", ctx("multi_get"));
            }
            Op::PrefixScan => {
                let prefix = format!("k{:04}", rng.random_range(0..keys / 100)).into_bytes();
                let expected = oracle_range(&oracle, family, &prefix, Some(&successor(&prefix)));
                let actual =
                    collect_ours(&mut ours.db.iter_prefix(&ours.cfs[family], &prefix).unwrap());
                assert_eq!(
                    actual,
                    expected,
                    "{}",
                    ctx(&format!("prefix scan {:?}", String::from_utf8_lossy(&prefix)))
                );
            }
            Op::RangeScan => {
                // Seek inside a bounded range, then read a few entries.
                let (lo, hi) = {
                    let a = key(&mut rng, keys);
                    let b = key(&mut rng, keys);
                    if a <= b { (a, b) } else { (b, a) }
                };
                let expected: Vec<Vec<u8>> = oracle_range(&oracle, family, &lo, Some(&hi))
                    .into_iter()
                    .map(|(k, _)| k)
                    .take(50)
                    .collect();
                let mut it = ours.db.iter(&ours.cfs[family], Some(&lo), Some(&hi)).unwrap();
                let mut actual = Vec::new();
                while it.valid() && actual.len() < 50 {
                    actual.push(it.key().to_vec());
                    it.advance().unwrap();
                }
                assert_eq!(actual, expected, "{}", ctx("range scan"));
            }
            Op::DeleteRange => {
                let (lo, hi) = if mix.batch_range_deletes {
                    delete_bounds(&mut rng, keys)
                } else {
                    let (a, b) = (key(&mut rng, keys), key(&mut rng, keys));
                    if a <= b { (a, b) } else { (b, a) }
                };
                oracle.db.delete_range_cf(oracle.cf(family), &lo, &hi).unwrap();
                ours.db.delete_range(&ours.cfs[family], &lo, &hi).unwrap();
            }
            Op::DeletePrefix => {
                let prefix = map_prefix(&mut rng, keys);
                oracle.db.delete_range_cf(oracle.cf(family), &prefix, &successor(&prefix)).unwrap();
                let mut batch = WriteBatch::new();
                batch.delete_prefix(&ours.cfs[family], &prefix);
                ours.db.write(&batch).unwrap();
            }
            Op::HeldIterator => {
                // Both iterators read as of their opening (RocksDB pins an implicit snapshot).
                let lo = key(&mut rng, keys);
                let snapshot = oracle.db.snapshot();
                let mut it = ours.db.iter(&ours.cfs[family], Some(&lo), None).unwrap();
                // Read part of it first: the rest is read after the writes.
                let mut actual = Vec::new();
                for _ in 0..rng.random_range(0..5) {
                    if it.valid() {
                        actual.push((it.key().to_vec(), it.value().to_vec()));
                        it.advance().unwrap();
                    }
                }
                for _ in 0..rng.random_range(1..30) {
                    random_write(&mut rng, mix, &oracle, &ours, family);
                }
                if rng.random_bool(0.3) {
                    ours.db.flush().unwrap();
                }
                if rng.random_bool(0.1) {
                    ours.db.compact_all().unwrap();
                }
                actual.extend(collect_ours(&mut it));
                let expected: Vec<(Vec<u8>, Vec<u8>)> = snapshot
                    .iterator_cf(
                        oracle.cf(family),
                        IteratorMode::From(&lo, rocksdb::Direction::Forward),
                    )
                    .map(|r| r.unwrap())
                    .map(|(k, v)| (k.to_vec(), v.to_vec()))
                    .collect();
                assert_eq!(actual, expected, "{}", ctx("held iterator"));
            }
            Op::Flush => {
                ours.db.flush().unwrap();
                // RocksDB slows down badly with many range tombstones in its memtable.
                for f in 0..FAMILIES.len() {
                    oracle.db.flush_cf(oracle.cf(f)).unwrap();
                }
            }
            Op::CompactAll => ours.db.compact_all().unwrap(),
            Op::CompactSettled => ours.db.compact_until_settled().unwrap(),
            Op::Reopen => ours = ours.reopen(),
            Op::AbsentGet => {
                // Reads of keys surely absent must stay absent.
                let k = format!("absent{}", rng.random_range(0..1000)).into_bytes();
                assert_eq!(
                    ours.db.get(&ours.cfs[family], &k).unwrap(),
                    None,
                    "{}",
                    ctx("absent get")
                );
            }
        }
        *counts.entry(op).or_default() += 1;
    }
    // Final full comparison of every family.
    for (family, name) in FAMILIES.iter().enumerate() {
        let expected = oracle_range(&oracle, family, &[], None);
        let actual = collect_ours(&mut ours.db.iter(&ours.cfs[family], None, None).unwrap());
        assert_eq!(actual.len(), expected.len(), "seed {seed}: final size of {name}");
        assert!(actual == expected, "seed {seed}: final contents of {name} differ");
    }
    let stats = ours.db.stats();
    println!(
        "seed {seed}: {ops} ops {counts:?}; files per level {:?}, range tombstones {}, most \
         compactions at once since the last open {}",
        stats.files_per_level, stats.range_tombstones, stats.max_running_compactions
    );
    let missing: Vec<Op> =
        mix.ops.iter().map(|&(op, _)| op).filter(|op| !counts.contains_key(op)).collect();
    assert!(ops < 100_000 || missing.is_empty(), "operations never drawn: {missing:?}");
}

fn seed_and_ops(default_ops: u64) -> (u64, u64) {
    let seed = std::env::var("FORST_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let ops =
        std::env::var("FORST_DIFF_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(default_ops);
    println!("differential seed {seed} (replay with FORST_DIFF_SEED={seed})");
    (seed, ops)
}

fn run_reporting_seed(default_ops: u64, mix: &Mix, options: DbOptions) {
    let (seed, ops) = seed_and_ops(default_ops);
    let result = std::panic::catch_unwind(|| run(seed, ops, mix, &options));
    if let Err(panic) = result {
        eprintln!("differential test failed; replay with FORST_DIFF_SEED={seed}");
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn million_random_operations_match_rocksdb() {
    run_reporting_seed(1_000_000, &GENERAL, small_options());
}

#[test]
fn range_delete_heavy_operations_match_rocksdb() {
    run_reporting_seed(300_000, &RANGE_DELETE_HEAVY, small_options());
}

/// Dynamic level sizes move L0 into the base level, below empty levels, and drain levels above it
/// when deletes shrink the data. Small targets, so that the few hundred KB of live data spread
/// over three levels or more.
#[test]
fn operations_with_dynamic_level_sizes_match_rocksdb() {
    let options = DbOptions {
        dynamic_level_sizes: true,
        target_file_bytes: 16 << 10,
        l1_target_bytes: 32 << 10,
        ..small_options()
    };
    run_reporting_seed(300_000, &GENERAL, options.clone());
    run_reporting_seed(100_000, &RANGE_DELETE_HEAVY, options);
}

#[test]
fn operations_with_parallel_compactions_match_rocksdb() {
    run_reporting_seed(300_000, &PARALLEL_COMPACTIONS, parallel_compaction_options());
}
