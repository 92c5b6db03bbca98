//! FLIP-423's two-stage word count at engine level (no JVM). Stage 1 fills the state with
//! `WC_KEYS` words; stage 2 reads and updates random words of that key space (read/write ratio 1)
//! and measures records/s. Rows (see the README):
//!   (1) rust-rocksdb on local disk, one get + put per record (the baseline)
//!   (2) ours on "DFS" (memory store + 1.5 ms per request), one record at a time
//!   (3) ours on "DFS", 1000 records per batch: one multi_get, then one write batch
//!   (4) as (3), with the local disk cache under the DFS (filled as flush and compaction write)
//!   (5) ours on local disk, batched
//! Run: `cargo bench --bench wordcount` (env: WC_KEYS, WC_RECORDS, WC_LATENCY_US, WC_ROUNDS).

use std::sync::Arc;
use std::time::{Duration, Instant};

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::storage::{
    DiskCache, DiskCacheOptions, DiskCachedStorage, Latency, LatencyStorage, StorageOptions,
    StorageRef, open_storage,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "support/results.rs"]
mod results;
use results::Measurement;

const VALUE_PAD: usize = 92; // count (8 bytes) + padding: ~100-byte values like FLIP-423's PoC
const BATCH: usize = 1000;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn word(i: u64) -> Vec<u8> {
    format!("word-{:012}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_000_000).into_bytes()
}

fn encode(count: u64) -> Vec<u8> {
    let mut v = count.to_le_bytes().to_vec();
    v.resize(8 + VALUE_PAD, b'.');
    v
}

fn decode(v: Option<&[u8]>) -> u64 {
    v.map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()))
}

fn options() -> DbOptions {
    // A block cache much smaller than the state, so reads really go to storage.
    DbOptions { block_cache_bytes: 16 << 20, ..DbOptions::default() }
}

struct Ours {
    db: Db,
    cf: ColumnFamily,
}

impl Ours {
    fn fill(storage: StorageRef, keys: u64) -> Self {
        let db = Db::open_with_storage(storage, options()).unwrap();
        let cf = db.create_cf("word-count").unwrap();
        let mut batch = WriteBatch::new();
        for i in 0..keys {
            batch.put(&cf, &word(i), &encode(1));
            if batch.len() == 10_000 {
                db.write(&batch).unwrap();
                batch.clear();
            }
        }
        db.write(&batch).unwrap();
        db.flush().unwrap();
        db.compact_until_settled().unwrap();
        Ours { db, cf }
    }

    fn one_at_a_time(&self, records: u64, keys: u64, rng: &mut StdRng) {
        for _ in 0..records {
            let w = word(rng.random_range(0..keys));
            let count = decode(self.db.get(&self.cf, &w).unwrap().as_deref());
            self.db.put(&self.cf, &w, &encode(count + 1)).unwrap();
        }
    }

    fn batched(&self, records: u64, keys: u64, rng: &mut StdRng) {
        let mut done = 0;
        while done < records {
            let n = (records - done).min(BATCH as u64);
            let words: Vec<Vec<u8>> = (0..n).map(|_| word(rng.random_range(0..keys))).collect();
            let request: Vec<(&ColumnFamily, &[u8])> =
                words.iter().map(|w| (&self.cf, w.as_slice())).collect();
            let counts = self.db.multi_get(&request).unwrap();
            // Within a batch a word may repeat: later records see earlier updates, as in Flink's
            // AEC, which never lets two records of one key run in the same batch.
            let mut updates = std::collections::HashMap::new();
            let mut batch = WriteBatch::new();
            for (w, c) in words.iter().zip(counts) {
                let count = updates.get(w).copied().unwrap_or_else(|| decode(c.as_deref())) + 1;
                updates.insert(w.clone(), count);
                batch.put(&self.cf, w, &encode(count));
            }
            self.db.write(&batch).unwrap();
            done += n;
        }
    }
}

fn rate(records: u64, elapsed: Duration) -> f64 {
    records as f64 / elapsed.as_secs_f64()
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// A stage-2 pass of one row: records processed in the pass.
type Pass<'a> = Box<dyn FnMut() -> u64 + 'a>;

fn main() {
    // `cargo bench` passes --bench; nothing else to parse.
    let keys = env("WC_KEYS", 500_000);
    let records = env("WC_RECORDS", 200_000);
    let latency = Duration::from_micros(env("WC_LATENCY_US", 1500));
    // The machine is shared: rows run in interleaved rounds and each reports its median round.
    let rounds = env("WC_ROUNDS", 3).max(1);
    // One record at a time on the DFS pays a round trip per get: fewer records keep it bounded.
    let slow_records = (records / 100).max(500);
    println!(
        "word count: {keys} words in state (~{} MB), stage 2: {records} records ({slow_records} for row 2) x {rounds} interleaved rounds, DFS latency {latency:?}/request",
        (keys * (20 + 8 + VALUE_PAD as u64)) >> 20
    );

    // Stage 1 for every row.
    let rocks_dir = tempfile::tempdir().unwrap();
    let rocks = rocksdb::DB::open_default(rocks_dir.path()).unwrap();
    for i in 0..keys {
        rocks.put(word(i), encode(1)).unwrap();
    }
    rocks.flush().unwrap();
    rocks.compact_range::<&[u8], &[u8]>(None, None);
    let dfs_inner = open_storage("memory://wordcount-dfs", &StorageOptions::default()).unwrap();
    let slow = Arc::new(LatencyStorage::new(dfs_inner, Latency::per_call(latency)));
    let on_dfs = Ours::fill(slow.clone(), keys);
    let cached_inner =
        open_storage("memory://wordcount-dfs-cached", &StorageOptions::default()).unwrap();
    let cached_slow = Arc::new(LatencyStorage::new(cached_inner, Latency::per_call(latency)));
    let cache_dir = tempfile::tempdir().unwrap();
    let disk_cache = Arc::new(
        DiskCache::new(DiskCacheOptions {
            dir: cache_dir.path().to_path_buf(),
            size_limit: 1 << 30,
            reserve: 0,
        })
        .unwrap(),
    );
    let on_cached_dfs =
        Ours::fill(Arc::new(DiskCachedStorage::new(cached_slow.clone(), disk_cache.clone())), keys);
    let local_dir = tempfile::tempdir().unwrap();
    let local =
        open_storage(&format!("file://{}", local_dir.path().display()), &StorageOptions::default())
            .unwrap();
    let on_local = Ours::fill(local, keys);

    // Stage 2, one closure per row; each row's random stream continues across rounds.
    let (rocks, on_dfs, on_cached_dfs, on_local) = (&rocks, &on_dfs, &on_cached_dfs, &on_local);
    let [mut rng1, mut rng2, mut rng3, mut rng4, mut rng5] =
        [1, 2, 3, 4, 5].map(StdRng::seed_from_u64);
    let mut rows: Vec<(&str, Pass<'_>)> = vec![
        (
            "(1) rocksdb, local disk, get+put per record",
            Box::new(move || {
                for _ in 0..records {
                    let w = word(rng1.random_range(0..keys));
                    let count = decode(rocks.get(&w).unwrap().as_deref());
                    rocks.put(&w, encode(count + 1)).unwrap();
                }
                records
            }),
        ),
        (
            "(2) ours, DFS, one record at a time",
            Box::new(move || {
                on_dfs.one_at_a_time(slow_records, keys, &mut rng2);
                slow_records
            }),
        ),
        (
            "(3) ours, DFS, 1000 records per batch, no disk cache",
            Box::new(move || {
                on_dfs.batched(records, keys, &mut rng3);
                records
            }),
        ),
        (
            "(4) ours, DFS + local disk cache, batched",
            Box::new(move || {
                on_cached_dfs.batched(records, keys, &mut rng4);
                records
            }),
        ),
        (
            "(5) ours, local disk, batched",
            Box::new(move || {
                on_local.batched(records, keys, &mut rng5);
                records
            }),
        ),
    ];
    let mut rates = vec![Vec::new(); rows.len()];
    for _ in 0..rounds {
        for (row, (_, pass)) in rows.iter_mut().enumerate() {
            let start = Instant::now();
            let n = pass();
            rates[row].push(rate(n, start.elapsed()));
        }
    }
    let calls = slow.stats().calls;
    println!(
        "    DFS requests so far: {calls}; block cache hits on DFS: {}",
        on_dfs.db.stats().block_cache_hits
    );
    let cache = disk_cache.stats();
    println!(
        "    row (4): DFS requests {}; disk cache hits {}, misses {}",
        cached_slow.stats().calls,
        cache.hits,
        cache.misses
    );

    let medians: Vec<f64> = rates.iter().cloned().map(median).collect();
    println!("{:<55} {:>14} {:>10}", "row", "records/s", "vs (1)");
    for ((name, _), r) in rows.iter().zip(&medians) {
        println!("{name:<55} {r:>14.0} {:>10.2}", r / medians[0]);
    }
    results::parameters(&[
        ("WC_KEYS", keys.into()),
        ("WC_RECORDS", records.into()),
        ("WC_LATENCY_US", (latency.as_micros() as u64).into()),
        ("WC_ROUNDS", rounds.into()),
        ("row (2) records per round", slow_records.into()),
    ]);
    for (row, ((name, _), r)) in rows.iter().zip(&medians).enumerate() {
        let mut m = Measurement::new(name, "records/s", true).value(*r).rounds(&rates[row]);
        if row > 0 {
            m = m.baseline(rows[0].0, medians[0], &rates[0]);
        }
        m.record();
    }
}
