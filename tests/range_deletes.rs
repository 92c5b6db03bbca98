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
