//! Conformance suite for the storage seam: every backend and wrapper must pass the same checks,
//! so the engine can be tested on memory:// and trusted on s3://.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use forst::storage::{
    DiskCache, DiskCacheOptions, DiskCachedStorage, FaultStorage, Latency, LatencyStorage,
    LocalStorage, MULTIPART_PART_SIZE, OpKind, S3Options, Storage, StorageOptions, StorageRef,
    WriteMode, block_on, delete_tree, open_storage, read_range_exact,
};
use forst::{Error, ErrorKind};

/// Deterministic bytes whose value depends on the offset, so misplaced ranges are caught.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u64).wrapping_mul(2654435761).wrapping_add(seed as u64) as u8 ^ (i >> 13) as u8
        })
        .collect()
}

fn is_not_found<T: std::fmt::Debug>(result: forst::Result<T>) -> bool {
    matches!(result, Err(Error::NotFound(_)))
}

/// The text of the I/O error `result` must be.
fn expect_io<T: std::fmt::Debug>(result: forst::Result<T>, what: &str) -> String {
    expect_kind(result, ErrorKind::Other, what)
}

/// The text of the storage error of `kind` that `result` must be.
fn expect_kind<T: std::fmt::Debug>(
    result: forst::Result<T>,
    kind: ErrorKind,
    what: &str,
) -> String {
    match result {
        Err(e) if e.kind() == kind => e.to_string(),
        other => panic!("{what}: expected an error of kind {kind:?}, got {other:?}"),
    }
}

async fn listing(storage: &dyn Storage, dir: &str) -> BTreeMap<String, u64> {
    storage
        .list(dir)
        .await
        .unwrap_or_else(|e| panic!("list {dir:?}: {e}"))
        .into_iter()
        .map(|f| (f.path, f.size))
        .collect()
}

async fn write_file(storage: &dyn Storage, path: &str, data: &[u8], chunk: usize) -> u64 {
    let mut writer = storage.create(path).await.unwrap();
    for piece in data.chunks(chunk.max(1)) {
        writer.write(Bytes::copy_from_slice(piece)).await.unwrap();
    }
    writer.finish().await.unwrap()
}

/// The whole contract of `Storage`, run against one empty storage root.
fn conformance(storage: StorageRef) {
    let s = storage.as_ref();
    block_on(async {
        small_write_and_read(s).await;
        large_multipart_write(s).await;
        put_modes(s).await;
        ranges(s).await;
        listing_is_relative_and_recursive(s).await;
        delete_is_idempotent(s).await;
        rename_and_copy(s).await;
        unfinished_files_are_invisible(s).await;
        errors_name_the_url(s).await;
    });
}

async fn small_write_and_read(s: &dyn Storage) {
    let mut writer = s.create("small/a.sst").await.unwrap();
    writer.write(Bytes::from_static(b"hello ")).await.unwrap();
    writer.write(Bytes::new()).await.unwrap();
    writer.write(Bytes::from_static(b"world")).await.unwrap();
    assert_eq!(writer.finish().await.unwrap(), 11);
    assert_eq!(s.read("small/a.sst").await.unwrap(), "hello world");
    assert_eq!(s.size("small/a.sst").await.unwrap(), 11);

    // An empty file is a file.
    assert_eq!(s.create("small/empty").await.unwrap().finish().await.unwrap(), 0);
    assert_eq!(s.size("small/empty").await.unwrap(), 0);
    assert!(s.read("small/empty").await.unwrap().is_empty());
}

async fn large_multipart_write(s: &dyn Storage) {
    // Two full parts and a partial one, written in chunks that straddle part boundaries.
    let data = pattern(2 * MULTIPART_PART_SIZE + 4 * 1024 * 1024 + 123, 1);
    let mut writer = s.create("large/big.sst").await.unwrap();
    for piece in data.chunks(1024 * 1024 + 7) {
        writer.write(Bytes::copy_from_slice(piece)).await.unwrap();
    }
    // Parts are uploaded by now, but the file must not show until finish.
    assert!(is_not_found(s.size("large/big.sst").await));
    assert!(listing(s, "large").await.is_empty());
    assert_eq!(writer.finish().await.unwrap(), data.len() as u64);

    assert_eq!(s.size("large/big.sst").await.unwrap(), data.len() as u64);
    assert!(s.read("large/big.sst").await.unwrap() == data);
    let boundary = MULTIPART_PART_SIZE as u64;
    for range in [
        boundary - 10..boundary + 10,
        0..1,
        2 * boundary - 1..2 * boundary + 1,
        data.len() as u64 - 5..data.len() as u64,
    ] {
        let got = s.read_range("large/big.sst", range.clone()).await.unwrap();
        assert!(got == data[range.start as usize..range.end as usize], "{range:?}");
    }
}

async fn put_modes(s: &dyn Storage) {
    s.put("put/p", Bytes::from_static(b"one"), WriteMode::Overwrite).await.unwrap();
    s.put("put/p", Bytes::from_static(b"two"), WriteMode::Overwrite).await.unwrap();
    assert_eq!(s.read("put/p").await.unwrap(), "two");

    let message = expect_kind(
        s.put("put/p", Bytes::from_static(b"three"), WriteMode::CreateNew).await,
        ErrorKind::AlreadyExists,
        "CreateNew over an existing file",
    );
    assert!(message.contains("exists"), "{message}");
    assert_eq!(s.read("put/p").await.unwrap(), "two");

    s.put("put/q", Bytes::from_static(b"new"), WriteMode::CreateNew).await.unwrap();
    assert_eq!(s.read("put/q").await.unwrap(), "new");
}

async fn ranges(s: &dyn Storage) {
    let data = pattern(10_000, 2);
    s.put("ranges/r", Bytes::from(data.clone()), WriteMode::Overwrite).await.unwrap();
    for range in [0..10_000u64, 0..1, 9_999..10_000, 1234..5678, 5000..5000] {
        let got = s.read_range("ranges/r", range.clone()).await.unwrap();
        assert_eq!(got.len() as u64, range.end - range.start, "{range:?}");
        assert!(got == data[range.start as usize..range.end as usize], "{range:?}");
    }
    // Past the end: an error, never a silently short buffer.
    expect_io(s.read_range("ranges/r", 9_990..10_010).await, "range over EOF");
    assert!(s.read_range("ranges/r", 20_000..20_010).await.is_err());
    assert!(is_not_found(s.read_range("ranges/missing", 0..10).await));
    assert!(is_not_found(s.read("ranges/missing").await));
    assert!(is_not_found(s.size("ranges/missing").await));
}

async fn listing_is_relative_and_recursive(s: &dyn Storage) {
    for (path, len) in [("l/a", 1usize), ("l/b/c", 2), ("l/b/d/e", 3), ("l2/x", 4)] {
        s.put(path, Bytes::from(vec![7; len]), WriteMode::Overwrite).await.unwrap();
    }
    let expected: BTreeMap<String, u64> = [("l/a", 1), ("l/b/c", 2), ("l/b/d/e", 3)]
        .into_iter()
        .map(|(p, n)| (p.to_string(), n))
        .collect();
    assert_eq!(listing(s, "l").await, expected);
    assert_eq!(listing(s, "l/").await, expected);
    assert_eq!(listing(s, "l/b").await.into_keys().collect::<Vec<_>>(), ["l/b/c", "l/b/d/e"]);
    assert!(listing(s, "nothing-here").await.is_empty());
    let all = listing(s, "").await;
    assert!(all.contains_key("l2/x") && all.contains_key("l/b/d/e"), "{all:?}");
    assert!(all.keys().all(|p| !p.starts_with('/')), "{all:?}");
}

async fn delete_is_idempotent(s: &dyn Storage) {
    s.put("del/x", Bytes::from_static(b"x"), WriteMode::Overwrite).await.unwrap();
    s.delete("del/x").await.unwrap();
    assert!(is_not_found(s.size("del/x").await));
    s.delete("del/x").await.unwrap();
    s.delete("del/never-existed").await.unwrap();
    assert!(listing(s, "del").await.is_empty());
}

async fn rename_and_copy(s: &dyn Storage) {
    s.put("mv/a", Bytes::from_static(b"aaa"), WriteMode::Overwrite).await.unwrap();
    s.put("mv/b", Bytes::from_static(b"old"), WriteMode::Overwrite).await.unwrap();
    s.rename("mv/a", "mv/b").await.unwrap();
    assert!(is_not_found(s.size("mv/a").await));
    assert_eq!(s.read("mv/b").await.unwrap(), "aaa");
    s.rename("mv/b", "mv/sub/dir/c").await.unwrap();
    assert_eq!(s.read("mv/sub/dir/c").await.unwrap(), "aaa");
    assert!(is_not_found(s.rename("mv/missing", "mv/z").await));

    s.copy("mv/sub/dir/c", "cp/d").await.unwrap();
    assert_eq!(s.read("mv/sub/dir/c").await.unwrap(), "aaa");
    assert_eq!(s.read("cp/d").await.unwrap(), "aaa");
    s.put("cp/e", Bytes::from_static(b"replace me"), WriteMode::Overwrite).await.unwrap();
    s.copy("cp/d", "cp/e").await.unwrap();
    assert_eq!(s.read("cp/e").await.unwrap(), "aaa");
    assert!(is_not_found(s.copy("cp/missing", "cp/f").await));
}

async fn unfinished_files_are_invisible(s: &dyn Storage) {
    let mut writer = s.create("wip/small").await.unwrap();
    writer.write(Bytes::from_static(b"pending")).await.unwrap();
    assert!(is_not_found(s.size("wip/small").await));
    assert!(is_not_found(s.read("wip/small").await));
    assert!(listing(s, "wip").await.is_empty());
    writer.abort().await.unwrap();
    assert!(is_not_found(s.size("wip/small").await));

    let big = pattern(MULTIPART_PART_SIZE + 1000, 3);
    let mut writer = s.create("wip/big").await.unwrap();
    writer.write(Bytes::from(big)).await.unwrap();
    writer.abort().await.unwrap();
    assert!(is_not_found(s.size("wip/big").await));

    // Dropped without finish or abort: still nothing.
    let mut writer = s.create("wip/dropped").await.unwrap();
    writer.write(Bytes::from_static(b"lost")).await.unwrap();
    drop(writer);
    assert!(is_not_found(s.size("wip/dropped").await));
    let mut writer = s.create("wip/dropped-big").await.unwrap();
    writer.write(Bytes::from(pattern(MULTIPART_PART_SIZE + 1, 4))).await.unwrap();
    drop(writer);
    assert!(is_not_found(s.size("wip/dropped-big").await));
    assert!(listing(s, "wip").await.is_empty());

    // A file being written does not disturb the old version at the same path.
    s.put("wip/v", Bytes::from_static(b"v1"), WriteMode::Overwrite).await.unwrap();
    let mut writer = s.create("wip/v").await.unwrap();
    writer.write(Bytes::from_static(b"v2")).await.unwrap();
    assert_eq!(s.read("wip/v").await.unwrap(), "v1");
    writer.finish().await.unwrap();
    assert_eq!(s.read("wip/v").await.unwrap(), "v2");
}

async fn errors_name_the_url(s: &dyn Storage) {
    let url = s.url().trim_end_matches('/').to_string();
    match s.read("err/missing.sst").await {
        Err(Error::NotFound(what)) => {
            assert!(what.contains(&url) && what.contains("err/missing.sst"), "{what}")
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    let message = expect_io(s.read_range("small/a.sst", 5..50).await, "range over EOF");
    assert!(message.contains(&url), "{message}");
}

#[test]
fn file_storage_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}/db", dir.path().display());
    let storage = open_storage(&url, &StorageOptions::default()).unwrap();
    assert_eq!(storage.url(), url);
    assert!(format!("{storage:?}").contains("LocalStorage"), "{storage:?}");
    conformance(storage);
}

#[test]
fn local_storage_conforms_without_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let storage = LocalStorage::new(dir.path().join("db"), false).unwrap();
    conformance(Arc::new(storage));
}

#[test]
fn object_store_file_storage_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}/db", dir.path().display());
    let options = StorageOptions::from_pairs([("local.backend", "object_store")]).unwrap();
    let storage = open_storage(&url, &options).unwrap();
    assert!(format!("{storage:?}").contains("ObjectStoreStorage"), "{storage:?}");
    assert_eq!(storage.url(), url);
    conformance(storage);
}

#[test]
fn local_storage_publishes_atomically_and_hides_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("db");
    let storage: StorageRef = Arc::new(LocalStorage::new(&root, true).unwrap());
    let s = storage.as_ref();
    let names = |dir: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    block_on(async {
        // While a writer is open its bytes sit in a temp file that list() skips.
        let mut writer = s.create("sub/f.sst").await.unwrap();
        writer.write(Bytes::from_static(b"abc")).await.unwrap();
        let on_disk = names(&root.join("sub"));
        assert!(on_disk.len() == 1 && on_disk[0].starts_with(".tmp-"), "{on_disk:?}");
        assert!(listing(s, "").await.is_empty());
        writer.finish().await.unwrap();
        assert_eq!(names(&root.join("sub")), ["f.sst"]);

        // A failed CreateNew leaves neither a changed file nor a temp file.
        expect_kind(
            s.put("sub/f.sst", Bytes::from_static(b"x"), WriteMode::CreateNew).await,
            ErrorKind::AlreadyExists,
            "CreateNew over an existing file",
        );
        assert_eq!(names(&root.join("sub")), ["f.sst"]);
        assert_eq!(s.read("sub/f.sst").await.unwrap(), "abc");

        // Copies are hard links (published files are immutable), and renaming onto a link of
        // the same file still removes the source.
        s.copy("sub/f.sst", "ckp/f.sst").await.unwrap();
        {
            use std::os::unix::fs::MetadataExt;
            let a = std::fs::metadata(root.join("sub/f.sst")).unwrap();
            let b = std::fs::metadata(root.join("ckp/f.sst")).unwrap();
            assert_eq!((a.ino(), a.nlink()), (b.ino(), 2));
        }
        s.copy("sub/f.sst", "ckp/f.sst").await.unwrap();
        assert_eq!(names(&root.join("ckp")), ["f.sst"]);
        s.rename("sub/f.sst", "ckp/f.sst").await.unwrap();
        assert!(is_not_found(s.size("sub/f.sst").await));
        assert_eq!(s.read("ckp/f.sst").await.unwrap(), "abc");

        // Emptied directories go, as on an object store; the root stays.
        assert!(!root.join("sub").exists());
        s.delete("ckp/f.sst").await.unwrap();
        assert!(!root.join("ckp").exists());
        assert!(root.is_dir());
        assert!(names(&root).is_empty(), "{:?}", names(&root));

        // Aborted and dropped writers take their temp files with them.
        let mut writer = s.create("w/a").await.unwrap();
        writer.write(Bytes::from_static(b"a")).await.unwrap();
        writer.abort().await.unwrap();
        let mut writer = s.create("w/b").await.unwrap();
        writer.write(Bytes::from_static(b"b")).await.unwrap();
        drop(writer);
        assert!(names(&root.join("w")).is_empty());
        std::fs::remove_dir(root.join("w")).unwrap();

        // Paths that would escape the root or collide with temp files are refused.
        for bad in ["../x", "a/../../x", "a//b", ".tmp-x", "a/.tmp-1-b", ""] {
            assert!(matches!(s.read(bad).await, Err(Error::InvalidArgument(_))), "{bad:?}");
        }
    });
}

#[test]
fn local_backend_option() {
    let options = StorageOptions::from_pairs([("local.backend", "std")]).unwrap();
    assert_eq!(options, StorageOptions::default());
    assert!(StorageOptions::from_pairs([("local.backend", "nfs")]).is_err());
}

#[test]
fn file_storage_from_plain_path_creates_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a/b/c");
    let storage = open_storage(root.to_str().unwrap(), &StorageOptions::default()).unwrap();
    assert!(root.is_dir());
    block_on(storage.put("f", Bytes::from_static(b"1"), WriteMode::CreateNew)).unwrap();
    assert_eq!(std::fs::read(root.join("f")).unwrap(), b"1");
    // Reopening sees the same files.
    let again =
        open_storage(&format!("file://{}", root.display()), &StorageOptions::default()).unwrap();
    assert_eq!(block_on(again.read("f")).unwrap(), "1");
}

#[test]
fn memory_storage_conforms() {
    conformance(support::fresh_memory("conformance"));
}

#[test]
fn memory_storage_is_shared_by_name() {
    let name = support::unique_name("reopen");
    let url = format!("memory://{name}/db");
    let first = open_storage(&url, &StorageOptions::default()).unwrap();
    block_on(first.put("MANIFEST", Bytes::from_static(b"m"), WriteMode::Overwrite)).unwrap();
    drop(first);
    let second = open_storage(&url, &StorageOptions::default()).unwrap();
    assert_eq!(block_on(second.read("MANIFEST")).unwrap(), "m");
    // The prefix is part of the root: the same store seen from its top has db/MANIFEST.
    let top = open_storage(&format!("memory://{name}"), &StorageOptions::default()).unwrap();
    assert_eq!(block_on(top.size("db/MANIFEST")).unwrap(), 1);
    let other = support::fresh_memory("other");
    assert!(is_not_found(block_on(other.read("MANIFEST"))));
    forst::storage::drop_memory_store(&name);
}

#[test]
fn writer_dropped_outside_the_runtime_publishes_nothing() {
    let storage = support::fresh_memory("drop");
    let mut writer = block_on(storage.create("f")).unwrap();
    block_on(writer.write(Bytes::from(pattern(MULTIPART_PART_SIZE + 1, 7)))).unwrap();
    // Engine threads are not runtime threads; dropping here must neither panic nor publish.
    drop(writer);
    assert!(is_not_found(block_on(storage.size("f"))));
}

#[test]
fn disk_cached_storage_conforms() {
    let cache_dir = tempfile::tempdir().unwrap();
    let options =
        DiskCacheOptions { dir: cache_dir.path().into(), size_limit: 1 << 30, reserve: 0 };
    let cache = Arc::new(DiskCache::new(options).unwrap());
    conformance(Arc::new(DiskCachedStorage::new(support::fresh_memory("disk-cached"), cache)));
}

#[test]
fn latency_storage_conforms() {
    let inner = support::fresh_memory("latency");
    let latency = Latency::new(Duration::from_millis(1), Duration::from_nanos(1));
    conformance(Arc::new(LatencyStorage::new(inner, latency)));
}

#[test]
fn latency_storage_overlaps_concurrent_calls_and_counts() {
    let inner = support::fresh_memory("overlap");
    let per_call = Duration::from_millis(5);
    let storage = LatencyStorage::new(inner, Latency::per_call(per_call));
    block_on(storage.put("f", Bytes::from(pattern(4096, 4)), WriteMode::Overwrite)).unwrap();
    storage.reset_stats();

    let reads = 200u64;
    let results = block_on(futures::future::join_all(
        (0..reads).map(|i| storage.read_range("f", i * 10..i * 10 + 16)),
    ));
    assert!(results.iter().all(|r| r.as_ref().is_ok_and(|b| b.len() == 16)));
    let stats = storage.stats();
    // The delay is async: every call started before the first one's latency was over.
    assert_eq!(stats.max_in_flight, reads, "reads did not overlap");
    assert_eq!(stats.delayed, per_call * reads as u32);
    assert_eq!(stats.calls, reads);
    assert_eq!(stats.reads, reads);
    assert_eq!(stats.bytes_read, reads * 16);

    storage.reset_stats();
    block_on(async {
        let mut writer = storage.create("g").await.unwrap();
        writer.write(Bytes::from_static(b"abc")).await.unwrap();
        writer.finish().await.unwrap();
    });
    let stats = storage.stats();
    assert_eq!(stats.delayed, per_call * 3, "create, write and finish each wait");
    assert_eq!(stats.max_in_flight, 1);
    assert_eq!((stats.calls, stats.writes, stats.bytes_written), (3, 1, 3));
}

#[test]
fn fault_storage_conforms_without_rules() {
    conformance(Arc::new(FaultStorage::new(support::fresh_memory("fault"))));
}

fn is_injected<T: std::fmt::Debug>(result: forst::Result<T>) -> bool {
    match result {
        Err(Error::Io { message, .. }) => message.contains("injected fault"),
        _ => false,
    }
}

#[test]
fn fault_storage_fails_the_nth_call() {
    let storage = FaultStorage::new(support::fresh_memory("nth"));
    block_on(async {
        storage.put("f", Bytes::from_static(b"data"), WriteMode::Overwrite).await.unwrap();
        storage.fail_nth(OpKind::Read, 3);
        let outcomes: Vec<bool> = futures::future::join_all((0..5).map(|_| storage.read("f")))
            .await
            .into_iter()
            .map(is_injected)
            .collect();
        assert_eq!(outcomes, [false, false, true, false, false]);
        assert_eq!(storage.injected(), 1);

        // A failed finish publishes nothing; the writer's other calls go through.
        storage.fail_nth(OpKind::Finish, 1);
        let mut writer = storage.create("w").await.unwrap();
        writer.write(Bytes::from_static(b"x")).await.unwrap();
        assert!(is_injected(writer.finish().await));
        assert!(is_not_found(storage.size("w").await));

        storage.fail_nth(OpKind::Write, 2);
        let mut writer = storage.create("w").await.unwrap();
        writer.write(Bytes::from_static(b"x")).await.unwrap();
        assert!(is_injected(writer.write(Bytes::from_static(b"y")).await));
        writer.abort().await.unwrap();

        for kind in [
            OpKind::Create,
            OpKind::Put,
            OpKind::Size,
            OpKind::List,
            OpKind::Delete,
            OpKind::Rename,
            OpKind::Copy,
        ] {
            storage.fail_nth(kind, 1);
        }
        assert!(is_injected(storage.create("c").await.map(|_| ())));
        assert!(is_injected(storage.put("p", Bytes::new(), WriteMode::Overwrite).await));
        assert!(is_injected(storage.size("f").await));
        assert!(is_injected(storage.list("").await));
        assert!(is_injected(storage.delete("f").await));
        assert!(is_injected(storage.rename("f", "g").await));
        assert!(is_injected(storage.copy("f", "g").await));
        // Each rule fired once; the file is untouched.
        assert_eq!(storage.read("f").await.unwrap(), "data");
        storage.delete("f").await.unwrap();
    });
}

#[test]
fn fault_storage_fails_a_seeded_fraction() {
    let run = |seed| {
        let storage = FaultStorage::new(support::fresh_memory("fraction"));
        block_on(async {
            storage.put("f", Bytes::from_static(b"data"), WriteMode::Overwrite).await.unwrap();
            storage.fail_fraction(OpKind::Read, 0.3, seed);
            let mut pattern = Vec::new();
            for _ in 0..1000 {
                pattern.push(is_injected(storage.read_range("f", 0..4).await));
            }
            storage.clear();
            assert_eq!(storage.read("f").await.unwrap(), "data");
            assert_eq!(storage.calls(OpKind::Read), 1001);
            pattern
        })
    };
    let a = run(42);
    let failed = a.iter().filter(|f| **f).count();
    assert!((200..400).contains(&failed), "{failed} of 1000 failed at 30%");
    assert_eq!(a, run(42), "same seed, same failures");
    assert_ne!(a, run(43));
}

#[test]
fn fault_storage_short_reads_are_detected() {
    let storage = FaultStorage::new(support::fresh_memory("short"));
    block_on(async {
        storage.put("f", Bytes::from(pattern(1000, 5)), WriteMode::Overwrite).await.unwrap();
        storage.short_reads(1.0, 1);
        let got = storage.read_range("f", 100..300).await.unwrap();
        assert!(got.len() < 200, "short read injected");
        let message = expect_io(read_range_exact(&storage, "f", 100..300).await, "short read");
        assert!(message.contains("short read"), "{message}");
        assert!(storage.read("f").await.unwrap().len() < 1000);
        assert_eq!(storage.short_reads_returned(), 3);
        storage.clear();
        assert_eq!(read_range_exact(&storage, "f", 100..300).await.unwrap().len(), 200);
    });
}

#[test]
fn s3_storage_conforms() {
    conformance(support::fresh_s3("conformance"));
}

#[test]
fn s3_large_files_use_multipart_upload() {
    use object_store::aws::AmazonS3Builder;
    use object_store::{ObjectStoreExt, path::Path};

    let url = support::fresh_s3_url("multipart");
    let options = support::s3_options();
    let storage = open_storage(&url, &options).unwrap();
    let (_, bucket) = support::s3();
    let prefix = url.trim_start_matches(&format!("s3://{bucket}/")).to_string();
    let raw = AmazonS3Builder::new()
        .with_bucket_name(&bucket)
        .with_endpoint(options.s3.endpoint.clone().unwrap())
        .with_region(options.s3.region.clone().unwrap())
        .with_access_key_id(options.s3.access_key_id.clone().unwrap())
        .with_secret_access_key(options.s3.secret_access_key.clone().unwrap())
        .with_allow_http(true)
        .build()
        .unwrap();
    block_on(async {
        let data = pattern(2 * MULTIPART_PART_SIZE + 5, 6);
        write_file(storage.as_ref(), "big", &data, 3 * 1024 * 1024).await;
        write_file(storage.as_ref(), "small", &data[..1000], 100).await;
        // S3 marks multipart objects with "-<parts>" after the ETag digest.
        let big = raw.head(&Path::from(format!("{prefix}/big"))).await.unwrap();
        let small = raw.head(&Path::from(format!("{prefix}/small"))).await.unwrap();
        assert!(big.e_tag.as_deref().unwrap().trim_matches('"').ends_with("-3"), "{big:?}");
        assert!(!small.e_tag.as_deref().unwrap().contains('-'), "{small:?}");
    });
}

/// The part size and the parts in flight that Flink's keys set shape the uploads; the client
/// settings (timeouts, retries, session token) leave a working store working.
#[test]
fn s3_configured_part_size_shapes_multipart_uploads() {
    let url = support::fresh_s3_url("part-size");
    let mut options = support::s3_options();
    for (key, value) in [
        ("s3.multipart.part-size", "5242880"),
        ("s3.multipart.parts-in-flight", "1"),
        ("s3.connect-timeout-ms", "5000"),
        ("s3.read-timeout-ms", "30000"),
        ("s3.request-timeout-ms", "60000"),
        ("s3.max-retries", "2"),
    ] {
        options.set(key, value).unwrap();
    }
    let storage = open_storage(&url, &options).unwrap();
    let (_, bucket) = support::s3();
    let prefix = url.trim_start_matches(&format!("s3://{bucket}/")).to_string();
    let raw = support::s3_options().s3.build(&bucket).unwrap();
    block_on(async {
        use object_store::{ObjectStoreExt, path::Path};
        let data = pattern(3 * (5 << 20) + 7, 8);
        write_file(storage.as_ref(), "big", &data, 1 << 20).await;
        let big = raw.head(&Path::from(format!("{prefix}/big"))).await.unwrap();
        assert!(big.e_tag.as_deref().unwrap().trim_matches('"').ends_with("-4"), "{big:?}");
        assert_eq!(storage.read("big").await.unwrap(), Bytes::from(data));
    });
}

#[test]
fn s3_unreachable_endpoint_is_a_transient_error_naming_the_url_and_cause() {
    let options = StorageOptions {
        s3: S3Options {
            // Port 9 (discard) is closed on test machines: connection refused at once.
            endpoint: Some("http://127.0.0.1:9".into()),
            region: Some("us-east-1".into()),
            access_key_id: Some("x".into()),
            secret_access_key: Some("y".into()),
            path_style: None,
            ..S3Options::default()
        },
        ..StorageOptions::default()
    };
    let storage = open_storage("s3://nobucket/pre", &options).unwrap();
    let message =
        expect_kind(block_on(storage.size("f")), ErrorKind::Transient, "unreachable endpoint");
    assert!(message.contains("s3://nobucket/pre/f"), "{message}");
    // The refusal sits deep in the HTTP client's error chain; the message carries it.
    assert!(message.to_lowercase().contains("connect"), "{message}");
}

/// The options Java passes for Flink's `s3.*` keys: an http endpoint is enough for plain http,
/// and without a path-style setting the bucket goes in the path.
fn flink_style_s3_options(path_style: Option<&str>) -> StorageOptions {
    let (endpoint, _) = support::s3();
    let mut pairs = vec![
        ("s3.endpoint", endpoint.as_str()),
        ("s3.access-key", "testing"),
        ("s3.secret-key", "testing"),
        ("s3.region", "us-east-1"),
    ];
    pairs.extend(path_style.map(|value| ("s3.path-style", value)));
    StorageOptions::from_pairs(pairs).unwrap()
}

/// Every object under `prefix` in the test bucket, listed straight from the server.
fn objects_under(prefix: &str) -> Vec<String> {
    use futures::TryStreamExt;
    use object_store::{ObjectStore, path::Path};
    let (_, bucket) = support::s3();
    let raw = support::s3_options().s3.build(&bucket).unwrap();
    block_on(async {
        raw.list(Some(&Path::from(prefix)))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .unwrap()
    })
}

#[test]
fn s3_flink_keys_reach_a_plain_http_endpoint() {
    for path_style in [None, Some("true")] {
        let url = support::fresh_s3_url("flink-keys");
        let storage = open_storage(&url, &flink_style_s3_options(path_style)).unwrap();
        block_on(async {
            storage.put("a/f", Bytes::from_static(b"flink"), WriteMode::CreateNew).await.unwrap();
            assert_eq!(storage.read("a/f").await.unwrap(), Bytes::from_static(b"flink"));
        });
        let (_, bucket) = support::s3();
        let prefix = url.trim_start_matches(&format!("s3://{bucket}/")).to_string();
        assert_eq!(objects_under(&prefix), vec![format!("{prefix}/a/f")], "{path_style:?}");
    }
}

#[test]
fn s3_delete_tree_removes_every_object_under_the_prefix_and_nothing_else() {
    let url = support::fresh_s3_url("delete-tree");
    let options = flink_style_s3_options(None);
    let (_, bucket) = support::s3();
    let prefix = url.trim_start_matches(&format!("s3://{bucket}/")).to_string();
    let sibling = open_storage(&format!("{url}-sibling"), &options).unwrap();
    let storage = open_storage(&url, &options).unwrap();
    block_on(async {
        for path in ["MANIFEST-1", "1-x.sst", "restore-staging/2-y.sst", "a/b/c"] {
            storage.put(path, Bytes::from_static(b"x"), WriteMode::Overwrite).await.unwrap();
        }
        sibling.put("keep", Bytes::from_static(b"x"), WriteMode::Overwrite).await.unwrap();
    });
    assert_eq!(objects_under(&prefix).len(), 4);

    assert_eq!(delete_tree(&url, &options).unwrap(), Some(4));
    assert!(objects_under(&prefix).is_empty(), "{:?}", objects_under(&prefix));
    assert_eq!(objects_under(&format!("{prefix}-sibling")).len(), 1);
    // Deleting again finds nothing; other schemes are left to Flink's file systems.
    assert_eq!(delete_tree(&url, &options).unwrap(), Some(0));
    assert_eq!(delete_tree("hdfs://127.0.0.1:9000/db", &options).unwrap(), None);
    let forced = StorageOptions { force_proxy: true, ..options };
    assert_eq!(delete_tree(&url, &forced).unwrap(), None);
}
