//! The fuzz targets' inputs on stable Rust (docs/FUZZING.md). Every file kept under
//! `fuzz/regressions/<target>/` (minimized crashers, and valid seeds named `valid-*`) goes
//! through the entry function its target calls: none may panic, and the valid seeds must still
//! decode. Inputs made from real encodings (SSTs, a manifest and batches written by the engine)
//! must decode too; with `FORST_FUZZ_SEEDS=<dir>` they are also written to `<dir>/<target>/`,
//! the fuzzers' starting corpora (`scripts/fuzz.sh`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use forst::executor::wire::{Op, RequestEncoder};
use forst::fuzzing;
use forst::lsm::column_family::id_for_name;
use forst::lsm::key::ValueKind;
use forst::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use forst::lsm::sst::{Compression, TableBuilder, TableOptions, TableProperties};
use forst::lsm::version::Bounds;
use forst::lsm::version::manifest::{self, FileRecord, ManifestData};
use forst::lsm::{Db, DbOptions};
use forst::storage::{StorageOptions, block_on, drop_memory_store, open_storage};

type Entry = fn(&[u8]) -> bool;

/// Each fuzz target (`fuzz/fuzz_targets/<name>.rs`) and the function it calls.
const TARGETS: [(&str, Entry); 6] = [
    ("batch_wire", fuzzing::batch_wire),
    ("sst_block", fuzzing::sst_block),
    ("sst_meta", fuzzing::sst_meta),
    ("filter", fuzzing::filter),
    ("sst_table", fuzzing::sst_table),
    ("manifest", fuzzing::manifest),
];

fn entry(target: &str) -> Entry {
    TARGETS.iter().find(|(name, _)| *name == target).map(|(_, entry)| *entry).unwrap()
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

#[test]
fn every_kept_input_runs_without_panic_and_valid_seeds_decode() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    for (target, entry) in TARGETS {
        let files = sorted_files(&root.join(target));
        assert!(
            files.iter().any(|f| f.file_name().unwrap().to_string_lossy().starts_with("valid-")),
            "fuzz/regressions/{target} keeps no valid seed"
        );
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let decoded = entry(&data);
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            assert!(!name.starts_with("valid-") || decoded, "{} no longer decodes", file.display());
        }
    }
}

#[test]
fn inputs_made_from_real_encodings_decode() {
    let mut seeds: Vec<(&str, Vec<u8>)> = Vec::new();
    for file in sst_files() {
        seeds.extend(fuzzing::table_seeds(&file));
        seeds.push(("sst_table", file));
    }
    seeds.extend(manifests().into_iter().map(|m| ("manifest", m)));
    seeds.extend(batches().into_iter().map(|b| ("batch_wire", b)));
    for (target, _) in TARGETS {
        assert!(seeds.iter().any(|(t, _)| *t == target), "no input made for {target}");
    }
    for (i, (target, data)) in seeds.iter().enumerate() {
        assert!(entry(target)(data), "input {i} for {target} does not decode");
    }
    if let Some(dir) = std::env::var_os("FORST_FUZZ_SEEDS") {
        for (i, (target, data)) in seeds.iter().enumerate() {
            let dir = Path::new(&dir).join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("seed-{i:03}")), data).unwrap();
        }
    }
}

/// SST files as flush and compaction write them: small and filtered, raw without filters with a
/// restart at every entry, and one of many tiny blocks whose index has several partitions.
fn sst_files() -> Vec<Vec<u8>> {
    let small = TableOptions::default();
    let plain = TableOptions {
        restart_interval: 1,
        bloom_bits_per_key: 0,
        compression: Compression::None,
        ..TableOptions::default()
    };
    let partitioned = TableOptions { block_size: 32, ..TableOptions::default() };
    [(small, 40, true), (plain, 12, true), (partitioned, 600, false)]
        .into_iter()
        .map(|(options, keys, versions)| {
            let mut builder = TableBuilder::new(options);
            for i in 0..keys as u32 {
                let key = format!("key{i:05}");
                // Versions newest first; every kind, and values that compress.
                if versions {
                    builder.add(key.as_bytes(), 300 + u64::from(i), ValueKind::Merge, b"a,b");
                }
                builder.add(key.as_bytes(), 200, ValueKind::Put, &b"value ".repeat(3));
                if versions && i % 5 == 0 {
                    builder.add(key.as_bytes(), 100, ValueKind::Delete, b"");
                }
            }
            builder.finish().unwrap().0.to_vec()
        })
        .collect()
}

/// The manifest a database writes (families, files, a range deletion), and one encoded with
/// everything a restore adds: bounds of both kinds, external files with locations, released
/// files.
fn manifests() -> Vec<Vec<u8>> {
    let name = "forst-fuzz-seed-manifest";
    let storage = open_storage(&format!("memory://{name}"), &StorageOptions::default()).unwrap();
    let written = {
        let db = Db::open_with_storage(storage.clone(), DbOptions::default()).unwrap();
        let cf = db.create_cf("state").unwrap();
        for i in 0..10u8 {
            db.put(&cf, &[b'k', i], b"v").unwrap();
        }
        db.flush().unwrap();
        db.delete_range(&cf, b"k\x02", b"k\x05").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
        let (number, _) =
            block_on(manifest::read_latest_manifest(storage.as_ref())).unwrap().unwrap();
        block_on(storage.read(&manifest::manifest_path(number))).unwrap().to_vec()
    };
    drop_memory_store(name);
    let record = |number: u64, bounds: Option<Bounds>, location: Option<String>| FileRecord {
        level: (number % 7) as u8,
        number,
        path: format!("{number:06}-ab.sst"),
        size: 4096,
        props: TableProperties {
            smallest_key: Bytes::from_static(b"k1"),
            largest_key: Bytes::from_static(b"k9"),
            min_seq: 1,
            max_seq: 40,
            entries: 10,
            size: 4096,
        },
        tombstones_applied_through: 9,
        bounds,
        owned: location.is_none(),
        location,
    };
    let restored = ManifestData {
        last_seq: 42,
        next_file_number: 9,
        column_families: vec![("default".into(), 0), ("state".into(), 7)],
        tombstones: Arc::new(FragmentedTombstones::new([
            RangeTombstone { start: "a".into(), end: "m".into(), seq: 5 },
            RangeTombstone { start: "f".into(), end: "z".into(), seq: 3 },
        ])),
        files: vec![
            record(3, None, None),
            record(4, Some(Bounds::inclusive("k2".into(), "k8".into())), None),
            record(
                5,
                Some(Bounds { smallest: "k2".into(), end: "k3".into(), end_exclusive: true }),
                Some("memory://forst-fuzz-elsewhere/chk/000005-ab.sst".into()),
            ),
        ],
        released: vec!["000002-ab.sst".into()],
        hand_overs: vec![("000002-ab.sst".into(), 3)],
    };
    vec![written, manifest::encode(&restored).to_vec()]
}

/// Batches of every op on the families `fuzzing::batch_wire` creates, as Java encodes them.
fn batches() -> Vec<Vec<u8>> {
    let [a, b] = ["fuzz-a", "fuzz-b"].map(|name| id_for_name(name, |_| false));
    let mut reads = RequestEncoder::new();
    reads
        .push(Op::Get, a, b"k\x01", None)
        .push(Op::Get, b, b"k\x09", None)
        .push(Op::Scan { limit: 2 }, a, b"k", None)
        .push(Op::Scan { limit: 10 }, a, b"k", Some(b"k\x01"))
        .push(Op::PrefixExists, b, b"k", None);
    let mut mixed = RequestEncoder::new();
    mixed
        .push(Op::Put, a, b"k\x07", Some(b"new"))
        .push(Op::Merge, a, b"k\x02", Some(b"y"))
        .push(Op::Get, a, b"k\x02", None)
        .push(Op::Delete, b, b"k\x00", None)
        .push(Op::DeletePrefix, b, b"k", None)
        .push(Op::Scan { limit: 5 }, b, b"", None)
        .push(Op::PrefixExists, b, b"k", None)
        .push(Op::Get, a, b"k\x07", None);
    vec![reads.finish(), mixed.finish(), RequestEncoder::new().finish()]
}
