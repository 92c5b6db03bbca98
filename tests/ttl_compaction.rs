//! Flink state TTL in compaction (`lsm::ttl`): expired entries of value, map and list state leave
//! the store when compaction rewrites them, unexpired ones stay, and merges still waiting for
//! their base in a lower level are never corrupted. Time comes from a clock the test sets.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use forst::lsm::{ColumnFamily, Db, DbOptions, ListElementFilter, TtlClock, TtlFilter, TtlLayout};
use forst::{Error, Result};

const TTL: i64 = 1_000;

/// Time as the test sets it (Flink tests use a manual `TtlTimeProvider` alike).
#[derive(Default)]
struct TestClock(AtomicI64);

impl TestClock {
    fn set(&self, now: i64) {
        self.0.store(now, Ordering::Relaxed);
    }
}

impl TtlClock for TestClock {
    fn now_millis(&self) -> Result<i64> {
        Ok(self.0.load(Ordering::Relaxed))
    }
}

fn open() -> Db {
    let options = DbOptions {
        auto_compaction: false,
        // Every flush is compacted by `compact_until_settled` (L0 -> L1, not bottommost below).
        l0_compaction_trigger: 1,
        l0_stop_trigger: 8,
        ..DbOptions::default()
    };
    Db::open_with_storage(support::fresh_memory("ttl"), options).unwrap()
}

fn filter(layout: TtlLayout, clock: &Arc<TestClock>) -> Option<TtlFilter> {
    Some(TtlFilter {
        layout,
        ttl_millis: TTL,
        query_time_after_entries: 1000,
        clock: clock.clone(),
    })
}

/// A `TtlValue` as Flink's `TtlSerializer` writes it: the timestamp, then the user value.
fn ttl_value(timestamp: i64, user: &[u8]) -> Vec<u8> {
    let mut out = timestamp.to_be_bytes().to_vec();
    out.extend_from_slice(user);
    out
}

/// A map entry's value: the null flag, then the `TtlValue`.
fn map_value(timestamp: i64, user: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend(ttl_value(timestamp, user));
    out
}

fn list(elements: &[Vec<u8>]) -> Vec<u8> {
    elements.join(&b","[..])
}

/// Every key of the family as stored (expired or not: the engine does not filter reads).
fn keys(db: &Db, cf: &ColumnFamily) -> Vec<String> {
    let mut it = db.iter(cf, None, None).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push(String::from_utf8(it.key().to_vec()).unwrap());
        it.advance().unwrap();
    }
    out
}

#[test]
fn expired_values_and_map_entries_are_dropped_by_compaction() {
    let db = open();
    let clock = Arc::new(TestClock::default());
    let values = db.create_cf("values").unwrap();
    let maps = db.create_cf("maps").unwrap();
    let plain = db.create_cf("no-ttl").unwrap();
    db.set_ttl_filter(&values, filter(TtlLayout::Value { timestamp_offset: 0 }, &clock)).unwrap();
    db.set_ttl_filter(&maps, filter(TtlLayout::Value { timestamp_offset: 1 }, &clock)).unwrap();
    for (key, ts) in [("old", 0), ("edge", 500), ("new", 1_500)] {
        db.put(&values, key.as_bytes(), &ttl_value(ts, b"v")).unwrap();
        db.put(&maps, key.as_bytes(), &map_value(ts, b"m")).unwrap();
        db.put(&plain, key.as_bytes(), &ttl_value(ts, b"p")).unwrap();
    }
    db.flush().unwrap();

    clock.set(999);
    db.compact_all().unwrap();
    assert_eq!(keys(&db, &values), ["edge", "new", "old"], "nothing expired yet");

    // "old" expires at 1000 (timestamp + ttl <= now), "edge" at 1500.
    clock.set(1_000);
    db.compact_all().unwrap();
    assert_eq!(keys(&db, &values), ["edge", "new"]);
    assert_eq!(keys(&db, &maps), ["edge", "new"]);
    assert_eq!(keys(&db, &plain), ["edge", "new", "old"], "a family without TTL keeps all");
    assert_eq!(db.get(&values, b"new").unwrap().unwrap(), ttl_value(1_500, b"v"));
    assert_eq!(db.get(&maps, b"edge").unwrap().unwrap(), map_value(500, b"m"));
    assert_eq!(db.stats().ttl_removed_entries, 2);

    clock.set(2_499);
    db.compact_all().unwrap();
    assert_eq!(keys(&db, &values), ["new"]);
    assert_eq!(keys(&db, &maps), ["new"]);

    // Cleared filter: nothing more is removed.
    db.set_ttl_filter(&values, None).unwrap();
    clock.set(10_000);
    db.compact_all().unwrap();
    assert_eq!(keys(&db, &values), ["new"]);
    assert_eq!(keys(&db, &maps), Vec::<String>::new());
}

#[test]
fn an_expired_value_above_an_older_one_becomes_a_delete() {
    let db = open();
    let clock = Arc::new(TestClock::default());
    let values = db.create_cf("values").unwrap();
    db.set_ttl_filter(&values, filter(TtlLayout::Value { timestamp_offset: 0 }, &clock)).unwrap();
    // An older version in the last level that is not expired (its timestamp is later)...
    db.put(&values, b"k", &ttl_value(5_000, b"older")).unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();
    // ...and a newer, expired one compacted from L0 into L1, above it: dropping it outright
    // would bring the older version back.
    db.put(&values, b"k", &ttl_value(0, b"newer")).unwrap();
    db.flush().unwrap();
    clock.set(2_000);
    db.compact_until_settled().unwrap();
    let files = db.stats().files_per_level;
    assert!(files[1] == 1 && files[6] == 1, "a delete in L1 above the value: {files:?}");
    assert_eq!(db.get(&values, b"k").unwrap(), None);
    db.compact_all().unwrap();
    assert_eq!(db.get(&values, b"k").unwrap(), None);
    assert_eq!(db.stats().files_per_level.iter().sum::<usize>(), 0, "nothing left at all");
}

/// Fixed-length list elements: an 8-byte timestamp and 4 bytes of user value.
fn element(timestamp: i64, user: &[u8; 4]) -> Vec<u8> {
    ttl_value(timestamp, user)
}

#[test]
fn fixed_length_lists_lose_their_expired_head_also_across_pending_merges() {
    let db = open();
    let clock = Arc::new(TestClock::default());
    let lists = db.create_cf("lists").unwrap();
    db.set_ttl_filter(&lists, filter(TtlLayout::FixedList { element_bytes: 12 }, &clock)).unwrap();
    let (a, b, c, d) =
        (element(0, b"aaaa"), element(100, b"bbbb"), element(3_000, b"cccc"), element(50, b"dddd"));

    // Base [a, b] in the last level.
    db.put(&lists, b"k", &list(&[a.clone(), b.clone()])).unwrap();
    db.put(&lists, b"gone", &list(std::slice::from_ref(&a))).unwrap();
    db.flush().unwrap();
    clock.set(500);
    db.compact_all().unwrap();
    assert_eq!(db.get(&lists, b"k").unwrap().unwrap(), list(&[a.clone(), b.clone()]));

    // Appends [d, c] wait as merge operands in L0; compacted into L1 they are the tail of a list
    // whose base is below: only the tail's expired head (d) may go, the base stays as it is.
    db.merge(&lists, b"k", &d).unwrap();
    db.merge(&lists, b"k", &c).unwrap();
    // An append whose every element is expired: dropped, the base below unchanged.
    db.merge(&lists, b"gone", &d).unwrap();
    db.flush().unwrap();
    clock.set(1_050);
    db.compact_until_settled().unwrap();
    assert!(db.stats().files_per_level[1] >= 1, "{:?}", db.stats().files_per_level);
    assert_eq!(db.get(&lists, b"k").unwrap().unwrap(), list(&[a.clone(), b.clone(), c.clone()]));
    assert_eq!(db.get(&lists, b"gone").unwrap().unwrap(), list(std::slice::from_ref(&a)));

    // A full compaction sees the whole list: a and b (expired at 1000 and 1100) go, c stays.
    clock.set(1_100);
    db.compact_all().unwrap();
    assert_eq!(db.get(&lists, b"k").unwrap().unwrap(), c);
    assert_eq!(db.get(&lists, b"gone").unwrap(), None);
    assert_eq!(db.stats().ttl_trimmed_lists, 2);

    clock.set(4_000);
    db.compact_all().unwrap();
    assert_eq!(keys(&db, &lists), Vec::<String>::new());
}

/// A list format only this filter can parse (as only Flink's serializer can parse a list of
/// variable-length elements): each element is timestamp, length byte, user bytes.
struct LengthPrefixedElements;

impl ListElementFilter for LengthPrefixedElements {
    fn next_unexpired_offset(&self, list: &[u8], ttl: i64, now: i64) -> Result<usize> {
        let mut offset = 0;
        let mut next_unexpired = 0;
        while offset < list.len() {
            let header = list.get(offset..offset + 9).ok_or_else(|| Error::invalid("cut"))?;
            let timestamp = i64::from_be_bytes(header[..8].try_into().unwrap());
            if !forst::lsm::ttl::expired(timestamp, ttl, now) {
                break;
            }
            offset += 9 + header[8] as usize;
            offset += usize::from(offset < list.len()); // the delimiter
            next_unexpired = offset;
        }
        Ok(next_unexpired)
    }
}

fn variable_element(timestamp: i64, user: &[u8]) -> Vec<u8> {
    let mut user_with_length = vec![user.len() as u8];
    user_with_length.extend_from_slice(user);
    ttl_value(timestamp, &user_with_length)
}

#[test]
fn variable_length_lists_are_cut_where_the_element_filter_says() {
    let db = open();
    let clock = Arc::new(TestClock::default());
    let lists = db.create_cf("lists").unwrap();
    let layout = TtlLayout::List(Arc::new(LengthPrefixedElements));
    db.set_ttl_filter(&lists, filter(layout, &clock)).unwrap();
    // A ',' inside a user value: only the element filter knows it is no delimiter.
    let elements =
        [variable_element(0, b"x,y"), variable_element(200, b""), variable_element(900, b"zzzzz")];
    db.put(&lists, b"k", &list(&elements)).unwrap();
    db.put(&lists, b"bad", b"\x00\x00").unwrap();
    db.flush().unwrap();
    clock.set(1_100);
    db.compact_all().unwrap();
    assert_eq!(db.get(&lists, b"k").unwrap().unwrap(), list(&elements[1..]));
    assert_eq!(db.get(&lists, b"bad").unwrap().unwrap(), b"\x00\x00"[..], "filter error: kept");
    clock.set(1_899);
    db.compact_all().unwrap();
    assert_eq!(db.get(&lists, b"k").unwrap().unwrap(), elements[2]);
    clock.set(1_900);
    db.compact_all().unwrap();
    assert_eq!(keys(&db, &lists), ["bad"]);
}

#[test]
fn ttl_filters_need_an_existing_family() {
    let db = open();
    let clock = Arc::new(TestClock::default());
    let cf = db.create_cf("dropped").unwrap();
    db.drop_cf(&cf).unwrap();
    let error = db.set_ttl_filter(&cf, filter(TtlLayout::Value { timestamp_offset: 0 }, &clock));
    assert!(matches!(error, Err(Error::InvalidArgument(_))), "{error:?}");
}
