//! Reading a checkpoint where it lies (`CheckpointReader`, behind `ForStTool`): the reader sees
//! exactly what the checkpointed database held (deletes, merges, range deletes, several levels),
//! clipped to a key-group range, and writes nothing: the checkpoint directory's listing, sizes,
//! bytes and modification times are the same after opening, scanning and verifying. `verify`
//! names the file with a flipped byte and the file that is missing, and a missing directory is
//! not created.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use forst::lsm::tombstone_files::TOMBSTONE_LEVEL;
use forst::lsm::{CheckpointReader, ColumnFamily, Db, DbOptions, KeyGroups, RestoreSource};
use forst::storage::{LocalStorage, StorageRef};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const FAMILIES: [&str; 3] = ["counts", "lists", "maps"];

type Model = BTreeMap<(String, Vec<u8>), Vec<u8>>;

/// Small memtables and files, so that the checkpoint has several files on several levels.
fn small_options() -> DbOptions {
    DbOptions {
        memtable_bytes: 16 << 10,
        target_file_bytes: 8 << 10,
        l0_compaction_trigger: 2,
        l1_target_bytes: 64 << 10,
        ..DbOptions::default()
    }
}

/// A Flink-style key: a 1-byte key group first.
fn key(group: u8, i: u64) -> Vec<u8> {
    let mut key = vec![group];
    key.extend_from_slice(format!("key-{i:06}").as_bytes());
    key
}

/// Random puts, merges and deletes over all 128 key groups, then a range delete of key group
/// 7 in "counts"; returns what a reader must see.
fn write(db: &Db, steps: usize) -> Model {
    let families: Vec<ColumnFamily> = FAMILIES.iter().map(|n| db.create_cf(n).unwrap()).collect();
    let mut model = Model::new();
    let mut rng = StdRng::seed_from_u64(35);
    for _ in 0..steps {
        let key = key(rng.random_range(0..128), rng.random_range(0..300));
        let f = rng.random_range(0..FAMILIES.len());
        let (cf, name) = (&families[f], FAMILIES[f].to_string());
        let value = format!("v{}", rng.random_range(0..1_000_000)).into_bytes();
        match rng.random_range(0..10) {
            0 => {
                db.delete(cf, &key).unwrap();
                model.remove(&(name, key));
            }
            1..=4 if name == "lists" => {
                db.merge(cf, &key, &value).unwrap();
                let entry = model.entry((name, key)).or_default();
                if !entry.is_empty() {
                    entry.push(b',');
                }
                entry.extend_from_slice(&value);
            }
            _ => {
                db.put(cf, &key, &value).unwrap();
                model.insert((name, key), value);
            }
        }
    }
    db.delete_range(&families[0], &[7], &[8]).unwrap();
    model.retain(|(name, key), _| !(name == "counts" && key[0] == 7));
    model
}

/// A checkpoint of a database in `root/db`, its files linked into `root/chk` as a checkpoint
/// storage would keep them; the database is closed. Returns the manifest and the file names.
fn checkpointed(root: &Path, model_steps: usize) -> (bytes::Bytes, Vec<String>, Model) {
    let db = Db::open(&format!("file://{}", root.join("db").display()), small_options()).unwrap();
    let model = write(&db, model_steps);
    let mut checkpoint = db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let dest: StorageRef = Arc::new(LocalStorage::new(root.join("chk"), false).unwrap());
    let names: Vec<String> = checkpoint.files().unwrap().into_iter().map(|(n, _)| n).collect();
    let copies: Vec<(String, String)> = names.iter().map(|n| (n.clone(), n.clone())).collect();
    checkpoint.copy_files(&copies, dest.as_ref()).unwrap();
    let manifest = checkpoint.manifest().unwrap();
    drop(checkpoint);
    db.close().unwrap();
    (manifest, names, model)
}

/// The reader of the checkpoint whose files are in `dir`, seeing `groups`.
fn reader(
    manifest: &bytes::Bytes,
    names: &[String],
    dir: &Path,
    groups: KeyGroups,
) -> CheckpointReader {
    let storage: StorageRef = Arc::new(LocalStorage::existing(dir, false).unwrap());
    let files = names.iter().map(|n| (n.clone(), (storage.clone(), n.clone()))).collect();
    let source = RestoreSource { manifest: manifest.clone(), files, key_groups: groups };
    CheckpointReader::open(source, 1).unwrap()
}

fn read_all(reader: &CheckpointReader) -> Model {
    let mut seen = Model::new();
    for name in FAMILIES {
        let mut it = reader.iter(name, None, None).unwrap();
        while it.valid() {
            seen.insert((name.to_string(), it.key().to_vec()), it.value().to_vec());
            it.advance().unwrap();
        }
    }
    seen
}

/// Every entry under `dir`: name to (size, modification time, bytes).
fn snapshot(dir: &Path) -> BTreeMap<String, (u64, SystemTime, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        let bytes = if meta.is_file() { std::fs::read(entry.path()).unwrap() } else { Vec::new() };
        let name = entry.file_name().into_string().unwrap();
        out.insert(name, (meta.len(), meta.modified().unwrap(), bytes));
    }
    out
}

#[test]
fn reads_a_checkpoint_in_place_exactly_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (manifest, names, model) = checkpointed(tmp.path(), 6_000);
    let chk = tmp.path().join("chk");
    let before = snapshot(&chk);
    let dir_mtime = std::fs::metadata(&chk).unwrap().modified().unwrap();

    let all = reader(&manifest, &names, &chk, KeyGroups::new(0, 127));
    let files = all.files();
    assert_eq!(files.len(), names.len());
    let (data, tombstones): (Vec<_>, Vec<_>) =
        files.iter().partition(|f| f.level != TOMBSTONE_LEVEL as usize);
    assert!(data.iter().map(|f| f.level).max().unwrap() > 0, "files on one level: {files:?}");
    assert!(data.iter().all(|f| f.family.as_deref().is_some_and(|n| FAMILIES.contains(&n))));
    assert_eq!(tombstones.len(), 1, "the range deletion's file: {files:?}");
    assert_eq!(tombstones[0].family, None);
    let on_disk: u64 = before.values().map(|(len, _, _)| len).sum();
    assert_eq!(files.iter().map(|f| f.size).sum::<u64>(), on_disk);
    assert_eq!(all.families().len(), FAMILIES.len());
    assert!(read_all(&all) == model, "the reader sees other state than the database held");
    assert_eq!(all.verify(), Vec::<String>::new());
    assert!(all.iter("nope", None, None).is_err());

    // Through a narrower range, as the subtask that owned only those key groups saw it.
    let half = reader(&manifest, &names, &chk, KeyGroups::new(0, 63));
    let expected: Model =
        model.iter().filter(|((_, k), _)| k[0] < 64).map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(read_all(&half) == expected, "the clipped reader sees other state");
    drop((all, half));

    assert!(snapshot(&chk) == before, "the checkpoint directory changed");
    assert_eq!(std::fs::metadata(&chk).unwrap().modified().unwrap(), dir_mtime);
}

#[test]
fn verify_names_a_flipped_byte_and_a_missing_file_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (manifest, names, _) = checkpointed(tmp.path(), 3_000);
    let chk = tmp.path().join("chk");
    let all = KeyGroups::new(0, 127);
    let largest =
        names.iter().max_by_key(|n| std::fs::metadata(chk.join(n)).unwrap().len()).unwrap().clone();

    // A flipped byte in the first data block.
    let flipped = copy_flipping_a_byte(&chk, &tmp.path().join("flipped"), &names, &largest);
    let problems = reader(&manifest, &names, &flipped, all).verify();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains(&largest) && problems[0].contains("checksum"), "{problems:?}");

    let missing = tmp.path().join("missing");
    std::fs::create_dir(&missing).unwrap();
    for name in &names {
        std::fs::hard_link(chk.join(name), missing.join(name)).unwrap();
    }
    std::fs::remove_file(missing.join(&largest)).unwrap();
    let problems = reader(&manifest, &names, &missing, all).verify();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains(&largest), "{problems:?}");

    // A damaged file of range deletes: reads of state fail naming it rather than show deleted
    // entries, and verify names it.
    let tombstones = reader(&manifest, &names, &chk, all)
        .files()
        .into_iter()
        .find(|f| f.level == TOMBSTONE_LEVEL as usize)
        .expect("a tombstone file")
        .name;
    let damaged = copy_flipping_a_byte(&chk, &tmp.path().join("damaged"), &names, &tombstones);
    let damaged = reader(&manifest, &names, &damaged, all);
    let read = damaged.iter("counts", None, None).err().expect("a read over damaged deletes");
    assert!(read.to_string().contains(&tombstones), "{read}");
    let problems = damaged.verify();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains(&tombstones), "{problems:?}");

    // Files whose directory is gone: every one is reported, and the directory stays gone.
    let gone = tmp.path().join("gone");
    let problems = reader(&manifest, &names, &gone, all).verify();
    assert_eq!(problems.len(), names.len(), "{problems:?}");
    assert!(!gone.exists(), "opening the reader created the directory");
}

/// Copies the files `names` of `from` into a new directory `to` (each copy its own bytes, not a
/// link), with a byte of the first block of `damaged` flipped. Returns `to`.
fn copy_flipping_a_byte(from: &Path, to: &Path, names: &[String], damaged: &str) -> PathBuf {
    std::fs::create_dir(to).unwrap();
    for name in names {
        std::fs::write(to.join(name), std::fs::read(from.join(name)).unwrap()).unwrap();
    }
    let mut bytes = std::fs::read(to.join(damaged)).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(to.join(damaged), bytes).unwrap();
    to.to_path_buf()
}
