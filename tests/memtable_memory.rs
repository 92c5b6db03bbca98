//! The memtable's charge against the budget covers the heap it really takes, and so does the
//! charge of range tombstones once flushed into the version. Alone in its test binary: it counts
//! every allocation of the process with a global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use forst::lsm::range_tombstone::{FragmentedTombstones, RangeTombstone};
use forst::lsm::{Db, DbOptions, WriteBatch};

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counter only observes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ENTRIES: u32 = 100_000;

fn key(i: u32) -> Vec<u8> {
    // Flink's layout: key group, key, namespace; scattered so the skiplist grows in every place.
    let mut k = ((i % 128) as u16).to_be_bytes().to_vec();
    k.extend_from_slice(format!("user-{:010}", i.wrapping_mul(2_654_435_761)).as_bytes());
    k.extend_from_slice(b"ns");
    k
}

/// Heap the memtable took for `entries` entries written by `write`, and what it charged.
fn measure(entries: u32, write: impl Fn(&Db, &forst::lsm::ColumnFamily)) -> (i64, i64) {
    let tmp = tempfile::tempdir().unwrap();
    let options = DbOptions { memtable_bytes: 1 << 30, ..DbOptions::default() };
    let db = Db::open(&format!("file://{}", tmp.path().display()), options).unwrap();
    let cf = db.create_cf("state").unwrap();
    let (heap_before, charged_before) = (LIVE.load(Ordering::Relaxed), db.stats().memtable_bytes);
    write(&db, &cf);
    let (heap_after, charged_after) = (LIVE.load(Ordering::Relaxed), db.stats().memtable_bytes);
    assert_eq!(db.stats().active_memtable_entries, u64::from(entries), "nothing flushed");
    (heap_after - heap_before, (charged_after - charged_before) as i64)
}

/// Heap the version's fragments of `ENTRIES` whole-prefix deletes take (built as a flush merges
/// them in), and what they charge (`memory_size`, the stats' `range_tombstone_bytes`).
fn flushed_prefix_deletes() -> (i64, i64) {
    let prefix_delete = |i: u32| {
        let start = key(i);
        let mut end = start.clone();
        *end.last_mut().unwrap() += 1;
        RangeTombstone { start: start.into(), end: end.into(), seq: u64::from(i) + 1 }
    };
    let heap_before = LIVE.load(Ordering::Relaxed);
    // Made on the fly: what is left on the heap afterwards is the fragments alone.
    let fragments = FragmentedTombstones::new((0..ENTRIES).map(prefix_delete));
    let heap = LIVE.load(Ordering::Relaxed) - heap_before;
    assert_eq!(fragments.len(), ENTRIES as usize, "disjoint prefixes, one fragment each");
    (heap, fragments.memory_size() as i64)
}

#[test]
fn the_memtable_charges_at_least_the_heap_it_takes_and_not_much_more() {
    let value = vec![b'v'; 100];
    let batched = measure(ENTRIES, |db, cf| {
        let mut batch = WriteBatch::new();
        for i in 0..ENTRIES {
            batch.put(cf, &key(i), &value);
            if batch.len() == 1000 {
                db.write(&batch).unwrap();
                batch.clear();
            }
        }
    });
    let single = measure(ENTRIES, |db, cf| {
        for i in 0..ENTRIES {
            db.put(cf, &key(i), &value).unwrap();
        }
    });
    // `MapState.clear()`s: range deletes of whole prefixes (entries: none).
    let cleared = measure(0, |db, cf| {
        for i in 0..ENTRIES {
            let mut batch = WriteBatch::new();
            batch.delete_prefix(cf, &key(i));
            db.write(&batch).unwrap();
        }
    });
    let runs = [
        ("batches of 1000", batched),
        ("single puts", single),
        ("prefix deletes", cleared),
        ("prefix deletes flushed", flushed_prefix_deletes()),
    ];
    for (how, (heap, charged)) in runs {
        eprintln!(
            "{how}: heap {heap} B ({} per entry), charged {charged} B ({} per entry)",
            heap / i64::from(ENTRIES),
            charged / i64::from(ENTRIES)
        );
    }
    for (how, (heap, charged)) in runs {
        assert!(charged >= heap, "{how}: charged {charged} B for {heap} B of heap");
        assert!(charged * 4 <= heap * 5, "{how}: charged {charged} B for {heap} B of heap");
    }
}
