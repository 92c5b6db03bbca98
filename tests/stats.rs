//! The engine's exported statistics: one name per value, and the values move with what the
//! database does (writes, flushes, compactions, reads through the block cache).

use std::collections::HashSet;
use std::sync::Arc;

use forst::lsm::{Db, DbOptions, DbStats, EXPORTED_STATS};
use forst::storage::{LocalStorage, StorageRef};

fn options() -> DbOptions {
    DbOptions {
        memtable_bytes: 1 << 20,
        target_file_bytes: 16 << 10,
        l0_compaction_trigger: 2,
        auto_compaction: false,
        block_cache_bytes: 8 << 20,
        ..DbOptions::default()
    }
}

fn local(dir: &std::path::Path) -> StorageRef {
    Arc::new(LocalStorage::new(dir, false).unwrap())
}

/// The exported value of `name`.
fn value(stats: &DbStats, name: &str) -> u64 {
    let index = EXPORTED_STATS.iter().position(|(n, _)| *n == name).unwrap_or_else(|| {
        panic!("no exported statistic {name}");
    });
    stats.exported_values().nth(index).unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:06}").into_bytes()
}

#[test]
fn names_are_unique_and_match_the_values() {
    let names: HashSet<_> = EXPORTED_STATS.iter().map(|(name, _)| *name).collect();
    assert_eq!(names.len(), EXPORTED_STATS.len(), "names are unique");
    assert_eq!(DbStats::default().exported_values().count(), EXPORTED_STATS.len());
    let levels = forst::lsm::options::NUM_LEVELS;
    for level in 0..levels {
        assert!(names.contains(format!("files-at-level{level}").as_str()));
        assert!(names.contains(format!("bytes-at-level{level}").as_str()));
    }
    assert!(!names.contains(format!("files-at-level{levels}").as_str()));
}

#[test]
fn statistics_follow_writes_flushes_compactions_and_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open_with_storage(local(tmp.path()), options()).unwrap();
    let cf = db.create_cf("state").unwrap();
    let empty = db.stats();
    for name in ["memtable-bytes", "flushes", "compactions", "live-sst-files", "user-bytes-written"]
    {
        assert_eq!(value(&empty, name), 0, "{name} of an empty database");
    }
    assert_eq!(value(&empty, "block-cache-capacity-bytes"), 8 << 20);

    for i in 0..2_000 {
        db.put(&cf, &key(i), &[b'v'; 100]).unwrap();
    }
    let written = db.stats();
    assert!(value(&written, "memtable-bytes") > 200_000, "{written:?}");
    assert_eq!(value(&written, "active-memtable-entries"), 2_000);
    assert_eq!(value(&written, "estimated-keys"), 2_000);
    assert_eq!(
        value(&written, "user-bytes-written"),
        2_000 * (4 + 10 + 100),
        "family prefix, key and value"
    );

    db.flush().unwrap();
    let flushed = db.stats();
    assert_eq!(value(&flushed, "flushes"), 1);
    assert_eq!(value(&flushed, "memtable-bytes"), 0);
    assert!(value(&flushed, "files-at-level0") > 0);
    assert_eq!(value(&flushed, "live-sst-files"), value(&flushed, "files-at-level0"));
    assert_eq!(value(&flushed, "flush-bytes-written"), value(&flushed, "live-sst-bytes"));
    assert_eq!(value(&flushed, "estimated-keys"), 2_000);

    for i in 0..2_000 {
        db.put(&cf, &key(i), &[b'w'; 100]).unwrap();
    }
    db.flush().unwrap();
    let two_flushes = db.stats();
    assert_eq!(value(&two_flushes, "flushes"), 2);
    assert_eq!(value(&two_flushes, "compaction-pending"), 1, "two L0 files trigger it");
    assert_eq!(
        value(&two_flushes, "pending-compaction-bytes"),
        value(&two_flushes, "bytes-at-level0")
    );

    db.compact_until_settled().unwrap();
    let compacted = db.stats();
    assert!(value(&compacted, "compactions") >= 1);
    assert_eq!(value(&compacted, "files-at-level0"), 0);
    assert_eq!(value(&compacted, "compaction-pending"), 0);
    assert_eq!(value(&compacted, "pending-compaction-bytes"), 0);
    assert_eq!(
        value(&compacted, "compaction-bytes-read"),
        value(&two_flushes, "live-sst-bytes"),
        "the compaction read both flushes' files"
    );
    assert_eq!(value(&compacted, "compaction-bytes-written"), value(&compacted, "live-sst-bytes"));
    assert_eq!(value(&compacted, "estimated-keys"), 2_000, "one version per key left");

    let before = db.stats();
    assert_eq!(db.get(&cf, &key(7)).unwrap().as_deref(), Some(&[b'w'; 100][..]));
    let first_read = db.stats();
    assert!(value(&first_read, "block-cache-misses") > value(&before, "block-cache-misses"));
    assert!(value(&first_read, "block-cache-usage-bytes") > 0);
    db.get(&cf, &key(7)).unwrap();
    let second_read = db.stats();
    assert!(value(&second_read, "block-cache-hits") > value(&first_read, "block-cache-hits"));
    assert_eq!(
        value(&second_read, "block-cache-misses"),
        value(&first_read, "block-cache-misses"),
        "the second read is served from the cache"
    );
}

#[test]
fn range_deletes_are_counted_once_flushed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open_with_storage(local(tmp.path()), options()).unwrap();
    let cf = db.create_cf("state").unwrap();
    db.put(&cf, b"a1", b"v").unwrap();
    db.flush().unwrap();
    db.delete_range(&cf, b"a", b"b").unwrap();
    assert_eq!(value(&db.stats(), "range-tombstones"), 0, "still in the memtable");
    db.flush().unwrap();
    assert_eq!(value(&db.stats(), "range-tombstones"), 1, "the older file still needs it");
}

#[test]
fn memory_is_reported_per_component() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open_with_storage(local(tmp.path()), options()).unwrap();
    let cf = db.create_cf("state").unwrap();
    for i in 0..2_000 {
        db.put(&cf, &key(i), &[b'v'; 100]).unwrap();
    }
    let written = db.stats();
    assert_eq!(value(&written, "table-reader-bytes"), 0, "no table yet");
    assert_eq!(value(&written, "memory-usage-bytes"), value(&written, "memtable-bytes"));
    db.flush().unwrap();
    assert!(value(&db.stats(), "table-reader-bytes") > 0, "the flushed tables are open");

    assert!(db.get(&cf, &key(7)).unwrap().is_some());
    let read = db.stats();
    let data = value(&read, "block-cache-data-bytes");
    let index_filter = value(&read, "block-cache-index-filter-bytes");
    assert!(data > 0 && index_filter > 0, "{read:?}");
    assert_eq!(data + index_filter, value(&read, "block-cache-usage-bytes"));
    assert_eq!(value(&read, "index-filter-bytes-loaded"), index_filter);
    assert_eq!(
        value(&read, "memory-usage-bytes"),
        value(&read, "memtable-bytes")
            + value(&read, "block-cache-usage-bytes")
            + value(&read, "table-reader-bytes")
    );

    assert_eq!(value(&read, "iterator-pinned-bytes"), 0);
    let mut it = db.iter(&cf, None, None).unwrap();
    it.seek_to_first().unwrap();
    assert!(it.valid());
    assert!(value(&db.stats(), "iterator-pinned-bytes") > 0);
    drop(it);
    assert_eq!(value(&db.stats(), "iterator-pinned-bytes"), 0);
}
