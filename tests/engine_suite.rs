//! The engine's behaviour suite, run over every storage: a local directory, the in-memory store,
//! the latency-injected store and a real S3-compatible server on 127.0.0.1.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use forst::lsm::{Db, DbOptions, WriteBatch};
use forst::storage::{Latency, LatencyStorage, StorageOptions, StorageRef, block_on, open_storage};

fn small_options() -> DbOptions {
    DbOptions {
        memtable_bytes: 64 << 10,
        target_file_bytes: 32 << 10,
        l0_compaction_trigger: 3,
        l1_target_bytes: 128 << 10,
        level_size_multiplier: 4,
        ..DbOptions::default()
    }
}

fn collect(db: &Db, cf: &forst::lsm::ColumnFamily, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter_prefix(cf, prefix).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.advance().unwrap();
    }
    out
}

fn sst_files(storage: &StorageRef) -> BTreeMap<String, u64> {
    block_on(storage.list(""))
        .unwrap()
        .into_iter()
        .filter(|f| f.path.ends_with(".sst"))
        .map(|f| (f.path, f.size))
        .collect()
}

/// Writes, reads back, flushes, compacts, reopens; everything a Flink state backend relies on.
fn behaviour_suite(storage: StorageRef, keys: usize) {
    let db = Db::open_with_storage(storage.clone(), small_options()).unwrap();
    let values = db.create_cf("values").unwrap();
    let lists = db.create_cf("lists").unwrap();
    assert_eq!(db.create_cf("values").unwrap(), values, "create_cf is idempotent by name");

    // Point writes and reads across column families; the same key in two families is two keys.
    for i in 0..keys {
        let key = format!("key{i:05}");
        db.put(&values, key.as_bytes(), format!("v{i}").as_bytes()).unwrap();
        db.merge(&lists, key.as_bytes(), b"a").unwrap();
    }
    for i in (0..keys).step_by(3) {
        db.merge(&lists, format!("key{i:05}").as_bytes(), b"b").unwrap();
    }
    db.delete(&values, b"key00001").unwrap();
    assert_eq!(db.get(&values, b"key00000").unwrap().unwrap(), "v0");
    assert_eq!(db.get(&values, b"key00001").unwrap(), None);
    assert_eq!(db.get(&lists, b"key00000").unwrap().unwrap(), "a,b");
    assert_eq!(db.get(&lists, b"key00001").unwrap().unwrap(), "a");

    // An atomic batch across families.
    let mut batch = WriteBatch::new();
    batch.put(&values, b"batch-a", b"1");
    batch.merge(&lists, b"batch-a", b"x");
    batch.delete(&values, b"key00002");
    db.write(&batch).unwrap();

    db.flush().unwrap();
    assert!(!sst_files(&storage).is_empty(), "flush writes SST files");

    // multi_get over both families, served from files now.
    let probe: Vec<Vec<u8>> =
        (0..keys).step_by(7).map(|i| format!("key{i:05}").into_bytes()).collect();
    let mut request: Vec<(&forst::lsm::ColumnFamily, &[u8])> =
        probe.iter().map(|k| (&values, k.as_slice())).collect();
    request.extend(probe.iter().map(|k| (&lists, k.as_slice())));
    request.push((&values, b"missing"));
    let got = db.multi_get(&request).unwrap();
    for (i, k) in probe.iter().enumerate() {
        let n: usize = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        let expected = if n == 1 || n == 2 { None } else { Some(format!("v{n}")) };
        assert_eq!(got[i].as_ref().map(|b| String::from_utf8(b.to_vec()).unwrap()), expected);
        let list = if n.is_multiple_of(3) { "a,b" } else { "a" };
        assert_eq!(got[probe.len() + i].as_deref(), Some(list.as_bytes()));
    }
    assert_eq!(got.last().unwrap(), &None);

    // Iteration with a prefix and with seek.
    let under_key0000 = collect(&db, &values, b"key0000");
    assert_eq!(under_key0000.len(), 8, "key00000..key00009 less two deleted");
    let mut it = db.iter(&values, Some(b"key00005"), Some(b"key00008")).unwrap();
    let mut seen = Vec::new();
    while it.valid() {
        seen.push(String::from_utf8(it.key().to_vec()).unwrap());
        it.advance().unwrap();
    }
    assert_eq!(seen, ["key00005", "key00006", "key00007"]);
    let mut it = db.iter(&values, None, None).unwrap();
    it.seek(b"key00003").unwrap();
    assert_eq!(it.key(), b"key00003");

    // Range deletion, then a write inside the deleted range is visible again.
    db.delete_range(&values, b"key00010", b"key00020").unwrap();
    assert_eq!(db.get(&values, b"key00015").unwrap(), None);
    db.put(&values, b"key00015", b"back").unwrap();
    assert_eq!(db.get(&values, b"key00015").unwrap().unwrap(), "back");
    assert_eq!(collect(&db, &values, b"key0001").len(), 1);

    // Compaction keeps the contents and reduces the files.
    db.flush().unwrap();
    let before = collect(&db, &values, b"");
    db.compact_all().unwrap();
    assert_eq!(collect(&db, &values, b""), before);
    let stats = db.stats();
    assert_eq!(
        stats.files_per_level[..6].iter().sum::<usize>(),
        0,
        "compact_all leaves only the last level: {stats:?}"
    );

    // Unflushed writes are lost on reopen (no WAL, by design); flushed ones survive.
    db.put(&values, b"unflushed", b"gone").unwrap();
    let old_files = sst_files(&storage);
    db.close().unwrap();
    assert!(db.get(&values, b"key00000").is_err(), "use after close is an error");
    drop(db);
    let db = Db::open_with_storage(storage.clone(), small_options()).unwrap();
    let values = db.cf("values").unwrap();
    let lists = db.cf("lists").unwrap();
    assert_eq!(db.get(&values, b"unflushed").unwrap(), None);
    assert_eq!(collect(&db, &values, b""), before);
    assert_eq!(db.get(&lists, b"batch-a").unwrap().unwrap(), "x");

    // A reopened instance writes new file names and never touches the old files.
    db.put(&values, b"after-reopen", b"1").unwrap();
    db.flush().unwrap();
    let new_files = sst_files(&storage);
    for (path, size) in &old_files {
        if let Some(now) = new_files.get(path) {
            assert_eq!(now, size, "{path} was rewritten");
        }
    }
    assert!(new_files.keys().any(|p| !old_files.contains_key(p)));

    // Dropping a family removes its data for good.
    db.drop_cf(&lists).unwrap();
    assert!(db.cf("lists").is_none());
    let lists2 = db.create_cf("lists").unwrap();
    assert_eq!(lists2.id(), lists.id(), "ids derive from names");
    assert_eq!(db.get(&lists2, b"key00000").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn suite_on_local_directory() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    behaviour_suite(open_storage(&url, &StorageOptions::default()).unwrap(), 3000);
}

#[test]
fn suite_on_memory_store() {
    behaviour_suite(
        open_storage("memory://engine-suite", &StorageOptions::default()).unwrap(),
        3000,
    );
}

#[test]
fn suite_on_latency_injected_store() {
    let inner = open_storage("memory://engine-suite-latency", &StorageOptions::default()).unwrap();
    let slow: StorageRef =
        Arc::new(LatencyStorage::new(inner, Latency::per_call(Duration::from_micros(1500))));
    behaviour_suite(slow, 1000);
}

#[test]
fn suite_on_s3_compatible_server() {
    behaviour_suite(support::fresh_s3("engine-suite"), 1000);
}

/// A key that always exists is never missed, while one writer overwrites it through tiny
/// memtables (a flush or compaction installs a new version every few writes) and readers get it,
/// multi_get it and scan it. Reads once took the snapshot before the super version, so a flush
/// installed in between left only an entry newer than the snapshot and the key vanished.
#[test]
fn a_key_that_always_exists_is_always_found() {
    let storage = open_storage("memory://always-found", &StorageOptions::default()).unwrap();
    let options = DbOptions { memtable_bytes: 4 << 10, ..small_options() };
    let db = Arc::new(Db::open_with_storage(storage, options).unwrap());
    let cf = db.create_cf("hot").unwrap();
    db.put(&cf, b"key", b"0").unwrap();
    let writes_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (db, cf, done) = (db.clone(), cf.clone(), writes_done.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                // At least 1,000 rounds; then until the writer is done.
                while reads < 1_000 || !done.load(std::sync::atomic::Ordering::Acquire) {
                    assert!(db.get(&cf, b"key").unwrap().is_some(), "get missed the key");
                    let got = db.multi_get(&[(&cf, b"key".as_slice())]).unwrap();
                    assert!(got[0].is_some(), "multi_get missed the key");
                    assert!(db.iter_prefix(&cf, b"key").unwrap().valid(), "scan missed the key");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for i in 0..100_000u32 {
        // Values of 200 bytes: a flush every twenty writes.
        db.put(&cf, b"key", format!("{i:0200}").as_bytes()).unwrap();
    }
    writes_done.store(true, std::sync::atomic::Ordering::Release);
    for reader in readers {
        assert!(reader.join().expect("a reader failed") >= 1_000);
    }
    let files: usize = db.stats().files_per_level.iter().sum();
    assert!(files > 0, "writes went through flushes into files");
}

/// A batch looks its keys up in key order and keeps each file's filter and index partition
/// between neighbours: its answers match single gets (present, updated, deleted and absent keys
/// over two files of several partitions), and it asks the block cache far less often.
#[test]
fn multi_get_of_neighbouring_keys_matches_gets_with_fewer_cache_lookups() {
    let storage = support::fresh_memory("multi-get-neighbours");
    let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
    let db = Db::open_with_storage(storage, options).unwrap();
    let cf = db.create_cf("s").unwrap();
    let key = |i: u32| format!("key{i:07}").into_bytes();
    // Even keys only (odd ones stay absent), then a newer file updating and deleting some.
    let mut batch = WriteBatch::new();
    for i in (0..80_000).step_by(2) {
        batch.put(&cf, &key(i), &[i as u8; 100]);
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();
    let mut batch = WriteBatch::new();
    for i in (0..80_000).step_by(6) {
        batch.put(&cf, &key(i), b"updated");
    }
    for i in (0..80_000).step_by(14) {
        batch.delete(&cf, &key(i));
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();

    let lookups = |db: &Db| db.stats().block_cache_hits + db.stats().block_cache_misses;
    let keys: Vec<Vec<u8>> = (0..80_000).map(key).collect();
    let before = lookups(&db);
    let single: Vec<Option<Vec<u8>>> =
        keys.iter().map(|k| db.get(&cf, k).unwrap().map(|v| v.to_vec())).collect();
    let by_gets = lookups(&db) - before;
    let before = lookups(&db);
    let mut batched = Vec::new();
    for chunk in keys.chunks(1000) {
        let request: Vec<_> = chunk.iter().map(|k| (&cf, k.as_slice())).collect();
        batched.extend(db.multi_get(&request).unwrap().into_iter().map(|v| v.map(|b| b.to_vec())));
    }
    let by_batches = lookups(&db) - before;

    assert_eq!(batched, single);
    assert_eq!(single.iter().filter(|v| v.is_some()).count(), 40_000 - 40_000 / 7 - 1);
    assert_eq!(single[6].as_deref(), Some(&b"updated"[..]));
    assert_eq!(single[14], None);
    assert_eq!(single[2].as_deref(), Some(&[2u8; 100][..]));
    assert!(by_batches * 2 < by_gets, "batched {by_batches} vs single {by_gets} cache lookups");
}
