//! Tests of the database's internal coordination (locks and background waits), which need to see
//! inside `DbInner`.

use std::sync::Arc;
use std::sync::mpsc;

use crate::lsm::db_state::memtable_charge_step;
use crate::lsm::{Db, DbOptions};
use crate::storage::{FaultStorage, OpKind, StorageOptions, open_storage};
use crate::test_support::incompressible;

/// Releases the storage's gate however the test ends, so closing the database never waits for a
/// flush that a failed assertion left held.
struct ReleaseOnDrop(Arc<FaultStorage>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A writer stalled behind a flush that cannot finish holds no lock: a checkpoint's synchronous
/// phase completes while the writer is still waiting, and the writer goes on once the flush does.
#[test]
fn sync_phase_completes_while_a_writer_is_stalled() {
    let memory = open_storage("memory://db-tests-stall", &StorageOptions::default()).unwrap();
    let storage = Arc::new(FaultStorage::new(memory));
    let options = DbOptions {
        memtable_bytes: 4096,
        max_frozen_memtables: 1,
        auto_compaction: false,
        ..DbOptions::default()
    };
    let db = Arc::new(Db::open_with_storage(storage.clone(), options).unwrap());
    let cf = db.create_cf("s").unwrap();
    // Flushes write their SST with a put: hold it, so the first frozen memtable stays frozen.
    storage.hold(OpKind::Put);
    let release = ReleaseOnDrop(storage.clone());
    for i in 0..1000u32 {
        if db.stats().frozen_memtables == 1 {
            break;
        }
        db.put(&cf, format!("key{i:04}").as_bytes(), &[7; 100]).unwrap();
    }
    assert_eq!(db.stats().frozen_memtables, 1, "the memtable froze");
    storage.wait_held(OpKind::Put, 1);

    let (done_tx, done_rx) = mpsc::channel();
    let writer = {
        let (db, cf) = (db.clone(), cf.clone());
        std::thread::spawn(move || {
            let result = db.put(&cf, b"late", b"v");
            done_tx.send(()).unwrap();
            result
        })
    };
    let inner = &db.inner;
    let mut background = inner.background.lock().unwrap();
    while background.stalled_writers == 0 {
        background = inner.background_changed.wait(background).unwrap();
    }
    drop(background);

    assert!(inner.write_lock.try_lock().is_ok(), "a stalled writer holds the write lock");
    let mut checkpoint = db.checkpoint().unwrap();
    assert!(done_rx.try_recv().is_err(), "the writer cannot have finished: the flush is held");
    assert_eq!(db.stats().stalled_writers, 1);

    drop(release);
    writer.join().unwrap().unwrap();
    checkpoint.wait_durable().unwrap();
    assert!(checkpoint.last_seq() < inner.visible_seq(), "the late write is not in the checkpoint");
    assert_eq!(db.get(&cf, b"late").unwrap().unwrap(), "v");
    assert_eq!(db.stats().stalled_writers, 0);
}

/// Fills a memtable with `entries` incompressible entries of 100 bytes, flushes it with the
/// flush's storage call `held` waiting at the gate, and returns the bytes of flush output charged
/// to the cache at that moment and the size of the file; checks that the charge is 0 before the
/// flush and once the file is stored.
fn charged_while_the_flush_waits_at(held: OpKind, entries: usize) -> (u64, u64) {
    let url = format!("memory://db-tests-output-charge-{held:?}");
    let storage =
        Arc::new(FaultStorage::new(open_storage(&url, &StorageOptions::default()).unwrap()));
    let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
    let db = Db::open_with_storage(storage.clone(), options).unwrap();
    let cf = db.create_cf("s").unwrap();
    // Incompressible, so the file is as large as its entries.
    for (i, value) in incompressible(7, entries * 100).chunks(100).enumerate() {
        db.put(&cf, format!("key{i:06}").as_bytes(), value).unwrap();
    }
    assert_eq!(db.stats().io_buffer_bytes, 0, "nothing charged before the flush");
    storage.hold(held);
    let release = ReleaseOnDrop(storage.clone());
    db.freeze_memtable().unwrap();
    storage.wait_held(held, 1);
    let charged = db.stats().io_buffer_bytes;
    drop(release);
    db.flush().unwrap();
    assert_eq!(db.stats().io_buffer_bytes, 0, "released once stored");
    (charged, db.stats().live_sst_bytes())
}

/// A flush's output is charged to the block cache while it is built and written, and released
/// once the file is stored.
#[test]
fn flush_output_is_charged_to_the_cache_until_stored() {
    // The flushed file (about 1 MiB, below the streaming size) goes to storage in one put.
    let (charged, _) = charged_while_the_flush_waits_at(OpKind::Put, 10_000);
    assert!(charged >= 512 << 10, "{charged} bytes of flush output charged");
}

/// A flushed file large enough to stream goes to its writer in pieces; what the writer holds
/// (here the object store's buffer before its first part) stays charged along with what the
/// builder holds, until the file is stored.
#[test]
fn a_streaming_writer_s_buffer_is_charged_to_the_cache() {
    // About 6.5 MiB of file: one 4 MiB piece streams to the writer, which buffers it (below the
    // 8 MiB multipart threshold), and the rest is in the builder when the writer finishes.
    let (charged, file) = charged_while_the_flush_waits_at(OpKind::Finish, 55_000);
    assert!(file > 4 << 20 && file < 8 << 20, "premise: one piece streamed, no part: {file}");
    // The builder's share alone is about 2 MiB.
    assert!(charged >= 5 << 20, "{charged} bytes of flush output charged");
}

/// With memtables charged to the block cache, blocks give way while memtables fill and get the
/// room back once they are flushed; without, memtables leave the block capacity alone and their
/// idle room (for index and filter partitions) shrinks as they fill.
#[test]
fn memtables_charged_to_the_cache_take_room_from_blocks_until_flushed() {
    const CACHE: u64 = 8 << 20;
    for charged in [true, false] {
        let url = format!("memory://db-tests-memtable-charge-{charged}");
        let storage = open_storage(&url, &StorageOptions::default()).unwrap();
        let options = DbOptions {
            block_cache_bytes: CACHE,
            memtables_charged_to_cache: charged,
            auto_compaction: false,
            ..DbOptions::default()
        };
        let db = Db::open_with_storage(storage, options).unwrap();
        let cf = db.create_cf("s").unwrap();
        for i in 0..20_000u32 {
            db.put(&cf, format!("key{i:06}").as_bytes(), &[7; 100]).unwrap();
        }
        let memtables = db.stats().memtable_bytes;
        assert!(memtables > 2 << 20, "{memtables} bytes of memtables");
        let blocks = db.inner.cache.block_capacity();
        if charged {
            let slack = 512 << 10; // the charge's and the cache's steps
            assert!(
                blocks + memtables <= CACHE + slack,
                "{blocks} for blocks, {memtables} charged"
            );
        } else {
            assert_eq!(blocks, CACHE, "nothing charged");
            let room = db.stats().index_filter_room_bytes;
            let budget = 3 * DbOptions::default().memtable_bytes;
            let slack = 2 * memtable_charge_step(DbOptions::default().memtable_bytes);
            assert!(room.abs_diff(budget - memtables) <= slack, "{room} of room");
        }
        db.flush().unwrap();
        assert_eq!(db.stats().memtable_bytes, 0);
        let room = db.stats().index_filter_room_bytes;
        assert_eq!(room, if charged { 0 } else { 3 * DbOptions::default().memtable_bytes });
        let reserved = db.stats().table_reader_bytes;
        let blocks = db.inner.cache.block_capacity();
        assert!(blocks + reserved + (256 << 10) >= CACHE, "{blocks} for blocks after the flush");
    }
}
