//! Dynamic level sizes (`dynamic-level-sizes`) at the engine level: after a load with overwrites,
//! deletes and a range delete, the levels above the base level are empty, each level holds about
//! 1/multiplier of the one below (so the data beside the last level adds little to it), and every
//! key reads back as a model of the writes says, also after a reopen.

use std::collections::BTreeMap;

use forst::lsm::{ColumnFamily, Db, DbOptions};
use forst::storage::StorageRef;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

mod support;
use forst::test_support::incompressible;
use support::fresh_memory;

const KEYS: u32 = 30_000;
const OPS: u32 = 90_000;
/// Writes between two flushes (each followed by compactions until none is due).
const FLUSH_EVERY: u32 = 300;
const MULTIPLIER: u64 = 10;
const L1_TARGET: u64 = 32 << 10;
const LAST: usize = 6;

fn options() -> DbOptions {
    DbOptions {
        memtable_bytes: 1 << 20,
        target_file_bytes: 8 << 10,
        l0_compaction_trigger: 2,
        l1_target_bytes: L1_TARGET,
        level_size_multiplier: MULTIPLIER,
        dynamic_level_sizes: true,
        auto_compaction: false,
        ..DbOptions::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Puts (most of them overwrites once the key space is used), deletes and, two thirds in, a
/// range delete over a tenth of the keys; flushed and compacted as background compaction would.
fn load(db: &Db, cf: &ColumnFamily) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(13);
    for op in 0..OPS {
        let k = key(rng.random_range(0..KEYS));
        if rng.random_range(0..100) < 85 {
            let value = incompressible(u64::from(op) + 1, rng.random_range(60..140));
            db.put(cf, &k, &value).unwrap();
            model.insert(k, value);
        } else {
            db.delete(cf, &k).unwrap();
            model.remove(&k);
        }
        if op == OPS * 2 / 3 {
            let (start, end) = (key(KEYS / 2), key(KEYS / 2 + KEYS / 10));
            db.delete_range(cf, &start, &end).unwrap();
            model.retain(|k, _| *k < start || *k >= end);
        }
        if op % FLUSH_EVERY == FLUSH_EVERY - 1 {
            db.flush().unwrap();
            db.compact_until_settled().unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_until_settled().unwrap();
    model
}

fn assert_reads_back(db: &Db, cf: &ColumnFamily, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    for i in 0..KEYS {
        let k = key(i);
        let got = db.get(cf, &k).unwrap();
        assert_eq!(got.as_deref(), model.get(&k).map(Vec::as_slice), "{when}: key {i}");
    }
    let mut it = db.iter_prefix(cf, b"key").unwrap();
    let mut scanned = 0;
    for (k, v) in model {
        assert!(it.valid(), "{when}: scan ends before {}", String::from_utf8_lossy(k));
        assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()), "{when}: scan");
        it.advance().unwrap();
        scanned += 1;
    }
    assert!(!it.valid(), "{when}: scan finds more than the {scanned} live keys");
}

/// The shape dynamic targets give after compaction settles: nothing above the base level, each
/// level within its share of the last, little beside the last level.
fn assert_dynamic_shape(bytes: &[u64]) {
    let last = bytes[LAST];
    let base = (1..=LAST).find(|&l| bytes[l] > 0).unwrap();
    // The base level is the deepest whose target (last / multiplier^k) is within L1's target.
    let mut expected_base = LAST;
    let mut size = last;
    while expected_base > 1 && size > L1_TARGET {
        expected_base -= 1;
        size /= MULTIPLIER;
    }
    assert!(expected_base > 1, "enough data to leave L1 empty: {bytes:?}");
    assert!(base >= expected_base, "levels above the base level L{expected_base}: {bytes:?}");
    for (level, &held) in bytes.iter().enumerate().take(LAST).skip(base) {
        let target = (last / MULTIPLIER.pow((LAST - level) as u32)).max(L1_TARGET);
        assert!(held <= target, "L{level} holds {held} over its target {target}: {bytes:?}");
    }
    let sorted: u64 = bytes[1..].iter().sum();
    assert!(sorted as f64 <= 1.2 * last as f64, "space amplification: {bytes:?}");
}

#[test]
fn dynamic_levels_keep_levels_above_the_base_empty_and_every_key_reads_back() {
    let storage: StorageRef = fresh_memory("dynamic-levels");
    let db = Db::open_with_storage(storage.clone(), options()).unwrap();
    let cf = db.create_cf("state").unwrap();
    let model = load(&db, &cf);

    let stats = db.stats();
    let bytes = stats.bytes_per_level;
    assert_eq!(bytes[0], 0, "L0 compacted: {bytes:?}");
    assert_dynamic_shape(&bytes);
    // L0 went straight into the base level (the last one while the DB was small): no compaction
    // ever wrote above it.
    let written = stats.compaction_bytes_written_per_level;
    let base = (1..=LAST).find(|&l| bytes[l] > 0).unwrap();
    assert!(written[1..base].iter().all(|&w| w == 0), "written per level: {written:?}");
    assert!(written[LAST] > 0, "written per level: {written:?}");
    assert_reads_back(&db, &cf, &model, "after the load");

    db.close().unwrap();
    drop(db);
    let db = Db::open_with_storage(storage, options()).unwrap();
    let cf = db.cf("state").unwrap();
    assert_eq!(db.stats().bytes_per_level, bytes, "the manifest keeps the levels");
    assert_reads_back(&db, &cf, &model, "after a reopen");
}

/// A DB loaded with static targets (the default: L0 into L1, most data above the last level)
/// and opened again with dynamic ones moves its data down into the dynamic shape, with no write.
#[test]
fn turning_dynamic_sizes_on_moves_a_static_dbs_data_into_the_dynamic_shape() {
    let storage: StorageRef = fresh_memory("static-then-dynamic");
    let fixed = DbOptions { dynamic_level_sizes: false, ..options() };
    let db = Db::open_with_storage(storage.clone(), fixed).unwrap();
    let cf = db.create_cf("state").unwrap();
    let model = load(&db, &cf);
    let bytes = db.stats().bytes_per_level;
    assert!(bytes[1] > 0 && bytes[LAST] == 0, "static targets fill from L1: {bytes:?}");
    db.close().unwrap();
    drop(db);

    let db = Db::open_with_storage(storage, options()).unwrap();
    let cf = db.cf("state").unwrap();
    db.compact_until_settled().unwrap();
    let bytes = db.stats().bytes_per_level;
    assert_dynamic_shape(&bytes);
    assert_reads_back(&db, &cf, &model, "after the move");
}
