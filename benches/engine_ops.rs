//! Micro benchmarks (B5): get, put, multi_get (100 and 1000 keys) and prefix iteration, ours vs
//! rust-rocksdb on the same data, both on local disk, configured alike (cache, bloom filters, LZ4,
//! block size, memtable size, no WAL). `scripts/bench-ratios.py` prints the ratios.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const KEYS: u64 = 200_000;

fn key(i: u64) -> Vec<u8> {
    // Flink-like layout: key group (2 bytes), key, namespace.
    let mut k = (((i / 1000) % 128) as u16).to_be_bytes().to_vec();
    k.extend_from_slice(format!("user-{i:010}").as_bytes());
    k.extend_from_slice(b"ns");
    k
}

fn value() -> Vec<u8> {
    vec![b'v'; 100]
}

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ours: Db,
    cf: ColumnFamily,
    rocks: rocksdb::DB,
}

/// RocksDB configured as ours runs by default (`DbOptions::default`): a 256 MiB block cache,
/// 10-bit bloom filters, LZ4, 4 KiB blocks; no WAL is written by either (ours has none).
fn rocks_options() -> rocksdb::Options {
    let mut table = rocksdb::BlockBasedOptions::default();
    let defaults = DbOptions::default();
    table.set_block_cache(
        &rocksdb::Cache::new_lru_cache(defaults.block_cache_bytes as usize).unwrap(),
    );
    table.set_bloom_filter(defaults.table.bloom_bits_per_key as f64, false);
    table.set_block_size(defaults.table.block_size);
    let mut options = rocksdb::Options::default();
    options.create_if_missing(true);
    options.set_block_based_table_factory(&table);
    options.set_compression_type(rocksdb::DBCompressionType::Lz4);
    options.set_write_buffer_size(defaults.memtable_bytes as usize);
    options
}

fn no_wal() -> rocksdb::WriteOptions {
    let mut write = rocksdb::WriteOptions::default();
    write.disable_wal(true);
    write
}

fn setup() -> Setup {
    let (ours_dir, rocks_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ours =
        Db::open(&format!("file://{}", ours_dir.path().display()), DbOptions::default()).unwrap();
    let cf = ours.create_cf("bench").unwrap();
    let rocks = rocksdb::DB::open(&rocks_options(), rocks_dir.path()).unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..KEYS {
        batch.put(&cf, &key(i), &value());
        rocks.put_opt(key(i), value(), &no_wal()).unwrap();
        if batch.len() == 10_000 {
            ours.write(&batch).unwrap();
            batch.clear();
        }
    }
    ours.write(&batch).unwrap();
    ours.flush().unwrap();
    ours.compact_all().unwrap();
    rocks.flush().unwrap();
    rocks.compact_range::<&[u8], &[u8]>(None, None);
    Setup { _dirs: (ours_dir, rocks_dir), ours, cf, rocks }
}

fn benches(c: &mut Criterion) {
    let s = setup();
    let mut rng = StdRng::seed_from_u64(7);

    let mut group = c.benchmark_group("get");
    group.bench_function("ours", |b| {
        b.iter(|| black_box(s.ours.get(&s.cf, &key(rng.random_range(0..KEYS))).unwrap()))
    });
    group.bench_function("rocksdb", |b| {
        b.iter(|| black_box(s.rocks.get(key(rng.random_range(0..KEYS))).unwrap()))
    });
    group.finish();

    for n in [100usize, 1000] {
        let mut group = c.benchmark_group(format!("multi_get_{n}"));
        group.bench_function(BenchmarkId::from_parameter("ours"), |b| {
            b.iter(|| {
                let keys: Vec<Vec<u8>> = (0..n).map(|_| key(rng.random_range(0..KEYS))).collect();
                let request: Vec<(&ColumnFamily, &[u8])> =
                    keys.iter().map(|k| (&s.cf, k.as_slice())).collect();
                black_box(s.ours.multi_get(&request).unwrap())
            })
        });
        group.bench_function(BenchmarkId::from_parameter("rocksdb"), |b| {
            b.iter(|| {
                let keys: Vec<Vec<u8>> = (0..n).map(|_| key(rng.random_range(0..KEYS))).collect();
                black_box(s.rocks.multi_get(keys.iter()))
            })
        });
        group.finish();
    }

    prefix_group(c, "prefix_iter_100", &s, &mut rng);
    // The same scans over state whose newest versions are still in the memtable.
    overwrite_in_memtable(&s, RECENT_WRITES);
    prefix_group(c, "prefix_iter_100_memtable", &s, &mut rng);

    // Puts last, into a DB of their own: they grow the memtable for as long as criterion runs
    // them, and the reads above must all meet the same compacted state.
    drop(s);
    let w = setup();
    let no_wal = no_wal();
    let mut group = c.benchmark_group("put");
    group.bench_function("ours", |b| {
        b.iter(|| w.ours.put(&w.cf, &key(rng.random_range(0..KEYS)), &value()).unwrap())
    });
    group.bench_function("rocksdb", |b| {
        b.iter(|| w.rocks.put_opt(key(rng.random_range(0..KEYS)), value(), &no_wal).unwrap())
    });
    group.finish();
}

/// Prefix iteration: all keys of one key group's first 100 users (a Flink map state scan).
fn prefix_group(c: &mut Criterion, name: &str, s: &Setup, rng: &mut StdRng) {
    let mut group = c.benchmark_group(name);
    let prefix = |i: u64| {
        let k = key(i);
        k[..k.len() - 4].to_vec() // key group + "user-000000xx"
    };
    group.bench_function("ours", |b| {
        b.iter(|| {
            let p = prefix(rng.random_range(0..KEYS / 100) * 100);
            let mut it = s.ours.iter_prefix(&s.cf, &p).unwrap();
            let mut n = 0;
            while it.valid() {
                n += it.value().len();
                it.advance().unwrap();
            }
            black_box(n)
        })
    });
    group.bench_function("rocksdb", |b| {
        b.iter(|| {
            let p = prefix(rng.random_range(0..KEYS / 100) * 100);
            let mut n = 0;
            for item in s.rocks.prefix_iterator(&p) {
                let (k, v) = item.unwrap();
                if !k.starts_with(&p) {
                    break;
                }
                n += v.len();
            }
            black_box(n)
        })
    });
    group.finish();
}

/// Versions written after the compaction, left in both memtables (each engine's default memtable
/// holds them all).
const RECENT_WRITES: u64 = 100_000;

fn overwrite_in_memtable(s: &Setup, count: u64) {
    let mut rng = StdRng::seed_from_u64(11);
    let mut batch = WriteBatch::new();
    for _ in 0..count {
        let k = key(rng.random_range(0..KEYS));
        batch.put(&s.cf, &k, &value());
        s.rocks.put_opt(&k, value(), &no_wal()).unwrap();
    }
    s.ours.write(&batch).unwrap();
}

criterion_group! {
    name = engine;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = benches
}
criterion_main!(engine);
