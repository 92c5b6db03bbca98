//! Differential test: ForSt-RS against RocksDB (the oracle) over a long random sequence of
//! operations on several column families, with flushes, compactions and reopens interleaved.
//! Every read is compared. Set FORST_DIFF_SEED to replay a failure, FORST_DIFF_OPS to change the
//! length.

use std::collections::BTreeSet;

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::storage::{StorageOptions, StorageRef, open_storage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rocksdb::{ColumnFamilyDescriptor, IteratorMode, MergeOperands, Options};

const FAMILIES: [&str; 3] = ["value-state", "list-state", "map-state"];
const KEYS_PER_FAMILY: u32 = 20_000;

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
    db: Db,
    cfs: Vec<ColumnFamily>,
}

impl Ours {
    fn open(storage: StorageRef) -> Self {
        let db = Db::open_with_storage(storage.clone(), small_options()).expect("open forst");
        let cfs = FAMILIES.iter().map(|n| db.create_cf(n).unwrap()).collect();
        Ours { storage, db, cfs }
    }

    fn reopen(self) -> Self {
        self.db.flush().unwrap();
        self.db.close().unwrap();
        let storage = self.storage.clone();
        drop(self);
        Ours::open(storage)
    }
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    // Skewed: a hot quarter of the key space gets half of the traffic, like word counts.
    let k = if rng.random_bool(0.5) {
        rng.random_range(0..KEYS_PER_FAMILY / 4)
    } else {
        rng.random_range(0..KEYS_PER_FAMILY)
    };
    format!("k{k:06}").into_bytes()
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    let len = rng.random_range(0..64);
    (0..len).map(|_| rng.random_range(b'a'..=b'z')).collect()
}

fn run(seed: u64, ops: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let oracle_dir = tempfile::tempdir().unwrap();
    let ours_dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::open(oracle_dir.path());
    let url = format!("file://{}", ours_dir.path().display());
    let mut ours = Ours::open(open_storage(&url, &StorageOptions::default()).unwrap());
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for step in 0..ops {
        let family = rng.random_range(0..FAMILIES.len());
        let roll = rng.random_range(0..10_000);
        let ctx = |what: &str| format!("seed {seed}, step {step}, {what}");
        let op = match roll {
            0..3000 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                oracle.db.put_cf(oracle.cf(family), &k, &v).unwrap();
                ours.db.put(&ours.cfs[family], &k, &v).unwrap();
                "put"
            }
            3000..5500 => {
                let k = key(&mut rng);
                let expected = oracle.db.get_cf(oracle.cf(family), &k).unwrap();
                let actual = ours.db.get(&ours.cfs[family], &k).unwrap().map(|b| b.to_vec());
                assert_eq!(
                    actual,
                    expected,
                    "{}",
                    ctx(&format!("get {:?}", String::from_utf8_lossy(&k)))
                );
                "get"
            }
            5500..6300 => {
                let k = key(&mut rng);
                oracle.db.delete_cf(oracle.cf(family), &k).unwrap();
                ours.db.delete(&ours.cfs[family], &k).unwrap();
                "delete"
            }
            6300..7500 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                oracle.db.merge_cf(oracle.cf(family), &k, &v).unwrap();
                ours.db.merge(&ours.cfs[family], &k, &v).unwrap();
                "merge"
            }
            7500..8000 => {
                let mut theirs = rocksdb::WriteBatch::default();
                let mut batch = WriteBatch::new();
                for _ in 0..rng.random_range(1..20) {
                    let f = rng.random_range(0..FAMILIES.len());
                    let (k, v) = (key(&mut rng), value(&mut rng));
                    match rng.random_range(0..3) {
                        0 => {
                            theirs.put_cf(oracle.cf(f), &k, &v);
                            batch.put(&ours.cfs[f], &k, &v);
                        }
                        1 => {
                            theirs.delete_cf(oracle.cf(f), &k);
                            batch.delete(&ours.cfs[f], &k);
                        }
                        _ => {
                            theirs.merge_cf(oracle.cf(f), &k, &v);
                            batch.merge(&ours.cfs[f], &k, &v);
                        }
                    }
                }
                oracle.db.write(theirs).unwrap();
                ours.db.write(&batch).unwrap();
                "write_batch"
            }
            8000..8800 => {
                let keys: Vec<(usize, Vec<u8>)> = (0..rng.random_range(1..100))
                    .map(|_| (rng.random_range(0..FAMILIES.len()), key(&mut rng)))
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
                "multi_get"
            }
            8800..9300 => {
                let prefix =
                    format!("k{:04}", rng.random_range(0..KEYS_PER_FAMILY / 100)).into_bytes();
                let expected: Vec<(Vec<u8>, Vec<u8>)> = oracle
                    .db
                    .iterator_cf(
                        oracle.cf(family),
                        IteratorMode::From(&prefix, rocksdb::Direction::Forward),
                    )
                    .map(|r| r.unwrap())
                    .take_while(|(k, _)| k.starts_with(&prefix))
                    .map(|(k, v)| (k.to_vec(), v.to_vec()))
                    .collect();
                let mut it = ours.db.iter_prefix(&ours.cfs[family], &prefix).unwrap();
                let mut actual = Vec::new();
                while it.valid() {
                    actual.push((it.key().to_vec(), it.value().to_vec()));
                    it.advance().unwrap();
                }
                assert_eq!(
                    actual,
                    expected,
                    "{}",
                    ctx(&format!("prefix scan {:?}", String::from_utf8_lossy(&prefix)))
                );
                "prefix_scan"
            }
            9300..9400 => {
                // Seek inside a bounded range, then read a few entries.
                let (lo, hi) = {
                    let a = key(&mut rng);
                    let b = key(&mut rng);
                    if a <= b { (a, b) } else { (b, a) }
                };
                let expected: Vec<Vec<u8>> = oracle
                    .db
                    .iterator_cf(
                        oracle.cf(family),
                        IteratorMode::From(&lo, rocksdb::Direction::Forward),
                    )
                    .map(|r| r.unwrap().0.to_vec())
                    .take_while(|k| *k < hi)
                    .take(50)
                    .collect();
                let mut it = ours.db.iter(&ours.cfs[family], Some(&lo), Some(&hi)).unwrap();
                let mut actual = Vec::new();
                while it.valid() && actual.len() < 50 {
                    actual.push(it.key().to_vec());
                    it.advance().unwrap();
                }
                assert_eq!(actual, expected, "{}", ctx("range scan"));
                "range_scan"
            }
            9400..9440 => {
                let (lo, hi) = {
                    let a = key(&mut rng);
                    let b = key(&mut rng);
                    if a <= b { (a, b) } else { (b, a) }
                };
                oracle.db.delete_range_cf(oracle.cf(family), &lo, &hi).unwrap();
                ours.db.delete_range(&ours.cfs[family], &lo, &hi).unwrap();
                "delete_range"
            }
            9440..9460 => {
                ours.db.flush().unwrap();
                // RocksDB slows down badly with many range tombstones in its memtable.
                for f in 0..FAMILIES.len() {
                    oracle.db.flush_cf(oracle.cf(f)).unwrap();
                }
                "flush"
            }
            9460..9463 => {
                ours.db.compact_all().unwrap();
                "compact_all"
            }
            9463..9465 => {
                ours = ours.reopen();
                "reopen"
            }
            _ => {
                // Reads of keys surely absent must stay absent.
                let k = format!("absent{}", rng.random_range(0..1000)).into_bytes();
                assert_eq!(
                    ours.db.get(&ours.cfs[family], &k).unwrap(),
                    None,
                    "{}",
                    ctx("absent get")
                );
                "absent_get"
            }
        };
        *counts.entry(op).or_default() += 1;
    }
    // Final full comparison of every family.
    for (family, name) in FAMILIES.iter().enumerate() {
        let expected: Vec<(Vec<u8>, Vec<u8>)> = oracle
            .db
            .iterator_cf(oracle.cf(family), IteratorMode::Start)
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        let mut it = ours.db.iter(&ours.cfs[family], None, None).unwrap();
        let mut actual = Vec::new();
        while it.valid() {
            actual.push((it.key().to_vec(), it.value().to_vec()));
            it.advance().unwrap();
        }
        assert_eq!(actual.len(), expected.len(), "seed {seed}: final size of {name}");
        assert!(actual == expected, "seed {seed}: final contents of {name} differ");
    }
    let stats = ours.db.stats();
    println!("seed {seed}: {ops} ops {counts:?}; files per level {:?}", stats.files_per_level);
    let touched: BTreeSet<&str> = counts.keys().copied().collect();
    assert!(touched.len() >= 12, "operation mix too narrow: {touched:?}");
}

#[test]
fn million_random_operations_match_rocksdb() {
    let seed = std::env::var("FORST_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let ops =
        std::env::var("FORST_DIFF_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    println!("differential seed {seed} (replay with FORST_DIFF_SEED={seed})");
    let result = std::panic::catch_unwind(|| run(seed, ops));
    if let Err(panic) = result {
        eprintln!("differential test failed; replay with FORST_DIFF_SEED={seed}");
        std::panic::resume_unwind(panic);
    }
}
