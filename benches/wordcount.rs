//! FLIP-423's two-stage word count at engine level (no JVM). Stage 1 fills the state with
//! `WC_KEYS` words; stage 2 reads and updates random words of that key space (read/write ratio 1)
//! and measures records/s. Rows (see the README):
//!   (1) rust-rocksdb on local disk, one get + put per record (the baseline)
//!   (2) ours on "DFS" (memory store + 1.5 ms per request), one record at a time
//!   (3) ours on "DFS", 1000 records per batch: one multi_get, then one write batch
//!   (5) ours on local disk, batched
//! Run: `cargo bench --bench wordcount` (env: WC_KEYS, WC_RECORDS, WC_LATENCY_US).

use std::sync::Arc;
use std::time::{Duration, Instant};

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::storage::{Latency, LatencyStorage, StorageOptions, StorageRef, open_storage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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

fn main() {
    // `cargo bench` passes --bench; nothing else to parse.
    let keys = env("WC_KEYS", 500_000);
    let records = env("WC_RECORDS", 200_000);
    let latency = Duration::from_micros(env("WC_LATENCY_US", 1500));
    // One record at a time on the DFS pays a round trip per get: fewer records keep it bounded.
    let slow_records = (records / 100).max(500);
    println!(
        "word count: {keys} words in state (~{} MB), stage 2: {records} records ({slow_records} for row 2), DFS latency {latency:?}/request",
        (keys * (20 + 8 + VALUE_PAD as u64)) >> 20
    );
    let mut rows: Vec<(&str, f64)> = Vec::new();

    // (1) RocksDB, local disk.
    {
        let dir = tempfile::tempdir().unwrap();
        let db = rocksdb::DB::open_default(dir.path()).unwrap();
        for i in 0..keys {
            db.put(word(i), encode(1)).unwrap();
        }
        db.flush().unwrap();
        db.compact_range::<&[u8], &[u8]>(None, None);
        let mut rng = StdRng::seed_from_u64(1);
        let start = Instant::now();
        for _ in 0..records {
            let w = word(rng.random_range(0..keys));
            let count = decode(db.get(&w).unwrap().as_deref());
            db.put(&w, encode(count + 1)).unwrap();
        }
        rows.push(("(1) rocksdb, local disk, get+put per record", rate(records, start.elapsed())));
    }

    let dfs = |name: &str| -> (StorageRef, Arc<LatencyStorage>) {
        let inner = open_storage(&format!("memory://wordcount-{name}"), &StorageOptions::default())
            .unwrap();
        let slow = Arc::new(LatencyStorage::new(inner, Latency::per_call(latency)));
        (slow.clone(), slow)
    };

    // (2) and (3) share one filled DFS database.
    {
        let (storage, slow) = dfs("dfs");
        let ours = Ours::fill(storage, keys);
        let mut rng = StdRng::seed_from_u64(2);
        let calls_before = slow.stats().calls;
        let start = Instant::now();
        ours.one_at_a_time(slow_records, keys, &mut rng);
        let elapsed = start.elapsed();
        let per_record = (slow.stats().calls - calls_before) as f64 / slow_records as f64;
        println!("    row 2: {per_record:.2} storage requests per record");
        rows.push(("(2) ours, DFS, one record at a time", rate(slow_records, elapsed)));

        let calls_before = slow.stats().calls;
        let start = Instant::now();
        ours.batched(records, keys, &mut rng);
        let elapsed = start.elapsed();
        let per_record = (slow.stats().calls - calls_before) as f64 / records as f64;
        println!(
            "    row 3: {per_record:.2} storage requests per record; block cache {:?}",
            ours.db.stats().block_cache_hits
        );
        rows.push(("(3) ours, DFS, 1000 records per batch, no disk cache", rate(records, elapsed)));
    }

    // (5) ours on local disk, batched.
    {
        let dir = tempfile::tempdir().unwrap();
        let storage =
            open_storage(&format!("file://{}", dir.path().display()), &StorageOptions::default())
                .unwrap();
        let ours = Ours::fill(storage, keys);
        let mut rng = StdRng::seed_from_u64(3);
        let start = Instant::now();
        ours.batched(records, keys, &mut rng);
        rows.push(("(5) ours, local disk, batched", rate(records, start.elapsed())));
    }

    let baseline = rows[0].1;
    println!("{:<55} {:>14} {:>10}", "row", "records/s", "vs (1)");
    for (name, r) in &rows {
        println!("{name:<55} {r:>14.0} {:>10.2}", r / baseline);
    }
}
