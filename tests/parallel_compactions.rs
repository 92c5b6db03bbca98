//! Several compaction threads at once (`max_background_compactions`): results stay exact under
//! concurrent writers, deletes and range deletes, and two compactions do run at the same time.
mod support;

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use forst::Result;
use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::storage::{FaultStorage, FileInfo, FileWriter, OpKind, Storage, StorageRef, WriteMode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Tiny memtables and files, low level targets: many flushes and compactions of few keys.
fn tiny_options(compaction_threads: usize) -> DbOptions {
    DbOptions {
        memtable_bytes: 8 << 10,
        target_file_bytes: 4 << 10,
        l0_compaction_trigger: 2,
        l0_stop_trigger: 8,
        l1_target_bytes: 16 << 10,
        level_size_multiplier: 4,
        block_cache_bytes: 1 << 20,
        max_background_compactions: compaction_threads,
        ..DbOptions::default()
    }
}

fn scan(db: &Db, cf: &ColumnFamily, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter_prefix(cf, prefix).unwrap();
    it.seek_to_first().unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.advance().unwrap();
    }
    out
}

fn with_prefix(model: &Model, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn check_all(db: &Db, cf: &ColumnFamily, model: &Model, when: &str) {
    assert_eq!(scan(db, cf, b""), with_prefix(model, b""), "full scan {when}");
    let keys: Vec<&[u8]> = model.keys().map(|k| k.as_slice()).collect();
    let got = db.multi_get(&keys.iter().map(|k| (cf, *k)).collect::<Vec<_>>()).unwrap();
    for (key, value) in keys.iter().zip(got) {
        assert_eq!(value.as_deref(), model.get(*key).map(|v| v.as_slice()), "get {when}");
    }
}

/// One writer: its own keys (`w<i>-k<n>`), so its model is exact while others write. It checks
/// gets and scans of its keys as it goes, and bumps `w<i>-ctr` for the readers.
fn writer(db: &Db, cf: &ColumnFamily, id: usize, ops: usize) -> Model {
    let mut rng = StdRng::seed_from_u64(0x5eed + id as u64);
    let mut model = Model::new();
    let prefix = format!("w{id}-k");
    let key = |n: u32| format!("{prefix}{n:05}").into_bytes();
    for step in 0..ops {
        let k = key(rng.random_range(0..1500));
        match rng.random_range(0..100) {
            0..55 => {
                let v = format!("{step}-{}", "v".repeat(rng.random_range(10..60))).into_bytes();
                db.put(cf, &k, &v).unwrap();
                model.insert(k, v);
            }
            55..70 => {
                db.delete(cf, &k).unwrap();
                model.remove(&k);
            }
            70..75 => {
                let n: u32 = rng.random_range(0..1500);
                let (start, end) = (key(n), key(n + rng.random_range(1..40)));
                db.delete_range(cf, &start, &end).unwrap();
                model.retain(|key, _| *key < start || *key >= end);
            }
            75..85 => {
                let mut batch = WriteBatch::new();
                for i in 0..rng.random_range(1..8) {
                    let (k, v) =
                        (key(rng.random_range(0..1500)), format!("b{step}-{i}").into_bytes());
                    batch.put(cf, &k, &v);
                    model.insert(k, v);
                }
                let doomed = key(rng.random_range(0..1500));
                batch.delete(cf, &doomed);
                model.remove(&doomed);
                db.write(&batch).unwrap();
            }
            _ => {
                let got = db.get(cf, &k).unwrap();
                assert_eq!(
                    got.as_deref(),
                    model.get(&k).map(|v| v.as_slice()),
                    "writer {id} step {step}"
                );
            }
        }
        if step % 10 == 0 {
            db.put(cf, format!("w{id}-ctr").as_bytes(), format!("{step:08}").as_bytes()).unwrap();
        }
        if step % 1000 == 999 {
            let prefix = prefix.as_bytes();
            assert_eq!(
                scan(db, cf, prefix),
                with_prefix(&model, prefix),
                "writer {id} step {step}"
            );
        }
    }
    let last = (ops - 1) / 10 * 10;
    model.insert(format!("w{id}-ctr").into_bytes(), format!("{last:08}").into_bytes());
    model
}

#[test]
fn four_compaction_threads_keep_results_exact_under_concurrent_writes() {
    const WRITERS: usize = 4;
    let storage = support::fresh_memory("parallel-compactions");
    let db = Db::open_with_storage(storage.clone(), tiny_options(4)).unwrap();
    let cf = db.create_cf("state").unwrap();
    let done = AtomicBool::new(false);
    let model = std::thread::scope(|s| {
        // Readers: a writer's counter never goes back, whatever compactions move meanwhile.
        for _ in 0..2 {
            s.spawn(|| {
                let mut seen = vec![Vec::new(); WRITERS];
                while !done.load(Ordering::Acquire) {
                    for (id, last) in seen.iter_mut().enumerate() {
                        let key = format!("w{id}-ctr");
                        if let Some(v) = db.get(&cf, key.as_bytes()).unwrap() {
                            assert!(v.as_ref() >= last.as_slice(), "{key} went back");
                            *last = v.to_vec();
                        }
                    }
                }
            });
        }
        let writers: Vec<_> = (0..WRITERS)
            .map(|id| {
                s.spawn({
                    let (db, cf) = (&db, &cf);
                    let stop_readers = StopOnPanic(&done);
                    move || {
                        let _stop_readers = stop_readers;
                        writer(db, cf, id, 12_000)
                    }
                })
            })
            .collect();
        let mut model = Model::new();
        for w in writers {
            model.extend(w.join().unwrap());
        }
        done.store(true, Ordering::Release);
        model
    });
    check_all(&db, &cf, &model, "after the writers");
    db.flush().unwrap();
    db.compact_until_settled().unwrap();
    check_all(&db, &cf, &model, "settled");
    let stats = db.stats();
    println!(
        "compactions {}, most at once {}, files per level {:?}",
        stats.compactions, stats.max_running_compactions, stats.files_per_level
    );
    assert!(stats.compactions > 0);
    assert_eq!(stats.running_compactions, 0);
    db.compact_all().unwrap();
    check_all(&db, &cf, &model, "compacted all");
    db.close().unwrap();
    drop(db);
    let db = Db::open_with_storage(storage, tiny_options(1)).unwrap();
    let cf = db.cf("state").unwrap();
    check_all(&db, &cf, &model, "reopened");
}

/// Sets its flag when dropped by a panicking thread: a failed writer stops the readers, and the
/// scope then reports the panic instead of waiting for them forever.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

/// Lets SST writes of compaction threads on until `threads` different compaction threads are
/// writing at once: each of them runs one compaction, so that many ran at the same time. `limit`
/// only guards against a hang (with one compaction thread the second never comes): it is far past
/// any wait of a loaded machine, and then the gate lets them go and records it, failing the test.
#[derive(Debug)]
struct Gate {
    threads: usize,
    limit: Duration,
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    arrived: HashSet<String>,
    open: bool,
    timed_out: bool,
}

impl Gate {
    fn pass(&self, path: &str) {
        let name = std::thread::current().name().unwrap_or_default().to_string();
        if !path.ends_with(".sst") || !name.starts_with("forst-compact") {
            return;
        }
        let mut state = self.state.lock().unwrap();
        state.arrived.insert(name);
        if state.arrived.len() >= self.threads {
            state.open = true;
            self.changed.notify_all();
        }
        let (mut state, waited) =
            self.changed.wait_timeout_while(state, self.limit, |s| !s.open).unwrap();
        if waited.timed_out() {
            state.timed_out = true;
            state.open = true;
            self.changed.notify_all();
        }
    }

    /// Waits until the gate opened (or timed out).
    fn wait_open(&self) {
        let state = self.state.lock().unwrap();
        let (mut state, waited) =
            self.changed.wait_timeout_while(state, self.limit, |s| !s.open).unwrap();
        if waited.timed_out() {
            state.timed_out = true;
        }
    }
}

#[derive(Debug)]
struct GatedStorage {
    inner: StorageRef,
    gate: Arc<Gate>,
}

#[async_trait]
impl Storage for GatedStorage {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn create(&self, path: &str) -> Result<Box<dyn FileWriter>> {
        self.gate.pass(path);
        self.inner.create(path).await
    }
    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> Result<()> {
        self.gate.pass(path);
        self.inner.put(path, data, mode).await
    }
    async fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.read_range(path, range).await
    }
    async fn read(&self, path: &str) -> Result<Bytes> {
        self.inner.read(path).await
    }
    async fn size(&self, path: &str) -> Result<u64> {
        self.inner.size(path).await
    }
    async fn list(&self, dir: &str) -> Result<Vec<FileInfo>> {
        self.inner.list(dir).await
    }
    async fn delete(&self, path: &str) -> Result<()> {
        self.inner.delete(path).await
    }
    async fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to).await
    }
    async fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.inner.copy(from, to).await
    }
}

#[test]
fn two_compactions_run_at_the_same_time() {
    let storage = support::fresh_memory("two-at-once");
    let options = DbOptions { auto_compaction: false, ..tiny_options(1) };
    let db = Db::open_with_storage(storage.clone(), options).unwrap();
    let cf = db.create_cf("state").unwrap();
    let mut model = Model::new();
    // Two rounds over all keys, settled each time: files over the whole range at several levels.
    for round in 0..2 {
        for n in 0..4000u32 {
            let (k, v) =
                (format!("k{n:05}").into_bytes(), format!("{round}-{n}-{}", "x".repeat(40)));
            db.put(&cf, &k, v.as_bytes()).unwrap();
            model.insert(k, v.into_bytes());
        }
        db.flush().unwrap();
        db.compact_until_settled().unwrap();
    }
    let levels = db.stats().files_per_level;
    db.close().unwrap();
    drop(db);

    // Reopened with level targets 16 times smaller, every sorted level is over its target at once.
    let gate = Arc::new(Gate {
        threads: 2,
        limit: Duration::from_secs(600),
        state: Mutex::default(),
        changed: Condvar::new(),
    });
    let gated: StorageRef = Arc::new(GatedStorage { inner: storage, gate: gate.clone() });
    let options = DbOptions { l1_target_bytes: 1 << 10, ..tiny_options(2) };
    let db = Db::open_with_storage(gated, options).unwrap();
    let cf = db.cf("state").unwrap();
    // The background threads alone: a compaction run here would be none of theirs.
    gate.wait_open();
    db.compact_until_settled().unwrap();
    let state = gate.state.lock().unwrap();
    assert!(
        !state.timed_out,
        "a second compaction never started beside the first ({levels:?} files per level)"
    );
    assert_eq!(state.arrived.len(), 2, "{:?}", state.arrived);
    drop(state);
    let stats = db.stats();
    assert!(stats.max_running_compactions >= 2, "{}", stats.max_running_compactions);
    check_all(&db, &cf, &model, "after parallel compactions");
}

#[test]
fn a_failed_compaction_lets_its_files_go_and_a_retry_finishes_the_work() {
    let faults = Arc::new(FaultStorage::new(support::fresh_memory("failed-compaction")));
    let storage: StorageRef = faults.clone();
    let options = DbOptions { auto_compaction: false, ..tiny_options(2) };
    let db = Db::open_with_storage(storage, options).unwrap();
    let cf = db.create_cf("state").unwrap();
    let mut model = Model::new();
    for n in 0..3000u32 {
        let (k, v) = (format!("k{n:05}").into_bytes(), format!("{n}-{}", "y".repeat(40)));
        db.put(&cf, &k, v.as_bytes()).unwrap();
        model.insert(k, v.into_bytes());
    }
    db.flush().unwrap();
    // The second SST put of the first compaction fails (a manifest put would too).
    faults.fail_nth(OpKind::Put, 2);
    assert!(db.compact_until_settled().is_err());
    let stats = db.stats();
    assert_eq!(stats.running_compactions, 0, "the failed job let its files go");
    assert!(stats.compaction_pending);
    db.compact_until_settled().unwrap();
    assert!(!db.stats().compaction_pending, "every file was free to compact again");
    check_all(&db, &cf, &model, "after the retry");
}

#[test]
fn background_compactions_retry_transient_failures_in_parallel() {
    let faults = Arc::new(FaultStorage::new(support::fresh_memory("retried-compactions")));
    let storage: StorageRef = faults.clone();
    let options = DbOptions {
        background_retries: 1000,
        retry_backoff: Duration::from_millis(1),
        max_retry_backoff: Duration::from_millis(5),
        ..tiny_options(4)
    };
    let db = Db::open_with_storage(storage, options).unwrap();
    let cf = db.create_cf("state").unwrap();
    // One write in ten fails (transient): flushes and compactions retry.
    faults.fail_fraction(OpKind::Put, 0.1, 7);
    let model = writer(&db, &cf, 0, 10_000);
    faults.clear();
    db.flush().unwrap();
    db.compact_until_settled().unwrap();
    assert!(faults.injected() > 0);
    let stats = db.stats();
    assert!(!stats.failed && !stats.compaction_pending && stats.compactions > 0);
    check_all(&db, &cf, &model, "after retried compactions");
}
