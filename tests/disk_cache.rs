//! The local disk cache under a database on real files: bounded, checksummed, surviving the loss
//! of its directory, warm after a reopen. Remote calls are counted by `LatencyStorage` (zero
//! latency) and by a wrapper counting reads of SSTs; nothing depends on timing.

use std::fs;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use forst::lsm::{Db, DbOptions};
use forst::storage::{
    DiskCache, DiskCacheOptions, DiskCachedStorage, FileInfo, FileWriter, Latency, LatencyStorage,
    LocalStorage, Storage, StorageRef, WriteMode, block_on,
};

mod support;
use forst::test_support::incompressible;

/// Counts reads of SST files that reach the storage it wraps.
#[derive(Debug)]
struct SstReads {
    inner: StorageRef,
    reads: AtomicU64,
}

impl SstReads {
    fn new(inner: StorageRef) -> Arc<Self> {
        Arc::new(Self { inner, reads: AtomicU64::new(0) })
    }

    fn count(&self, path: &str) {
        if path.ends_with(".sst") {
            self.reads.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl Storage for SstReads {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn create(&self, path: &str) -> forst::Result<Box<dyn FileWriter>> {
        self.inner.create(path).await
    }
    async fn put(&self, path: &str, data: Bytes, mode: WriteMode) -> forst::Result<()> {
        self.inner.put(path, data, mode).await
    }
    async fn read_range(&self, path: &str, range: Range<u64>) -> forst::Result<Bytes> {
        self.count(path);
        self.inner.read_range(path, range).await
    }
    async fn read(&self, path: &str) -> forst::Result<Bytes> {
        self.count(path);
        self.inner.read(path).await
    }
    async fn size(&self, path: &str) -> forst::Result<u64> {
        self.inner.size(path).await
    }
    async fn list(&self, dir: &str) -> forst::Result<Vec<FileInfo>> {
        self.inner.list(dir).await
    }
    async fn delete(&self, path: &str) -> forst::Result<()> {
        self.inner.delete(path).await
    }
    async fn rename(&self, from: &str, to: &str) -> forst::Result<()> {
        self.inner.rename(from, to).await
    }
    async fn copy(&self, from: &str, to: &str) -> forst::Result<()> {
        self.inner.copy(from, to).await
    }
}

/// No block cache in memory: every block read reaches the storage (and so the disk cache).
fn options() -> DbOptions {
    DbOptions {
        memtable_bytes: 64 << 10,
        target_file_bytes: 64 << 10,
        l1_target_bytes: 256 << 10,
        block_cache_bytes: 0,
        ..DbOptions::default()
    }
}

fn cache_options(dir: &Path, size_limit: u64) -> DiskCacheOptions {
    DiskCacheOptions { dir: dir.to_path_buf(), size_limit, reserve: 0 }
}

fn key(i: u64) -> Vec<u8> {
    format!("key-{:08}", i.wrapping_mul(2_654_435_761) % 1_000_003).into_bytes()
}

/// 100 bytes that do not compress, so the state on disk is as large as written.
fn value(i: u64, round: u64) -> Vec<u8> {
    incompressible(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round.wrapping_add(1), 100)
}

/// Bytes of the regular files directly in `dir` (0 if it is gone).
fn dir_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|items| items.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

fn fill(db: &Db, keys: u64, round: u64) {
    let cf = db.create_cf("state").unwrap();
    for i in 0..keys {
        db.put(&cf, &key(i), &value(i, round)).unwrap();
    }
    db.flush().unwrap();
}

fn check(db: &Db, keys: impl Iterator<Item = u64>, round: u64) {
    let cf = db.create_cf("state").unwrap();
    for i in keys {
        let got = db.get(&cf, &key(i)).unwrap();
        assert_eq!(got.as_deref(), Some(&value(i, round)[..]), "key {i}");
    }
}

#[test]
fn stays_within_its_limit_under_a_state_ten_times_larger() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let limit = 256 << 10;
    let remote: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    let cache = Arc::new(DiskCache::new(cache_options(cache_dir.path(), limit)).unwrap());
    let cached = Arc::new(DiskCachedStorage::new(remote.clone(), cache.clone()));
    let db = Db::open_with_storage(cached.clone(), options()).unwrap();

    // About 4 MB of values, written in rounds so compaction rewrites them as well.
    let keys = 40_000;
    for round in 0..2 {
        fill(&db, keys, round);
    }
    db.compact_all().unwrap();
    // Read everything twice: misses download files again and again, each evicting others.
    for _ in 0..2 {
        check(&db, (0..keys).step_by(7), 1);
    }
    block_on(cached.wait_for_fills());

    let state: u64 = block_on(remote.list("")).unwrap().iter().map(|f| f.size).sum();
    let stats = cache.stats();
    assert!(state > 10 * limit, "state {state} is not ten times the limit {limit}");
    assert!(stats.used_bytes <= limit, "{stats:?}");
    assert!(dir_bytes(cache_dir.path()) <= limit, "{} > {limit}", dir_bytes(cache_dir.path()));
    assert!(stats.evictions > 0 && stats.inserts > stats.evictions / 2, "{stats:?}");
    assert!(stats.hits > 0, "{stats:?}");
    db.close().unwrap();
}

#[test]
fn a_corrupt_entry_is_read_from_the_remote_file_and_replaced() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let local: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    let remote = Arc::new(LatencyStorage::new(local, Latency::default()));
    let cache = Arc::new(DiskCache::new(cache_options(cache_dir.path(), 64 << 20)).unwrap());
    let cached = DiskCachedStorage::new(remote.clone(), cache.clone());
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    block_on(cached.put("db/1.sst", Bytes::from(data.clone()), WriteMode::CreateNew)).unwrap();
    let entry = only_entry(cache_dir.path());

    // Flip one byte of the cached copy.
    let mut bytes = fs::read(&entry).unwrap();
    bytes[50_000] ^= 0xff;
    fs::write(&entry, &bytes).unwrap();

    remote.reset_stats();
    let got = block_on(cached.read_range("db/1.sst", 49_000..51_000)).unwrap();
    assert_eq!(got, data[49_000..51_000]);
    let stats = cache.stats();
    assert_eq!((stats.corrupt, stats.hits), (1, 1), "{stats:?}");
    // The read went remote, and the entry is downloaded again.
    block_on(cached.wait_for_fills());
    assert_eq!(remote.stats().reads, 2, "the range, then the whole file");
    assert_eq!((cache.stats().entries, cache.stats().downloads), (1, 1));
    assert_eq!(fs::read(only_entry(cache_dir.path())).unwrap()[..data.len()], data[..]);

    remote.reset_stats();
    assert_eq!(block_on(cached.read_range("db/1.sst", 49_000..51_000)).unwrap(), got);
    assert_eq!(block_on(cached.read("db/1.sst")).unwrap(), data);
    assert_eq!(remote.stats().reads, 0, "served from the replaced entry");
}

/// An entry whose file is deleted under the cache: read remotely and forgotten if the cache had
/// not opened it yet; served from its open file if it had (an open file outlives its name).
#[test]
fn an_entry_file_deleted_under_the_cache() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let local: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    let remote = Arc::new(LatencyStorage::new(local, Latency::default()));
    let cache = Arc::new(DiskCache::new(cache_options(cache_dir.path(), 64 << 20)).unwrap());
    let cached = DiskCachedStorage::new(remote.clone(), cache.clone());
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    for name in ["db/1.sst", "db/2.sst"] {
        block_on(cached.put(name, Bytes::from(data.clone()), WriteMode::CreateNew)).unwrap();
    }
    let read = |name| block_on(cached.read_range(name, 10..20_000)).unwrap();
    assert_eq!(read("db/1.sst"), data[10..20_000], "opens the entry of 1.sst");

    fs::remove_dir_all(cache_dir.path()).unwrap();
    remote.reset_stats();
    assert_eq!(read("db/1.sst"), data[10..20_000]);
    assert_eq!(remote.stats().reads, 0, "1.sst: served by its open entry");
    assert_eq!(read("db/2.sst"), data[10..20_000]);
    assert_eq!(remote.stats().reads, 1, "2.sst: read remotely");
    let stats = cache.stats();
    assert_eq!((stats.lost, stats.entries), (1, 1), "{stats:?}");
}

#[test]
fn a_corrupt_cache_under_a_database_leaves_reads_exact() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let remote: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    let cache = Arc::new(DiskCache::new(cache_options(cache_dir.path(), 64 << 20)).unwrap());
    let db = Db::open_with_storage(
        Arc::new(DiskCachedStorage::new(remote, cache.clone())),
        DbOptions { auto_compaction: false, ..options() },
    )
    .unwrap();
    fill(&db, 5_000, 0);
    // Damage a byte every 4 KiB of every entry's data.
    for item in fs::read_dir(cache_dir.path()).unwrap().flatten() {
        let mut bytes = fs::read(item.path()).unwrap();
        let data_len = bytes.len() * 9 / 10;
        for at in (100..data_len).step_by(4096) {
            bytes[at] ^= 0x55;
        }
        fs::write(item.path(), bytes).unwrap();
    }
    check(&db, 0..5_000, 0);
    assert!(cache.stats().corrupt > 0, "{:?}", cache.stats());
    db.close().unwrap();
}

#[test]
fn deleting_the_cache_dir_under_a_running_database_leaves_reads_exact() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_root = tempfile::tempdir().unwrap();
    let cache_dir = cache_root.path().join("cache");
    let remote: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    let cache = Arc::new(DiskCache::new(cache_options(&cache_dir, 64 << 20)).unwrap());
    let cached = Arc::new(DiskCachedStorage::new(remote, cache.clone()));
    let db = Db::open_with_storage(cached.clone(), options()).unwrap();
    fill(&db, 10_000, 0);
    assert!(cache.stats().entries > 0);

    // Background flushes and compactions may add entries while the tree is removed: retry (a
    // bounded count) until one removal sees no newcomer.
    block_on(cached.wait_for_fills());
    let removed = (0..100).any(|_| match fs::remove_dir_all(&cache_dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => false,
        Err(e) => panic!("cannot remove the cache directory: {e}"),
    });
    assert!(removed, "the cache directory kept filling while it was removed");
    // Entries already read stay readable through their open files; the others are lost and
    // read remotely (see `an_entry_file_deleted_under_the_cache`).
    check(&db, 0..10_000, 0);

    // Writing and reading go on; new files are cached in the recreated directory.
    fill(&db, 10_000, 1);
    db.compact_all().unwrap();
    check(&db, 0..10_000, 1);
    block_on(cached.wait_for_fills());
    assert!(dir_bytes(&cache_dir) > 0);
    let hits = cache.stats().hits;
    check(&db, 0..100, 1);
    assert!(cache.stats().hits > hits);
    db.close().unwrap();
}

#[test]
fn a_reopened_database_finds_its_cache_warm() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let keys = 20_000;
    let open = || {
        let local: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
        let counted = SstReads::new(local);
        let cache = Arc::new(DiskCache::new(cache_options(cache_dir.path(), 64 << 20)).unwrap());
        let cached = Arc::new(DiskCachedStorage::new(counted.clone(), cache.clone()));
        let db = Db::open_with_storage(cached, options()).unwrap();
        (db, counted, cache)
    };
    {
        let (db, _, _) = open();
        fill(&db, keys, 0);
        db.compact_all().unwrap();
        db.close().unwrap();
    }
    let live_files = block_on(LocalStorage::new(remote_dir.path(), false).unwrap().list(""))
        .unwrap()
        .iter()
        .filter(|f| f.path.ends_with(".sst"))
        .count();
    assert!(live_files > 1);

    // A new cache instance over the same directory: its index comes from the entries on disk.
    let (db, counted, cache) = open();
    assert!(cache.stats().entries as usize >= live_files, "{:?}", cache.stats());
    check(&db, 0..keys, 0);
    assert_eq!(counted.reads(), 0, "every SST read served by the rebuilt cache");
    assert!(cache.stats().hits > 0 && cache.stats().misses == 0, "{:?}", cache.stats());
    db.close().unwrap();

    // Without the cache the same reads go remote: the counter does count them.
    fs::remove_dir_all(cache_dir.path()).unwrap();
    let (db, counted, _) = open();
    check(&db, 0..keys, 0);
    assert!(counted.reads() as usize >= live_files);
    db.close().unwrap();
}

#[test]
fn entries_go_with_their_remote_files() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let remote: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    let cache = Arc::new(DiskCache::new(cache_options(cache_dir.path(), 64 << 20)).unwrap());
    let cached = DiskCachedStorage::new(remote, cache.clone());
    block_on(async {
        for name in ["a.sst", "b.sst", "c.sst"] {
            cached.put(name, Bytes::from_static(b"data"), WriteMode::CreateNew).await.unwrap();
        }
        let mut writer = cached.create("d.sst").await.unwrap();
        writer.write(Bytes::from_static(b"streamed")).await.unwrap();
        writer.finish().await.unwrap();
        cached.put("MANIFEST-1", Bytes::from_static(b"m"), WriteMode::CreateNew).await.unwrap();
    });
    assert_eq!(cache.stats().entries, 4, "SSTs only, written by put and by create");
    block_on(cached.delete("a.sst")).unwrap();
    block_on(cached.rename("b.sst", "e.sst")).unwrap();
    assert_eq!(cache.stats().entries, 2);
    assert_eq!(block_on(cached.read("d.sst")).unwrap(), "streamed");
    block_on(cached.delete_all()).unwrap();
    assert_eq!((cache.stats().entries, cache.stats().used_bytes), (0, 0));
    assert_eq!(dir_bytes(cache_dir.path()), 0);
}

#[test]
fn the_reserve_keeps_the_disk_free() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let remote: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    // A reserve larger than any disk here: nothing fits.
    let options =
        DiskCacheOptions { dir: cache_dir.path().into(), size_limit: 0, reserve: u64::MAX };
    let cache = Arc::new(DiskCache::new(options).unwrap());
    let cached = DiskCachedStorage::new(remote, cache.clone());
    block_on(cached.put("a.sst", Bytes::from_static(b"data"), WriteMode::CreateNew)).unwrap();
    assert_eq!(block_on(cached.read("a.sst")).unwrap(), "data");
    assert_eq!((cache.stats().entries, cache.stats().rejected), (0, 1));
}

fn only_entry(dir: &Path) -> std::path::PathBuf {
    let entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries.into_iter().next().unwrap()
}

/// A file handed over to a checkpoint stays on the remote store when compaction replaces it (the
/// checkpoint's owner deletes it), but the database never reads it again: its cache entry goes,
/// so the cache does not fill up with files nobody reads.
#[test]
fn a_handed_over_file_leaves_the_cache_once_compaction_replaces_it() {
    let remote_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let local: StorageRef = Arc::new(LocalStorage::new(remote_dir.path(), false).unwrap());
    let cache = Arc::new(DiskCache::new(cache_options(cache_dir.path(), 1 << 30)).unwrap());
    let cached = Arc::new(DiskCachedStorage::new(local, cache.clone()));
    let db = Db::open_with_storage(cached, options()).unwrap();
    fill(&db, 5_000, 0);
    let mut checkpoint = db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let handed_over: Vec<String> =
        checkpoint.files().unwrap().into_iter().map(|(n, _)| n).collect();
    checkpoint.hand_over(&handed_over, 1).unwrap();
    drop(checkpoint);
    assert!(cache.stats().entries as usize >= handed_over.len(), "{:?}", cache.stats());

    fill(&db, 5_000, 1);
    db.compact_all().unwrap();
    db.wait_for_file_deletions();
    for name in &handed_over {
        assert!(remote_dir.path().join(name).exists(), "{name}: the checkpoint's, never deleted");
    }
    let live = {
        let mut checkpoint = db.checkpoint().unwrap();
        checkpoint.wait_durable().unwrap();
        checkpoint.files().unwrap().len()
    };
    assert!(live > 0);
    assert_eq!(cache.stats().entries as usize, live, "only the live files stay cached");
    check(&db, 0..5_000, 1);
    db.close().unwrap();
}
