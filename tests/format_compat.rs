//! Format compatibility at the engine level: a database written by each released version (its
//! manifest and SSTs: puts, deletes, list merges, a range delete and a prefix delete over data
//! in lower levels) is committed under `tests/fixtures/compat/<version>/db` and read by every
//! later version, every entry of every family equal to what the writer wrote. Flink-level
//! checkpoints and savepoints have their own fixtures (`CompatibilityITCase`).
//!
//! A release adds its fixture with
//! `FORST_WRITE_COMPAT_FIXTURE=1 cargo test --test format_compat -- --ignored`; a fixture is never
//! rewritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use forst::lsm::version::manifest::{self, ManifestData};
use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};

const FAMILIES: [&str; 3] = ["value", "list", "map"];
const KEYS: u32 = 400;
const USERS: u32 = 40;
const ENTRIES: u32 = 10;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat")
}

fn options() -> DbOptions {
    DbOptions { memtable_bytes: 16 << 10, auto_compaction: false, ..DbOptions::default() }
}

fn value_key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn map_key(user: u32, entry: u32) -> Vec<u8> {
    format!("user{user:03}|e{entry:02}").into_bytes()
}

/// Writes the fixture's database in three rounds: the first two compacted into the lower
/// levels, the third (deletes, merges, a range delete and a prefix delete) left in level 0.
fn write(db: &Db) {
    let cf = |name: &str| db.cf(name).unwrap();
    let (values, lists, maps) = (cf("value"), cf("list"), cf("map"));
    for round in 0..2u32 {
        let mut batch = WriteBatch::new();
        for i in 0..KEYS {
            batch.put(&values, &value_key(i), format!("v{i}-r{round}").as_bytes());
            batch.merge(&lists, &value_key(i % 50), format!("e{i}-r{round}").as_bytes());
        }
        for user in 0..USERS {
            for entry in 0..ENTRIES {
                batch.put(
                    &maps,
                    &map_key(user, entry),
                    format!("m{user}.{entry}-r{round}").as_bytes(),
                );
            }
        }
        db.write(&batch).unwrap();
        db.flush().unwrap();
    }
    db.compact_all().unwrap();
    let mut batch = WriteBatch::new();
    for i in (0..KEYS).step_by(7) {
        batch.delete(&values, &value_key(i));
    }
    for i in 0..10 {
        batch.merge(&lists, &value_key(i), b"last");
    }
    batch.delete_range(&values, &value_key(100), &value_key(150));
    batch.delete_prefix(&maps, b"user007|");
    batch.delete_range(&maps, &map_key(20, 3), &map_key(22, 5));
    db.write(&batch).unwrap();
    db.flush().unwrap();
}

/// What the database holds after `write`, per family, computed independently of the engine.
fn expected() -> BTreeMap<&'static str, BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut values = BTreeMap::new();
    let mut lists: BTreeMap<Vec<u8>, Vec<String>> = BTreeMap::new();
    let mut maps = BTreeMap::new();
    for round in 0..2u32 {
        for i in 0..KEYS {
            values.insert(value_key(i), format!("v{i}-r{round}").into_bytes());
            lists.entry(value_key(i % 50)).or_default().push(format!("e{i}-r{round}"));
        }
        for user in 0..USERS {
            for entry in 0..ENTRIES {
                maps.insert(map_key(user, entry), format!("m{user}.{entry}-r{round}").into_bytes());
            }
        }
    }
    for i in (0..KEYS).step_by(7) {
        values.remove(&value_key(i));
    }
    for i in 0..10 {
        lists.get_mut(&value_key(i)).unwrap().push("last".to_string());
    }
    values.retain(|k, _| !(value_key(100) <= *k && *k < value_key(150)));
    maps.retain(|k, _| !k.starts_with(b"user007|"));
    maps.retain(|k, _| !(map_key(20, 3) <= *k && *k < map_key(22, 5)));
    // Flink's list layout: elements joined by ','.
    let lists = lists.into_iter().map(|(k, v)| (k, v.join(",").into_bytes())).collect();
    BTreeMap::from([("value", values), ("list", lists), ("map", maps)])
}

fn contents(db: &Db, cf: &ColumnFamily) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut entries = BTreeMap::new();
    let mut it = db.iter(cf, None, None).unwrap();
    while it.valid() {
        entries.insert(it.key().to_vec(), it.value().to_vec());
        it.advance().unwrap();
    }
    entries
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn url(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

#[test]
fn every_committed_fixture_reads_as_written() {
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir(fixtures()).unwrap().map(|e| e.unwrap().path()).collect();
    versions.sort();
    assert!(!versions.is_empty(), "no fixtures under {}", fixtures().display());
    let expected = expected();
    for version in versions {
        // A copy: opening writes a new manifest and a LOCK, and the fixture stays as committed.
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&version.join("db"), dir.path());
        let db = Db::open(&url(dir.path()), options()).unwrap();
        assert_contents(&db, &expected, &version);
        // The first flush moves range deletes a manifest of format 5 or older listed itself into
        // a tombstone file (format 6); they hold after a reopen as before.
        let values = db.cf("value").unwrap();
        db.put(&values, &value_key(1), &expected["value"][&value_key(1)]).unwrap();
        db.flush().unwrap();
        assert_eq!(db.stats().range_tombstone_files, 1, "{}", version.display());
        let manifest = newest_manifest(dir.path());
        assert!(manifest.tombstones.is_empty(), "{}: tombstones left inline", version.display());
        db.close().unwrap();
        let db = Db::open(&url(dir.path()), options()).unwrap();
        assert_contents(&db, &expected, &version);
        db.close().unwrap();
    }
}

fn assert_contents(db: &Db, expected: &BTreeMap<&str, BTreeMap<Vec<u8>, Vec<u8>>>, version: &Path) {
    for family in FAMILIES {
        let cf = db.cf(family).unwrap_or_else(|| panic!("{version:?} has no family {family}"));
        assert!(
            contents(db, &cf) == expected[family],
            "family {family} of the fixture {} differs from what it was written with",
            version.display()
        );
    }
}

/// The newest manifest in the database directory `dir`, decoded.
fn newest_manifest(dir: &Path) -> ManifestData {
    let newest = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("MANIFEST-"))
        .max()
        .expect("a manifest");
    manifest::decode("manifest", std::fs::read(newest).unwrap().into()).unwrap()
}

/// The write above, applied to a fresh database, gives the expected contents: the fixture's
/// reader and writer agree with each other on this version.
#[test]
fn the_fixture_writer_writes_what_the_reader_expects() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&url(dir.path()), options()).unwrap();
    for family in FAMILIES {
        db.create_cf(family).unwrap();
    }
    write(&db);
    let expected = expected();
    for family in FAMILIES {
        assert!(contents(&db, &db.cf(family).unwrap()) == expected[family], "family {family}");
    }
    db.close().unwrap();
}

#[test]
#[ignore = "writes this version's fixture: FORST_WRITE_COMPAT_FIXTURE=1, once per release"]
fn write_this_versions_fixture() {
    if std::env::var_os("FORST_WRITE_COMPAT_FIXTURE").is_none() {
        return;
    }
    let into = fixtures().join(env!("CARGO_PKG_VERSION")).join("db");
    assert!(!into.exists(), "{} exists: a fixture is never rewritten", into.display());
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&url(dir.path()), options()).unwrap();
    for family in FAMILIES {
        db.create_cf(family).unwrap();
    }
    write(&db);
    db.close().unwrap();
    copy_dir(dir.path(), &into);
    std::fs::remove_file(into.join("LOCK")).ok();
}
