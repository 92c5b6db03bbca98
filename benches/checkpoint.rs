//! Checkpoint, restore and rescale cost at two state sizes (benchmark protocol B3/B4, engine
//! level): the synchronous phase, the asynchronous phase, the bytes checkpoints wrote, a restore
//! at the same parallelism and a 2 -> 3 rescale, each with the ratio large/small. Checkpoints
//! hand their files over (FLIP-428: the database's files are the checkpoint's; Flink's
//! `primary-dir: checkpoint-dir`) and restores reference them in place. The target is flat:
//! neither phase nor restore/rescale should grow with state size, and a checkpoint should write
//! nothing but its manifest.
//!
//! State: two databases (the two subtasks of parallelism 2, key groups 0-63 and 64-127) filled
//! with `CP_KEYS` keys of ~100 bytes in total, large = `CP_SCALE` times more. Storages: a local
//! directory, a "DFS" (in-memory object store + `CP_LATENCY_US` per request) and, when
//! `FORST_BENCH_CLASSPATH` names a class path with Flink, Hadoop's MiniDFSCluster and the test
//! classes, HDFS (a MiniDFSCluster in this process) through the Flink file-system proxy.
//! Run: `scripts/bench-checkpoint.sh` (env: CP_KEYS, CP_SCALE, CP_LATENCY_US, CP_ROUNDS).

use std::sync::Arc;
use std::time::{Duration, Instant};

use forst::lsm::{
    Checkpoint, Db, DbOptions, KeyGroupLayout, KeyGroups, RestoreSource, WriteBatch, restore,
};
use forst::storage::{Latency, LatencyStorage, StorageOptions, StorageRef, open_storage};
use forst::test_support::incompressible;
use jni::JavaVM;
use jni::objects::{GlobalRef, JObject, JString, JValue};

#[path = "support/jvm.rs"]
mod jvm;
#[path = "support/results.rs"]
mod results;
use results::Measurement;

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

/// Opens storage `path` under `root` (a file:// directory, a memory:// store, an hdfs:// URI).
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

/// Times per round, in ms.
struct Measured {
    sync: Vec<f64>,
    async_phase: Vec<f64>,
    /// Bytes the databases wrote during the hand-overs.
    checkpoint_bytes: u64,
    restore: Vec<f64>,
    rescale: Vec<f64>,
    state_mb: u64,
}

/// Incompressible bytes, so the state on storage is as large as it claims.
fn value(seed: u64) -> Vec<u8> {
    incompressible(seed, VALUE_BYTES)
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

/// The asynchronous phase: flush what the synchronous phase froze, then hand every file over
/// where it is (already handed-over files are skipped by the database). Returns the restore
/// source, which references the files in the database's directory, and the bytes the database
/// wrote for the hand-over (nothing else writes meanwhile: no background compaction, see `run`).
fn complete(
    db: &Db,
    mut checkpoint: Checkpoint,
    storage: &StorageRef,
    groups: KeyGroups,
) -> (RestoreSource, u64) {
    checkpoint.wait_durable().unwrap();
    let names: Vec<String> =
        checkpoint.files().unwrap().into_iter().map(|(name, _)| name).collect();
    let before = db.stats().io.bytes_written;
    checkpoint.hand_over(&names, 1).unwrap();
    let written = db.stats().io.bytes_written - before;
    let files = names.into_iter().map(|name| (name.clone(), (storage.clone(), name))).collect();
    let source =
        RestoreSource { manifest: checkpoint.manifest().unwrap(), files, key_groups: groups };
    (source, written)
}

/// Compactions run only where called: the bytes written during a hand-over are the hand-over's,
/// and no restored database compacts in the background while the next restore is timed.
fn quiet() -> DbOptions {
    DbOptions { auto_compaction: false, ..DbOptions::default() }
}

fn layout(first: u32, last: u32) -> KeyGroupLayout {
    KeyGroupLayout { range: KeyGroups::new(first, last), prefix_bytes: 1 }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(place: &Place, tag: &str, keys: u64, rounds: u64) -> Measured {
    let halves = [KeyGroups::new(0, 63), KeyGroups::new(64, 127)];
    let dbs: Vec<(Db, StorageRef)> = halves
        .iter()
        .enumerate()
        .map(|(i, groups)| {
            let storage = place.open(&format!("{tag}/db{i}"));
            let db = Db::open_with_storage(storage.clone(), quiet()).unwrap();
            fill(&db, *groups, keys / 2);
            db.flush().unwrap();
            db.compact_until_settled().unwrap();
            (db, storage)
        })
        .collect();
    let state_mb =
        dbs.iter().map(|(db, _)| db.stats().bytes_per_level.iter().sum::<u64>()).sum::<u64>() >> 20;
    let (mut syncs, mut asyncs, mut checkpoint_bytes) = (Vec::new(), Vec::new(), 0);
    let mut sources = Vec::new();
    for round in 0..rounds {
        sources.clear();
        for (i, (db, storage)) in dbs.iter().enumerate() {
            fill_unflushed(db, halves[i], round);
            let started = Instant::now();
            let checkpoint = db.checkpoint().unwrap();
            syncs.push(ms(started.elapsed()));
            let started = Instant::now();
            let (source, bytes) = complete(db, checkpoint, storage, halves[i]);
            asyncs.push(ms(started.elapsed()));
            checkpoint_bytes += bytes;
            sources.push(source);
        }
    }
    // Restores and rescales are repeated too (into fresh directories): median per metric.
    let (mut restores, mut rescales) = (Vec::new(), Vec::new());
    let thirds = [KeyGroups::new(0, 42), KeyGroups::new(43, 85), KeyGroups::new(86, 127)];
    for round in 0..rounds {
        let started = Instant::now();
        let dir = place.open(&format!("{tag}/restored-{round}"));
        let same = restore(dir, vec![sources[0].clone()], layout(0, 63), quiet()).unwrap();
        restores.push(ms(started.elapsed()));
        check(&same, KeyGroups::new(0, 63), keys);
        // Subtasks restore in parallel in Flink: the rescale takes as long as the slowest one.
        let mut slowest = Duration::ZERO;
        for (i, groups) in thirds.iter().enumerate() {
            let started = Instant::now();
            let db = restore(
                place.open(&format!("{tag}/third{i}-{round}")),
                sources.clone(),
                layout(groups.first, groups.last),
                quiet(),
            )
            .unwrap();
            slowest = slowest.max(started.elapsed());
            check(&db, *groups, keys);
        }
        rescales.push(ms(slowest));
    }
    Measured {
        sync: syncs,
        async_phase: asyncs,
        checkpoint_bytes,
        restore: restores,
        rescale: rescales,
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
    let mut places = vec![
        (
            "local directory",
            Place { root: format!("file://{}", tmp.path().display()), latency: None },
        ),
        (
            "DFS: object store + latency",
            Place { root: "memory://checkpoint-bench".into(), latency: Some(latency) },
        ),
    ];
    // Kept until the end of the run: the cluster lives in this process's JVM.
    let _hdfs = match std::env::var("FORST_BENCH_CLASSPATH") {
        Ok(classpath) => {
            let (vm, cluster, root) = start_hdfs(&classpath, &tmp.path().join("hdfs"));
            places.push((
                "HDFS (MiniDFSCluster) through the Flink proxy",
                Place { root, latency: None },
            ));
            Some((vm, cluster))
        }
        Err(_) => {
            println!(
                "(no HDFS rows: FORST_BENCH_CLASSPATH is not set; run scripts/bench-checkpoint.sh)"
            );
            None
        }
    };
    println!(
        "checkpoint/restore/rescale: {keys} keys (small) vs {} keys (large), ~{VALUE_BYTES}-byte values, {rounds} checkpoints each, DFS latency {latency:?}/request",
        keys * scale
    );
    results::parameters(&[
        ("CP_KEYS", keys.into()),
        ("CP_SCALE", scale.into()),
        ("CP_ROUNDS", rounds.into()),
        ("CP_LATENCY_US", (latency.as_micros() as u64).into()),
        ("unflushed writes before each checkpoint", UNFLUSHED_KEYS.into()),
    ]);
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
        let times = |m: &Measured| {
            [
                ("sync phase", m.sync.clone()),
                ("async phase, incl. flush", m.async_phase.clone()),
                ("restore, same parallelism", m.restore.clone()),
                ("rescale 2 -> 3, slowest subtask", m.rescale.clone()),
            ]
        };
        for (i, ((metric, a), (_, b))) in times(&small).into_iter().zip(times(&large)).enumerate() {
            if i == 2 {
                row(
                    "bytes written by checkpoints (all rounds, manifests only)",
                    small.checkpoint_bytes as f64,
                    large.checkpoint_bytes as f64,
                    "B",
                );
            }
            row(&format!("{metric} (median)"), median(&a), median(&b), "ms");
        }
        for (size, m, k) in [("small", &small, keys), ("large", &large, keys * scale)] {
            let labelled = |measurement: Measurement| {
                measurement
                    .label("place", *name)
                    .label("size", size)
                    .label("keys", k)
                    .label("state_mb", m.state_mb)
            };
            for (metric, rounds) in times(m) {
                labelled(Measurement::new(metric, "ms", false).rounds(&rounds)).record();
            }
            labelled(Measurement::new("bytes written by checkpoints, all rounds", "B", false))
                .value(m.checkpoint_bytes as f64)
                .record();
        }
    }
}

/// Starts a JVM on `classpath` and a one-datanode MiniDFSCluster in it (the test class
/// `org.forstrs.fs.HdfsCluster`, as the HDFS ITs use), and returns them with the cluster's root
/// URI for the benchmark's databases.
fn start_hdfs(classpath: &str, dir: &std::path::Path) -> (JavaVM, GlobalRef, String) {
    let vm = jvm::start(classpath);
    let (cluster, root) = {
        let mut env = vm.get_env().unwrap();
        let dir = env.new_string(dir.to_str().unwrap()).unwrap();
        let more = env.new_object_array(0, "java/lang/String", JObject::null()).unwrap();
        let path = env
            .call_static_method(
                "java/nio/file/Paths",
                "get",
                "(Ljava/lang/String;[Ljava/lang/String;)Ljava/nio/file/Path;",
                &[JValue::Object(&dir), JValue::Object(&more)],
            )
            .and_then(|p| p.l())
            .unwrap();
        let cluster = env
            .call_static_method(
                "org/forstrs/fs/HdfsCluster",
                "start",
                "(Ljava/nio/file/Path;I)Lorg/forstrs/fs/HdfsCluster;",
                &[JValue::Object(&path), JValue::Int(1)],
            )
            .and_then(|c| c.l())
            .unwrap_or_else(|e| {
                let _ = env.exception_describe();
                panic!("cannot start a MiniDFSCluster: {e}")
            });
        let bench = env.new_string("/checkpoint-bench").unwrap();
        let uri = env
            .call_method(
                &cluster,
                "uri",
                "(Ljava/lang/String;)Ljava/lang/String;",
                &[JValue::Object(&bench)],
            )
            .and_then(|u| u.l())
            .unwrap();
        let uri: String = env.get_string(&JString::from(uri)).unwrap().into();
        (env.new_global_ref(cluster).unwrap(), uri)
    };
    (vm, cluster, root)
}
