//! Checkpoint, restore and rescale cost at two state sizes (benchmark protocol B3/B4, engine
//! level): the synchronous phase, the asynchronous phase, the bytes that passed through this
//! process while copying, a restore at the same parallelism and a 2 -> 3 rescale, each with the
//! ratio large/small. The target is flat: the synchronous phase and restore/rescale should not
//! grow with state size, and no byte should pass through the process when the storage can copy.
//!
//! State: two databases (the two subtasks of parallelism 2, key groups 0-63 and 64-127) filled
//! with `CP_KEYS` keys of ~100 bytes in total, large = `CP_SCALE` times more. Storages: a local
//! directory (hard links) and a "DFS" (in-memory object store + `CP_LATENCY_US` per request,
//! server-side copies).
//! Run: `cargo bench --bench checkpoint` (env: CP_KEYS, CP_SCALE, CP_LATENCY_US, CP_ROUNDS).

use std::sync::Arc;
use std::time::{Duration, Instant};

use forst::lsm::{
    Checkpoint, Db, DbOptions, KeyGroupLayout, KeyGroups, RestoreSource, WriteBatch, restore,
};
use forst::storage::{Latency, LatencyStorage, StorageOptions, StorageRef, open_storage};

const VALUE_BYTES: usize = 100;
/// Writes after the last flush, so every synchronous phase has a memtable to freeze.
const UNFLUSHED_KEYS: u64 = 50_000;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn key(group: u32, i: u64) -> Vec<u8> {
    let mut key = vec![group as u8];
    key.extend_from_slice(
        format!("key-{:012}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_000_000).as_bytes(),
    );
    key
}

/// Opens storage `path` under `root` (a file:// directory or a memory:// store).
struct Place {
    root: String,
    latency: Option<Duration>,
}

impl Place {
    fn open(&self, path: &str) -> StorageRef {
        let storage = open_storage(&format!("{}/{path}", self.root), &StorageOptions::default())
            .expect("open storage");
        match self.latency {
            Some(latency) => Arc::new(LatencyStorage::new(storage, Latency::per_call(latency))),
            None => storage,
        }
    }
}

struct Measured {
    sync: Duration,
    async_phase: Duration,
    streamed_bytes: u64,
    restore: Duration,
    rescale: Duration,
    state_mb: u64,
}

/// Incompressible bytes, so the state on storage is as large as it claims.
fn value(seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..VALUE_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn fill(db: &Db, groups: KeyGroups, keys: u64) {
    let cf = db.create_cf("word-count").unwrap();
    let mut batch = WriteBatch::new();
    let span = u64::from(groups.last - groups.first + 1);
    for i in 0..keys {
        batch.put(&cf, &key(groups.first + (i % span) as u32, i), &value(i));
        if batch.len() == 10_000 {
            db.write(&batch).unwrap();
            batch.clear();
        }
    }
    db.write(&batch).unwrap();
}

/// The asynchronous phase: flush what the synchronous phase froze, copy every file.
fn complete(
    mut checkpoint: Checkpoint,
    dest: &StorageRef,
    groups: KeyGroups,
) -> (RestoreSource, u64) {
    checkpoint.wait_durable().unwrap();
    let copies: Vec<(String, String)> =
        checkpoint.files().unwrap().into_iter().map(|(name, _)| (name.clone(), name)).collect();
    let streamed = checkpoint.copy_files(&copies, dest.as_ref()).unwrap();
    let files = copies.into_iter().map(|(name, _)| (name.clone(), (dest.clone(), name))).collect();
    let source =
        RestoreSource { manifest: checkpoint.manifest().unwrap(), files, key_groups: groups };
    (source, streamed)
}

fn layout(first: u32, last: u32) -> KeyGroupLayout {
    KeyGroupLayout { range: KeyGroups::new(first, last), prefix_bytes: 1 }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn run(place: &Place, tag: &str, keys: u64, rounds: u64) -> Measured {
    let halves = [KeyGroups::new(0, 63), KeyGroups::new(64, 127)];
    let dbs: Vec<Db> = halves
        .iter()
        .enumerate()
        .map(|(i, groups)| {
            let db =
                Db::open_with_storage(place.open(&format!("{tag}/db{i}")), DbOptions::default())
                    .unwrap();
            fill(&db, *groups, keys / 2);
            db.flush().unwrap();
            db.compact_until_settled().unwrap();
            db
        })
        .collect();
    let state_mb =
        dbs.iter().map(|db| db.stats().bytes_per_level.iter().sum::<u64>()).sum::<u64>() >> 20;
    let (mut syncs, mut asyncs, mut streamed) = (Vec::new(), Vec::new(), 0);
    let mut sources = Vec::new();
    for round in 0..rounds {
        sources.clear();
        for (i, db) in dbs.iter().enumerate() {
            fill_unflushed(db, halves[i], round);
            let started = Instant::now();
            let checkpoint = db.checkpoint().unwrap();
            syncs.push(started.elapsed());
            let dest = place.open(&format!("{tag}/chk-{round}/db{i}"));
            let started = Instant::now();
            let (source, bytes) = complete(checkpoint, &dest, halves[i]);
            asyncs.push(started.elapsed());
            streamed += bytes;
            sources.push(source);
        }
    }
    // Restores and rescales are repeated too (into fresh directories): median per metric.
    let (mut restores, mut rescales) = (Vec::new(), Vec::new());
    let thirds = [KeyGroups::new(0, 42), KeyGroups::new(43, 85), KeyGroups::new(86, 127)];
    for round in 0..rounds {
        let started = Instant::now();
        let dir = place.open(&format!("{tag}/restored-{round}"));
        let same =
            restore(dir, vec![sources[0].clone()], layout(0, 63), DbOptions::default()).unwrap();
        restores.push(started.elapsed());
        check(&same, KeyGroups::new(0, 63), keys);
        // Subtasks restore in parallel in Flink: the rescale takes as long as the slowest one.
        let mut slowest = Duration::ZERO;
        for (i, groups) in thirds.iter().enumerate() {
            let started = Instant::now();
            let db = restore(
                place.open(&format!("{tag}/third{i}-{round}")),
                sources.clone(),
                layout(groups.first, groups.last),
                DbOptions::default(),
            )
            .unwrap();
            slowest = slowest.max(started.elapsed());
            check(&db, *groups, keys);
        }
        rescales.push(slowest);
    }
    Measured {
        sync: median(syncs),
        async_phase: median(asyncs),
        streamed_bytes: streamed,
        restore: median(restores),
        rescale: median(rescales),
        state_mb,
    }
}

fn fill_unflushed(db: &Db, groups: KeyGroups, round: u64) {
    let cf = db.cf("word-count").unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..UNFLUSHED_KEYS {
        let n = (round + 1) * 1_000_000_000 + i;
        batch.put(&cf, &key(groups.first + (i % 64) as u32, n), &value(n));
    }
    db.write(&batch).unwrap();
}

/// A restored database holds the keys of its range that were written (guards against timing a
/// broken restore).
fn check(db: &Db, groups: KeyGroups, keys: u64) {
    let cf = db.cf("word-count").expect("family restored");
    let written =
        (0..keys / 2).flat_map(|i| [key((i % 64) as u32, i), key(64 + (i % 64) as u32, i)]);
    let mine: Vec<_> = written
        .filter(|k| (groups.first..=groups.last).contains(&u32::from(k[0])))
        .take(1000)
        .collect();
    let missing = mine.iter().filter(|k| db.get(&cf, k).unwrap().is_none()).count();
    assert_eq!(missing, 0, "restored database lost keys");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let keys = env("CP_KEYS", 400_000);
    let scale = env("CP_SCALE", 10).max(2);
    let rounds = env("CP_ROUNDS", 5).max(1);
    let latency = Duration::from_micros(env("CP_LATENCY_US", 1500));
    let tmp = tempfile::tempdir().unwrap();
    let places = [
        (
            "local directory (hard links)",
            Place { root: format!("file://{}", tmp.path().display()), latency: None },
        ),
        (
            "DFS: object store + latency (server-side copy)",
            Place { root: "memory://checkpoint-bench".into(), latency: Some(latency) },
        ),
    ];
    println!(
        "checkpoint/restore/rescale: {keys} keys (small) vs {} keys (large), ~{VALUE_BYTES}-byte values, {rounds} checkpoints each, DFS latency {latency:?}/request",
        keys * scale
    );
    for (name, place) in &places {
        let small = run(place, &format!("small-{}", name.len()), keys, rounds);
        let large = run(place, &format!("large-{}", name.len()), keys * scale, rounds);
        println!("\n{name}: state {} MB vs {} MB", small.state_mb, large.state_mb);
        println!("| metric | small | large | large/small |");
        println!("|---|---:|---:|---:|");
        let row = |metric: &str, a: f64, b: f64, unit: &str| {
            let ratio = if a > 0.0 {
                format!("{:.2}", b / a)
            } else if b == 0.0 {
                "-".into()
            } else {
                "inf".into()
            };
            println!("| {metric} | {a:.3} {unit} | {b:.3} {unit} | {ratio} |");
        };
        row("sync phase (median)", ms(small.sync), ms(large.sync), "ms");
        row(
            "async phase (median, incl. flush)",
            ms(small.async_phase),
            ms(large.async_phase),
            "ms",
        );
        row(
            "bytes through the process (all checkpoints)",
            small.streamed_bytes as f64,
            large.streamed_bytes as f64,
            "B",
        );
        row("restore, same parallelism (median)", ms(small.restore), ms(large.restore), "ms");
        row("rescale 2 -> 3 (slowest subtask, median)", ms(small.rescale), ms(large.rescale), "ms");
    }
}
