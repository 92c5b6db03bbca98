//! A batch's reads wait for storage together: the gets, scans and prefix checks of one batch put
//! their requests in flight at once, so a batch costs a few round trips to the DFS whatever the
//! number of its reads. Counted from the latency store's request log, never from wall time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use forst::executor::wire::{Op, RequestEncoder, Response, decode_responses};
use forst::executor::{FamilyRegistry, execute_batch};
use forst::lsm::{ColumnFamily, Db, DbOptions};
use forst::storage::{Latency, LatencyStorage, StorageOptions, StorageRef, open_storage};

const MAPS: usize = 100;
const ENTRIES: usize = 20;

fn options() -> DbOptions {
    DbOptions {
        memtable_bytes: 1 << 20,
        target_file_bytes: 32 << 10,
        // Compactions run only where the test calls them: none may add requests to the batch's.
        auto_compaction: false,
        ..DbOptions::default()
    }
}

fn map_prefix(map: usize) -> Vec<u8> {
    format!("map{map:03}\0").into_bytes()
}

fn entry_key(map: usize, entry: usize) -> Vec<u8> {
    [map_prefix(map), format!("entry{entry:02}").into_bytes()].concat()
}

/// About 100 bytes that do not compress, so that the maps fill many blocks and files.
fn value(map: usize, entry: usize, version: &str) -> Vec<u8> {
    let mut x = (map * 1000 + entry) as u64 | 1;
    let noise: String = (0..12)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{x:016x}")
        })
        .collect();
    format!("{map}/{entry}/{version}/{}", &noise[..90]).into_bytes()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes (or deletes, `None`) `key` in the store and in the model.
fn apply(db: &Db, maps: &ColumnFamily, model: &mut Model, key: Vec<u8>, value: Option<Vec<u8>>) {
    match value {
        Some(value) => {
            db.put(maps, &key, &value).unwrap();
            model.insert(key, value);
        }
        None => {
            db.delete(maps, &key).unwrap();
            model.remove(&key);
        }
    }
}

/// 100 maps of 20 entries: entries 0-9 in the bottom level, 10-19 in a level-0 file.
fn write_files(db: &Db, maps: &ColumnFamily, model: &mut Model) {
    for map in 0..MAPS {
        for entry in 0..ENTRIES / 2 {
            apply(db, maps, model, entry_key(map, entry), Some(value(map, entry, "old")));
        }
    }
    db.flush().unwrap();
    db.compact_all().unwrap();
    for map in 0..MAPS {
        for entry in ENTRIES / 2..ENTRIES {
            apply(db, maps, model, entry_key(map, entry), Some(value(map, entry, "l0")));
        }
    }
    db.flush().unwrap();
}

/// Overwrites and deletes in the memtable, over the files' entries.
fn write_memtable(db: &Db, maps: &ColumnFamily, model: &mut Model) {
    for map in 0..MAPS {
        apply(db, maps, model, entry_key(map, 0), Some(format!("{map}/0/new").into_bytes()));
        apply(db, maps, model, entry_key(map, 1), None);
    }
}

#[test]
fn a_batch_of_100_prefix_scans_costs_at_most_three_round_trips() {
    let inner = open_storage("memory://batch-io-scans", &StorageOptions::default()).unwrap();
    let latency =
        Arc::new(LatencyStorage::new(inner, Latency::per_call(Duration::from_micros(200))));
    let storage: StorageRef = latency.clone();

    let mut expected = Model::new();
    let db = Db::open_with_storage(storage.clone(), options()).unwrap();
    write_files(&db, &db.create_cf("maps").unwrap(), &mut expected);
    let stats = db.stats();
    assert!(stats.files_per_level[0] >= 1, "entries 10-19 sit in level 0: {stats:?}");
    assert!(stats.files_per_level[1..].iter().sum::<usize>() >= 2, "and below: {stats:?}");
    db.close().unwrap();

    // Reopened: no table open, nothing cached, so every block a scan needs comes from storage.
    let db = Db::open_with_storage(storage, options()).unwrap();
    let families = FamilyRegistry::new();
    let maps_cf = db.cf("maps").unwrap();
    write_memtable(&db, &maps_cf, &mut expected);
    let maps = families.register(maps_cf);
    let mut request = RequestEncoder::new();
    let mut ops = Vec::new();
    for map in 0..MAPS {
        let prefix = map_prefix(map);
        request.push(Op::Scan { limit: 50 }, maps, &prefix, None);
        request.push(Op::PrefixExists, maps, &prefix, None);
        ops.extend([Op::Scan { limit: 50 }, Op::PrefixExists]);
    }
    request.push(Op::Get, maps, &entry_key(7, 12), None);
    ops.push(Op::Get);

    latency.reset_stats();
    let mut response = vec![0u8; 4 << 20];
    let written = execute_batch(&db, &families, &request.finish(), &mut response).unwrap();
    let requests = latency.stats();

    let responses = decode_responses(&response[..written as usize], &ops).unwrap();
    for (map, pair) in responses.chunks(2).take(MAPS).enumerate() {
        let prefix = map_prefix(map);
        let want: Vec<_> = expected
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(want.len(), ENTRIES - 1);
        assert_eq!(pair[0], Response::Scan { entries: want, has_more: false }, "map {map}");
        assert_eq!(pair[1], Response::Exists(true), "map {map}");
    }
    assert_eq!(responses[2 * MAPS], Response::Value(expected.get(&entry_key(7, 12)).cloned()));

    assert!(requests.reads >= 3, "the batch read the files from storage: {requests:?}");
    // Scans of neighbouring maps share blocks, and each block is read once: the reads grow with
    // the files (per file: its opening, its index partitions, one read of the blocks the scans
    // start in), not with the scans (a read per scan per file would be hundreds).
    let files: usize = db.stats().files_per_level.iter().sum();
    assert!(requests.reads <= 25, "{requests:?} from {files} files");
    // Opening a table (one read of its tail), its index partition, then the data blocks.
    assert!(
        requests.round_trips <= 3,
        "{} round trips for {} reads: {requests:?}",
        requests.round_trips,
        requests.reads
    );
}
