//! Index and filter memory stays within the memory budget (the block cache, and what memtables
//! leave idle of their share) however many tables are open: a database of 1000+ small SST files
//! whose indexes and filters together are several times the budget, read back key by key. Alone
//! in its test binary, because it reads the process-wide gauge of live index and filter memory
//! (`index_filter_live_bytes`), which counts every decoded index and filter wherever it is held,
//! independently of the cache's own accounting.

use std::sync::Arc;

use forst::lsm::sst::{Compression, TableOptions, index_filter_live_bytes};
use forst::lsm::{Db, DbOptions, DbStats};
use forst::storage::{LocalStorage, StorageRef};

const KEYS: u32 = 200_000;
const CACHE: u64 = 1 << 20;
const MEMTABLE: u64 = 256 << 10;
/// The memtables' share of the budget: the active memtable and two frozen ones.
const MEMTABLES: u64 = 3 * MEMTABLE;

fn key(i: u32) -> Vec<u8> {
    // Scattered, so flushed files overlap and compaction keeps rewriting them.
    format!("key-{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000_007).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i:010}").into_bytes()
}

fn options() -> DbOptions {
    DbOptions {
        memtable_bytes: MEMTABLE,
        max_frozen_memtables: 2,
        target_file_bytes: 5 << 10,
        l1_target_bytes: 2 << 20,
        block_cache_bytes: CACHE,
        // Small blocks make the index large next to the data, as a DB of long keys would.
        table: TableOptions { block_size: 256, ..TableOptions::default() },
        ..DbOptions::default()
    }
}

/// What the engine holds of indexes and filters, next to the memtables, must fit the budget it is
/// charged to. Beyond it: the partitions one read has in flight (a few KiB) and the memtables'
/// growth since their last charge (1/16 of a memtable).
fn assert_within_budget(stats: &DbStats, when: &str) {
    let budget = CACHE + MEMTABLES;
    let slack = (64 << 10) + MEMTABLE / 16;
    let live = index_filter_live_bytes() + stats.memtable_bytes;
    assert!(live <= budget + slack, "{when}: {live} bytes of index, filter and memtables alive");
    let charged = stats.block_cache_bytes
        + stats.table_reader_bytes
        + stats.io_buffer_bytes
        + stats.memtable_bytes;
    // Reservations (readers, I/O buffers) leave blocks at least 1/4 of the cache; past that the
    // charge overshoots by what they reserve beyond 3/4 of it (`BlockCache::resize`).
    let reserved = stats.table_reader_bytes + stats.io_buffer_bytes;
    let overshoot = reserved.saturating_sub(CACHE - CACHE / 4);
    assert!(charged <= budget + slack + overshoot, "{when}: {charged} bytes charged; {stats:?}");
    let room = CACHE + stats.index_filter_room_bytes;
    assert!(stats.block_cache_index_filter_bytes <= room, "{when}: {stats:?}");
    assert!(stats.index_filter_room_bytes + stats.memtable_bytes <= MEMTABLES + slack);
}

#[test]
fn index_and_filter_memory_stays_within_the_cache_with_a_thousand_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let storage: StorageRef = Arc::new(LocalStorage::new(tmp.path(), false).unwrap());
    let db = Db::open_with_storage(storage, options()).unwrap();
    let cf = db.create_cf("state").unwrap();
    for i in 0..KEYS {
        db.put(&cf, &key(i), &value(i)).unwrap();
        if i % 20_000 == 0 {
            assert_within_budget(&db.stats(), &format!("loading, key {i}"));
        }
    }
    db.flush().unwrap();
    db.compact_until_settled().unwrap();
    let loaded = db.stats();
    assert!(loaded.live_sst_files() >= 1000, "{} files", loaded.live_sst_files());
    assert_within_budget(&loaded, "loaded");

    for i in 0..KEYS {
        assert_eq!(db.get(&cf, &key(i)).unwrap().as_deref(), Some(&value(i)[..]), "key {i}");
        if i % 20_000 == 0 {
            assert_within_budget(&db.stats(), &format!("reading, key {i}"));
        }
    }
    for i in (0..KEYS).step_by(1000) {
        let keys: Vec<Vec<u8>> = (i..i + 100).map(|j| key(j + KEYS)).chain([key(i)]).collect();
        let batch: Vec<_> = keys.iter().map(|k| (&cf, &k[..])).collect();
        let got = db.multi_get(&batch).unwrap();
        assert!(got[..100].iter().all(Option::is_none), "absent keys near {i}");
        assert_eq!(got[100].as_deref(), Some(&value(i)[..]));
    }
    let read = db.stats();
    assert_within_budget(&read, "read");
    // The test means something only if the indexes and filters did not all fit: reading every
    // key loaded (and so evicted) several budgets of them.
    assert!(
        read.index_filter_bytes_loaded > 3 * (CACHE + MEMTABLES),
        "only {} bytes of index and filter loaded; {read:?}",
        read.index_filter_bytes_loaded
    );
    assert!(read.block_cache_index_filter_bytes > 0 && read.block_cache_data_bytes > 0);
    assert!(read.table_reader_bytes > 0);
    println!("{} files, {read:?}", read.live_sst_files());

    // Memtables fill again and take their room back: the partitions it gives up are freed,
    // although the tables kept a way to them (`RoomSlots`), and reads go on through the cache.
    for i in 0..40_000 {
        db.put(&cf, &key(i), &value(i + 1)).unwrap();
        if i % 2_000 == 0 {
            assert_eq!(
                db.get(&cf, &key(i + 5_000)).unwrap().as_deref(),
                Some(&value(i + 5_000)[..])
            );
            assert_within_budget(&db.stats(), &format!("rewriting, key {i}"));
        }
    }
    db.flush().unwrap();
    db.compact_until_settled().unwrap();
    // At rest every index and filter alive is one the cache holds or an open reader's top-level
    // index: none outlives its eviction.
    let rest = db.stats();
    let held = rest.block_cache_index_filter_bytes + rest.table_reader_bytes;
    assert!(index_filter_live_bytes() <= held, "{} alive; {rest:?}", index_filter_live_bytes());
    db.close().unwrap();
}

#[test]
fn files_larger_than_a_stream_piece_are_written_in_pieces_and_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let storage: StorageRef = Arc::new(LocalStorage::new(tmp.path(), false).unwrap());
    let options = DbOptions {
        memtable_bytes: 48 << 20,
        target_file_bytes: 64 << 20,
        auto_compaction: false,
        table: TableOptions { compression: Compression::None, ..TableOptions::default() },
        ..DbOptions::default()
    };
    let db = Db::open_with_storage(storage, options).unwrap();
    let cf = db.create_cf("state").unwrap();
    let big = |i: u32| value(i).repeat(6);
    for i in 0..100_000 {
        db.put(&cf, &key(i), &big(i)).unwrap();
    }
    db.flush().unwrap();
    let stats = db.stats();
    assert_eq!(stats.live_sst_files(), 1);
    assert!(stats.live_sst_bytes() > 2 * (4 << 20), "{stats:?}");
    for i in (0..100_000).step_by(7) {
        assert_eq!(db.get(&cf, &key(i)).unwrap().as_deref(), Some(&big(i)[..]), "key {i}");
    }
    db.close().unwrap();
}
