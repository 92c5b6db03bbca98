//! A panic in background work (injected through `lsm::failpoints`) fails the database with the
//! panic's text: every waiter (a writer stalled on frozen memtables, `flush`, a checkpoint's
//! `wait_durable`, `compact_until_settled`) returns `Error::Failed` naming it, later calls fail
//! the same way, and `close` joins every thread. The waiters are blocked on threads before the
//! panic is let happen; the tests wait for them to return, never for time to pass.

mod support;

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;

use forst::lsm::failpoints;
use forst::lsm::{ColumnFamily, Db, DbOptions, TtlClock, TtlFilter, TtlLayout};
use forst::storage::{FaultStorage, OpKind, StorageRef};
use forst::{Error, Result};

/// Failpoints are armed process-wide: the tests of this file take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asserts that `result` is the failure of a database that `panic_of` panicked in.
fn assert_failed_by<T: std::fmt::Debug>(result: Result<T>, panic_of: &str, point: &str) {
    let expected = format!("{panic_of} panicked: {}", failpoints::panic_message(point));
    match result {
        Err(Error::Failed(cause)) => {
            assert!(matches!(*cause, Error::Panicked(_)), "{cause:?}");
            assert!(cause.to_string().contains(&expected), "{cause} lacks {expected:?}");
        }
        other => panic!("expected the database failed by {expected:?}, got {other:?}"),
    }
}

/// Spins (yielding) until `done`: for counters the engine exposes only through `stats`.
fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        thread::yield_now();
    }
}

/// Values are Flink `TtlValue`s stamped 0, which a TTL filter (see `GateClock`) keeps.
fn fill(db: &Db, cf: &ColumnFamily, tag: &str) {
    for i in 0..100u32 {
        db.put(cf, format!("{tag}{i:04}").as_bytes(), &0i64.to_be_bytes()).unwrap();
    }
}

#[test]
fn a_panicking_flush_fails_the_database_and_wakes_every_waiter() {
    let _turn = one_at_a_time();
    let faults = Arc::new(FaultStorage::new(support::fresh_memory("flush-panic")));
    let options =
        DbOptions { max_frozen_memtables: 1, auto_compaction: false, ..Default::default() };
    let db = Arc::new(Db::open_with_storage(faults.clone() as StorageRef, options).unwrap());
    let cf = db.create_cf("s").unwrap();
    fill(&db, &cf, "a");
    // The flush of this memtable writes its file and stops there, held.
    faults.hold(OpKind::Put);
    db.freeze_memtable().unwrap();
    faults.wait_held(OpKind::Put, 1);

    // One frozen memtable: a writer stalls. The checkpoint waits for that memtable.
    let writer = {
        let (db, cf) = (db.clone(), cf.clone());
        thread::spawn(move || db.put(&cf, b"late", b"v"))
    };
    until(|| db.stats().stalled_writers == 1);
    let flusher = {
        let db = db.clone();
        thread::spawn(move || db.flush())
    };
    let mut checkpoint = db.checkpoint().unwrap();
    let durable = thread::spawn(move || checkpoint.wait_durable());

    failpoints::arm("flush", 1).unwrap();
    faults.release();

    assert_failed_by(writer.join().unwrap(), "flush thread", "flush");
    assert_failed_by(flusher.join().unwrap(), "flush thread", "flush");
    assert_failed_by(durable.join().unwrap(), "flush thread", "flush");
    assert!(db.stats().failed);
    assert_failed_by(db.put(&cf, b"after", b"v"), "flush thread", "flush");
    assert_failed_by(db.get(&cf, b"a0001"), "flush thread", "flush");
    assert_failed_by(db.checkpoint().map(|_| ()), "flush thread", "flush");
    assert_failed_by(db.flush(), "flush thread", "flush");
    // Joins the threads that the panic ended or stopped.
    db.close().unwrap();
}

/// A TTL clock at 0 whose first reading waits until the test opens the gate: holds a compaction
/// that applies a TTL filter in the middle of its merge.
#[derive(Default)]
struct GateClock {
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl GateClock {
    fn wait_entered(&self) {
        let state = self.state.lock().unwrap();
        drop(self.changed.wait_while(state, |(entered, _)| !*entered).unwrap());
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

impl TtlClock for GateClock {
    fn now_millis(&self) -> Result<i64> {
        let mut state = self.state.lock().unwrap();
        state.0 = true;
        self.changed.notify_all();
        drop(self.changed.wait_while(state, |(_, open)| !*open).unwrap());
        Ok(0)
    }
}

#[test]
fn a_panicking_background_compaction_fails_the_database_and_wakes_every_waiter() {
    let _turn = one_at_a_time();
    let options = DbOptions {
        max_frozen_memtables: 1,
        l0_compaction_trigger: 2,
        l0_stop_trigger: 3,
        max_background_compactions: 1,
        ..Default::default()
    };
    let db = Arc::new(
        Db::open_with_storage(support::fresh_memory("compaction-panic"), options).unwrap(),
    );
    let cf = db.create_cf("s").unwrap();
    let clock = Arc::new(GateClock::default());
    let layout = TtlLayout::Value { timestamp_offset: 0 };
    let ttl =
        TtlFilter { layout, ttl_millis: 1, query_time_after_entries: 0, clock: clock.clone() };
    db.set_ttl_filter(&cf, Some(ttl)).unwrap();
    for tag in ["a", "b"] {
        fill(&db, &cf, tag);
        db.flush().unwrap();
    }
    // Two L0 files: the compaction starts and stops at its first clock reading.
    clock.wait_entered();
    fill(&db, &cf, "c");
    db.flush().unwrap();
    // Level 0 is full now (3 files): the next flush waits for the compaction, and with its
    // memtable frozen, a writer stalls.
    fill(&db, &cf, "d");
    let flusher = {
        let db = db.clone();
        thread::spawn(move || db.flush())
    };
    until(|| db.stats().frozen_memtables == 1);
    let writer = {
        let (db, cf) = (db.clone(), cf.clone());
        thread::spawn(move || db.put(&cf, b"late", b"v"))
    };
    until(|| db.stats().stalled_writers == 1);
    // Nothing else to compact: it waits for the running compaction.
    let settler = {
        let db = db.clone();
        thread::spawn(move || db.compact_until_settled())
    };

    failpoints::arm("compaction", 1).unwrap();
    clock.open();

    assert_failed_by(flusher.join().unwrap(), "compaction", "compaction");
    assert_failed_by(writer.join().unwrap(), "compaction", "compaction");
    assert_failed_by(settler.join().unwrap(), "compaction", "compaction");
    assert_failed_by(db.put(&cf, b"after", b"v"), "compaction", "compaction");
    assert_failed_by(db.flush(), "compaction", "compaction");
    db.close().unwrap();
}

#[test]
fn a_compaction_panicking_on_the_callers_thread_fails_the_database() {
    let _turn = one_at_a_time();
    let options = DbOptions { auto_compaction: false, ..Default::default() };
    let db = Db::open_with_storage(support::fresh_memory("compact-all-panic"), options).unwrap();
    let cf = db.create_cf("s").unwrap();
    for tag in ["a", "b"] {
        fill(&db, &cf, tag);
        db.flush().unwrap();
    }
    failpoints::arm("compaction", 1).unwrap();
    assert_failed_by(db.compact_all(), "compaction", "compaction");
    assert_failed_by(db.get(&cf, b"a0001"), "compaction", "compaction");
    db.close().unwrap();
}

#[test]
fn an_unarmed_failpoint_changes_nothing() {
    let _turn = one_at_a_time();
    failpoints::arm("flush", 1).unwrap();
    failpoints::arm("flush", 0).unwrap();
    let db =
        Db::open_with_storage(support::fresh_memory("disarmed"), DbOptions::default()).unwrap();
    let cf = db.create_cf("s").unwrap();
    fill(&db, &cf, "a");
    db.flush().unwrap();
    db.compact_all().unwrap();
    assert!(!db.stats().failed);
    db.close().unwrap();
}
