//! Range deletes at the engine level: compaction reclaims what they delete and forgets them,
//! files they wholly delete go without being read, and readers racing a writer that clears and
//! refills a map in one batch see the map whole, before or after, never in between.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::storage::{FaultStorage, OpKind, StorageOptions, StorageRef, open_storage};

mod support;
use forst::test_support::incompressible;

fn options() -> DbOptions {
    DbOptions {
        memtable_bytes: 256 << 10,
        target_file_bytes: 64 << 10,
        auto_compaction: false,
        ..DbOptions::default()
    }
}

fn map_prefix(user: u32) -> Vec<u8> {
    format!("user{user:05}|ns|").into_bytes()
}

fn map_entry(user: u32, entry: u32) -> Vec<u8> {
    [map_prefix(user), format!("e{entry:02}").into_bytes()].concat()
}

/// Fills `users` maps of 20 entries of 50 bytes and compacts them into the last level.
fn fill_maps(db: &Db, cf: &ColumnFamily, users: u32) {
    let mut batch = WriteBatch::new();
    for user in 0..users {
        for entry in 0..20 {
            batch.put(
                cf,
                &map_entry(user, entry),
                &incompressible(u64::from(user) << 32 | u64::from(entry), 50),
            );
        }
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();
}

fn count(db: &Db, cf: &ColumnFamily, prefix: &[u8]) -> usize {
    let mut it = db.iter_prefix(cf, prefix).unwrap();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.advance().unwrap();
    }
    n
}

fn total_bytes(db: &Db) -> u64 {
    db.stats().bytes_per_level.iter().sum()
}

/// `MapState.clear()` of every other map: background-style compaction (no full compaction)
/// rewrites the files the deletes apply to, so the deleted entries leave the disk and the
/// tombstones leave the version.
#[test]
fn compaction_reclaims_cleared_maps_and_forgets_their_tombstones() {
    let storage = open_storage("memory://rd-reclaim", &StorageOptions::default()).unwrap();
    let db = Db::open_with_storage(storage.clone(), options()).unwrap();
    let cf = db.create_cf("map").unwrap();
    fill_maps(&db, &cf, 4_000);
    let full = total_bytes(&db);
    for user in (0..4_000).step_by(2) {
        let mut batch = WriteBatch::new();
        batch.delete_prefix(&cf, &map_prefix(user));
        db.write(&batch).unwrap();
    }
    db.flush().unwrap();
    let flushed = db.stats();
    assert_eq!(flushed.range_tombstones, 2_000, "one fragment per cleared map");
    assert_eq!(count(&db, &cf, b"user00002|"), 0);
    // The version's fragments are charged to the budget (at least their keys), also on reopen.
    let key_bytes = 2_000 * 2 * map_prefix(0).len() as u64;
    assert!(flushed.range_tombstone_bytes >= key_bytes, "{flushed:?}");
    db.close().unwrap();
    let db = Db::open_with_storage(storage, options()).unwrap();
    let cf = db.cf("map").unwrap();
    assert_eq!(db.stats().range_tombstone_bytes, flushed.range_tombstone_bytes, "reopened");

    db.compact_until_settled().unwrap();
    let stats = db.stats();
    assert_eq!(stats.range_tombstones, 0, "every tombstone applied and forgotten");
    assert_eq!(stats.range_tombstone_bytes, 0, "and no longer charged");
    assert!(
        total_bytes(&db) < full * 6 / 10,
        "half the entries deleted: {} bytes of {full} left",
        total_bytes(&db)
    );
    for user in [0, 2, 1998, 3998] {
        assert_eq!(count(&db, &cf, &map_prefix(user)), 0, "cleared map {user}");
    }
    for user in [1, 1999, 3999] {
        assert_eq!(count(&db, &cf, &map_prefix(user)), 20, "kept map {user}");
    }
    assert_eq!(count(&db, &cf, b""), 2_000 * 20);
}

/// A delete over the whole range of some files drops them without a single read. The one file
/// it covers in part keeps it (one delete over a file is not worth a rewrite) until a full
/// compaction.
#[test]
fn files_wholly_deleted_are_dropped_without_being_read() {
    let inner = open_storage("memory://rd-drop", &StorageOptions::default()).unwrap();
    let faults = Arc::new(FaultStorage::new(inner));
    let db = Db::open_with_storage(faults.clone() as StorageRef, options()).unwrap();
    let cf = db.create_cf("map").unwrap();
    fill_maps(&db, &cf, 4_000);
    let files_before = db.stats().files_per_level.iter().sum::<usize>();
    assert!(files_before >= 10, "data spread over many files: {files_before}");
    // Maps 0..=2999 of 4000: about the first three quarters of the files, wholly.
    db.delete_range(&cf, &map_prefix(0), &map_prefix(3_000)).unwrap();
    db.flush().unwrap();

    faults.fail_always(OpKind::Read);
    db.compact_until_settled().expect("no file was read");
    faults.clear();
    let files_after = db.stats().files_per_level.iter().sum::<usize>();
    assert!(files_after <= files_before / 4 + 2, "{files_before} files -> {files_after}");
    assert_eq!(db.stats().range_tombstones, 1, "the straddling file still needs it");
    assert_eq!(count(&db, &cf, b""), 1_000 * 20);
    assert_eq!(count(&db, &cf, &map_prefix(2_999)), 0);
    assert_eq!(count(&db, &cf, &map_prefix(3_000)), 20);

    db.compact_all().unwrap();
    assert_eq!(db.stats().range_tombstones, 0);
    assert_eq!(count(&db, &cf, b""), 1_000 * 20);
}

/// Consecutive generations of the map use disjoint entries, so a stale entry would show.
fn entries_of(generation: u32) -> impl Iterator<Item = u32> {
    (0..4).map(move |e| generation % 2 * 4 + e)
}

/// One writer clears a map and refills it with the next generation in one batch (a range delete
/// and its puts get consecutive sequence numbers); readers must always see one whole generation.
/// A reader whose snapshot predates the newest clear must still honour the clear before it.
#[test]
fn readers_never_see_a_map_half_cleared() {
    let storage = open_storage("memory://rd-race", &StorageOptions::default()).unwrap();
    let options = DbOptions { memtable_bytes: 64 << 10, auto_compaction: true, ..options() };
    let db = Arc::new(Db::open_with_storage(storage, options).unwrap());
    let cf = db.create_cf("map").unwrap();
    let refill = |generation: u32| {
        let mut batch = WriteBatch::new();
        batch.delete_prefix(&cf, &map_prefix(7));
        for entry in entries_of(generation) {
            batch.put(&cf, &map_entry(7, entry), generation.to_string().as_bytes());
        }
        batch
    };
    db.write(&refill(0)).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (db, cf, done) = (db.clone(), cf.clone(), done.clone());
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while rounds < 2_000 || !done.load(Ordering::Acquire) {
                    let mut it = db.iter_prefix(&cf, &map_prefix(7)).unwrap();
                    let mut values = Vec::new();
                    while it.valid() {
                        values.push(it.value().to_vec());
                        it.advance().unwrap();
                    }
                    assert_eq!(values.len(), 4, "scan saw {} entries", values.len());
                    assert!(values.windows(2).all(|w| w[0] == w[1]), "mixed generations");
                    let generation: u32 =
                        String::from_utf8(values[0].clone()).unwrap().parse().unwrap();
                    let keys: Vec<Vec<u8>> =
                        entries_of(generation).map(|e| map_entry(7, e)).collect();
                    let lookups: Vec<(&ColumnFamily, &[u8])> =
                        keys.iter().map(|k| (&cf, k.as_slice())).collect();
                    // A later generation may have replaced it by now, but never half of it.
                    let got: Vec<_> =
                        db.multi_get(&lookups).unwrap().into_iter().flatten().collect();
                    assert!(got.is_empty() || got.len() == 4, "{} of 4 entries", got.len());
                    assert!(got.windows(2).all(|w| w[0] == w[1]), "mixed generations");
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    for generation in 1..30_000 {
        db.write(&refill(generation)).unwrap();
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().expect("a reader failed") >= 2_000);
    }
}

/// Compaction writes sequence number 0 for the entries it leaves at the bottom (their trailers
/// then compress away), but not for one that an older range delete, still in the version for
/// other files, covers by range: with 0 it would fall under that delete and vanish.
#[test]
fn a_bottom_entry_newer_than_a_range_delete_over_it_stays_visible() {
    let storage = open_storage("memory://rd-seq-zero", &StorageOptions::default()).unwrap();
    let options = DbOptions { l0_compaction_trigger: 1, ..options() };
    let db = Db::open_with_storage(storage, options).unwrap();
    let cf = db.create_cf("map").unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..100 {
        batch.put(&cf, format!("a{i:03}").as_bytes(), b"old");
    }
    batch.put(&cf, b"0kept", b"old");
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();

    // The delete covers most of the old file (100 entries: too many to rewrite it for one
    // delete; "0kept" saves it from being dropped whole) and the key "f" written after it, which lands in a file of its own with nothing below it.
    db.delete_range(&cf, b"a", b"z").unwrap();
    db.put(&cf, b"f", b"new").unwrap();
    db.flush().unwrap();
    db.compact_until_settled().unwrap();

    assert_eq!(db.stats().range_tombstones, 1, "the old file still needs the delete");
    assert_eq!(count(&db, &cf, b"a"), 0);
    assert_eq!(db.get(&cf, b"f").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(count(&db, &cf, b""), 2);
}

/// The newest manifest of the database in `storage`: its name and size.
fn newest_manifest(storage: &StorageRef) -> (String, u64) {
    let files = forst::storage::block_on(storage.list("")).unwrap();
    let manifests = files.into_iter().filter(|f| f.path.starts_with("MANIFEST-"));
    let newest = manifests.max_by(|a, b| a.path.cmp(&b.path)).expect("a manifest");
    (newest.path, newest.size)
}

/// SST files in `storage` (data and tombstone files).
fn tables_in(storage: &StorageRef) -> usize {
    let files = forst::storage::block_on(storage.list("")).unwrap();
    files.iter().filter(|f| f.path.ends_with(".sst")).count()
}

/// 50,000 `MapState.clear()`s over maps in files, flushed in ten rounds: their tombstones live in
/// tombstone files, not in the manifest, so every manifest written stays small; the files merge
/// so they stay few, the deletes hold across a reopen, and once compaction applied them every
/// tombstone file is gone from storage too.
#[test]
fn fifty_thousand_map_clears_keep_every_manifest_write_small() {
    const MAPS: u32 = 50_000;
    const LIMIT: u64 = 64 << 10;
    let storage = open_storage("memory://rd-manifest-size", &StorageOptions::default()).unwrap();
    // One flush per round, and no compaction: every manifest written is one of the ten.
    let options = DbOptions { memtable_bytes: 16 << 20, ..options() };
    let db = Db::open_with_storage(storage.clone(), options.clone()).unwrap();
    let cf = db.create_cf("map").unwrap();
    let mut batch = WriteBatch::new();
    for user in 0..MAPS {
        batch.put(&cf, &map_entry(user, 0), b"v");
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();

    let mut manifests = std::collections::BTreeMap::new();
    for round in 0..10 {
        for user in (round..MAPS).step_by(10) {
            let mut batch = WriteBatch::new();
            batch.delete_prefix(&cf, &map_prefix(user));
            db.write(&batch).unwrap();
        }
        db.flush().unwrap();
        let (name, size) = newest_manifest(&storage);
        manifests.insert(name, size);
        let stats = db.stats();
        assert_eq!(stats.range_tombstones as u32, (round + 1) * MAPS / 10, "round {round}");
        assert!(
            (1..=8).contains(&stats.range_tombstone_files),
            "round {round}: {} tombstone files",
            stats.range_tombstone_files
        );
    }
    assert_eq!(manifests.len(), 10, "a manifest per flush: {manifests:?}");
    assert!(manifests.values().all(|&size| size < LIMIT), "manifest sizes: {manifests:?}");
    assert_eq!(count(&db, &cf, b""), 0, "every map cleared");
    db.close().unwrap();

    let db = Db::open_with_storage(storage.clone(), options).unwrap();
    let cf = db.cf("map").unwrap();
    assert_eq!(db.stats().range_tombstones as u32, MAPS, "reopened: the tombstones read back");
    assert_eq!(count(&db, &cf, b""), 0, "reopened: every map still cleared");
    assert_eq!(db.get(&cf, &map_entry(4_321, 0)).unwrap(), None);
    db.put(&cf, &map_entry(7, 0), b"again").unwrap();
    db.compact_all().unwrap();
    db.wait_for_file_deletions();
    let stats = db.stats();
    assert_eq!((stats.range_tombstones, stats.range_tombstone_files), (0, 0), "{stats:?}");
    let data_files: usize = stats.files_per_level.iter().sum();
    assert_eq!(tables_in(&storage), data_files, "tombstone files left on storage");
    assert!(newest_manifest(&storage).1 < LIMIT);
    assert_eq!(count(&db, &cf, b""), 1, "the map refilled after its clear");
}

/// Two range deletes flushed together (one tombstone file): the first deletes a whole file, which
/// compaction drops, so it is spent, while the second still covers part of a file. Entries
/// written over the first afterwards reach the bottom level, where compaction gives entries under
/// no live range delete sequence number 0. A reopen reads the tombstone file again: the spent
/// delete must not come back and delete them (the version forgets tombstones a file at a time).
#[test]
fn a_spent_range_delete_never_comes_back_to_delete_newer_entries() {
    let storage = open_storage("memory://rd-spent-reopen", &StorageOptions::default()).unwrap();
    let options = DbOptions { l0_compaction_trigger: 2, ..options() };
    let db = Db::open_with_storage(storage.clone(), options.clone()).unwrap();
    let (a, b) = (db.create_cf("a").unwrap(), db.create_cf("b").unwrap());
    let key = |i: u32| format!("k{i:03}").into_bytes();
    let mut batch = WriteBatch::new();
    (0..50).for_each(|i| batch.put(&a, &key(i), b"old"));
    (0..200).for_each(|i| batch.put(&b, &key(i), b"old"));
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();

    let mut batch = WriteBatch::new();
    batch.delete_range(&a, &key(0), &key(50));
    batch.delete_range(&b, &key(0), &key(10));
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_until_settled().unwrap();
    let stats = db.stats();
    assert_eq!(stats.files_per_level.iter().sum::<usize>(), 1, "a's file dropped: {stats:?}");
    assert_eq!(stats.range_tombstone_files, 1, "b's delete still needed: {stats:?}");

    for value in [&b"new"[..], b"newer"] {
        let mut batch = WriteBatch::new();
        (0..50).for_each(|i| batch.put(&a, &key(i), value));
        db.write(&batch).unwrap();
        db.flush().unwrap();
    }
    db.compact_until_settled().unwrap();
    assert_eq!(db.stats().files_per_level[0], 0, "a's level-0 files compacted");
    db.close().unwrap();

    let db = Db::open_with_storage(storage, options).unwrap();
    let (a, b) = (db.cf("a").unwrap(), db.cf("b").unwrap());
    assert_eq!(count(&db, &a, b""), 50, "entries written after the delete");
    assert_eq!(db.get(&a, &key(7)).unwrap().as_deref(), Some(&b"newer"[..]));
    assert_eq!(count(&db, &b, b""), 190);
    assert_eq!(db.get(&b, &key(3)).unwrap(), None);
}

/// A flush that merges every tombstone file into one while compactions make their range deletes
/// spent and forget them: the merged file must not bring a forgotten delete back, since a later
/// compaction gave the entries written after it sequence number 0, and it would delete them. The
/// flush is held at its tombstone file's write while two full compactions run.
#[test]
fn a_flush_never_brings_back_a_range_delete_forgotten_while_it_ran() {
    let inner = open_storage("memory://rd-flush-race", &StorageOptions::default()).unwrap();
    let faults = Arc::new(FaultStorage::new(inner));
    let db = Db::open_with_storage(faults.clone() as StorageRef, options()).unwrap();
    let cf = db.create_cf("map").unwrap();
    let key = |i: u32| format!("k{i:03}").into_bytes();
    let mut batch = WriteBatch::new();
    (0..100).for_each(|i| batch.put(&cf, &key(i), b"old"));
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();
    // Eight flushes with a range delete over old entries each: eight tombstone files. Entries
    // written after the first delete, over it, flush with it.
    for i in 0..8 {
        db.delete_range(&cf, &key(10 * i), &key(10 * i + 5)).unwrap();
        if i == 0 {
            (0..5).for_each(|k| db.put(&cf, &key(k), b"new").unwrap());
        }
        db.flush().unwrap();
    }
    assert_eq!(db.stats().range_tombstone_files, 8);

    // The flush writes no data file (its memtable holds a range delete only): its first put is
    // its tombstone file.
    faults.hold_on_threads(OpKind::Put, "forst-flush");
    std::thread::scope(|s| {
        let flush = s.spawn(|| {
            db.delete_range(&cf, &key(90), &key(95)).unwrap();
            db.flush().unwrap();
        });
        faults.wait_held(OpKind::Put, 1);
        // The first applies every delete, which are then spent and forgotten; the second finds
        // none and gives every entry sequence number 0.
        db.compact_all().unwrap();
        assert_eq!(db.stats().range_tombstone_files, 0);
        db.compact_all().unwrap();
        faults.release();
        flush.join().unwrap();
    });
    let expect = |db: &Db, cf: &ColumnFamily, when: &str| {
        assert_eq!(db.get(cf, &key(3)).unwrap().as_deref(), Some(&b"new"[..]), "{when}");
        assert_eq!(db.get(cf, &key(12)).unwrap(), None, "{when}");
        assert_eq!(db.get(cf, &key(92)).unwrap(), None, "{when}");
        assert_eq!(count(db, cf, b""), 100 - 8 * 5 + 5 - 5, "{when}");
    };
    expect(&db, &cf, "after the flush");
    assert_eq!(db.stats().range_tombstone_files, 1, "the new delete's file only");
    db.close().unwrap();
    let db = Db::open_with_storage(faults as StorageRef, options()).unwrap();
    expect(&db, &db.cf("map").unwrap(), "reopened");
}
