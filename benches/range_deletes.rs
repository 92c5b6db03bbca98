//! Range-delete benchmark (issue 13): point gets and prefix scans on a database of 200k live
//! entries (300k keys) while 0, 1,000, 10,000 and 50,000 range deletes are live, first with the
//! tombstones still in the memtable, then flushed; then the compactions background work would run
//! (`compact_until_settled`) and a full compaction, with the files and live tombstones after each.
//!
//! Data is Flink map state: 2,000 live maps of 100 entries (`key group | user | namespace | map
//! key`) and 50,000 older maps of two entries, spread over the same users. Each range delete is a
//! `MapState.clear()` of one older map, so the deletes interleave with the live data and each
//! covers real entries, and every row holds the same data: only the deletes differ.
//! A get reads a random live entry; a prefix scan iterates one random live map (100 entries).
//! Rates are per CPU second of the reading thread (see `rate`).
//! Run: `cargo bench --bench range_deletes` (env: RD_COUNTS=0,1000,..., RD_SECONDS per
//! measurement, RD_COMPACT=0 to skip the final compaction).

use std::hint::black_box;
use std::time::{Duration, Instant};

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MAPS: u64 = 2_000;
const ENTRIES_PER_MAP: u64 = 100;
const OLD_MAPS: u64 = 50_000;
const OLD_ENTRIES_PER_MAP: u64 = 2;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Key-group prefix, user key and namespace of a map: what `MapState.clear()` deletes.
fn map_prefix(user: u64, namespace: &str) -> Vec<u8> {
    let mut k = ((user % 128) as u16).to_be_bytes().to_vec();
    k.extend_from_slice(format!("user-{user:08}|{namespace}|").as_bytes());
    k
}

fn live_prefix(user: u64) -> Vec<u8> {
    map_prefix(user, "live")
}

fn old_prefix(map: u64) -> Vec<u8> {
    map_prefix(map % MAPS, &format!("old{map:06}"))
}

fn entry(prefix: &[u8], e: u64) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(format!("e{e:03}").as_bytes());
    k
}

/// CPU time of the calling thread so far (Linux: the first field of its schedstat, in ns).
/// Gets and scans run on the calling thread (`block_on` drives storage futures in place, and the
/// block cache holds every block), so this is their whole cost, whatever else shares the CPU.
fn thread_cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let nanos = stat.split_whitespace().next().and_then(|n| n.parse().ok()).expect("cpu ns");
    Duration::from_nanos(nanos)
}

/// Runs `op` for about `budget` of CPU time three times and returns the best rate, in
/// operations per CPU second of the calling thread: the machine is shared, so wall time would
/// mostly measure the neighbours.
fn rate(budget: Duration, mut op: impl FnMut()) -> f64 {
    let mut best = 0f64;
    for _ in 0..3 {
        let start = thread_cpu_time();
        let mut done = 0u64;
        // Bounded: stops at the budget or at 10M operations, whichever comes first.
        while done < 10_000_000 {
            for _ in 0..64 {
                op();
            }
            done += 64;
            if thread_cpu_time() - start >= budget {
                break;
            }
        }
        best = best.max(done as f64 / (thread_cpu_time() - start).as_secs_f64());
    }
    best
}

fn write_all(db: &Db, cf: &ColumnFamily, keys: impl Iterator<Item = Vec<u8>>) {
    let value = vec![b'v'; 100];
    let mut batch = WriteBatch::new();
    for k in keys {
        batch.put(cf, &k, &value);
        if batch.len() == 10_000 {
            db.write(&batch).unwrap();
            batch.clear();
        }
    }
    db.write(&batch).unwrap();
}

fn files(db: &Db) -> String {
    let stats = db.stats();
    let count: usize = stats.files_per_level.iter().sum();
    let bytes: u64 = stats.bytes_per_level.iter().sum();
    let mib = bytes as f64 / (1 << 20) as f64;
    format!("{count} files, {mib:.2} MiB, {} tombstone fragments", stats.range_tombstones)
}

struct Rates {
    gets: f64,
    scans: f64,
}

fn measure(db: &Db, cf: &ColumnFamily, budget: Duration) -> Rates {
    // Warm the block cache (it holds the whole state), so that every row reads from memory.
    let mut it = db.iter(cf, None, None).unwrap();
    while it.valid() {
        it.advance().unwrap();
    }
    let mut rng = StdRng::seed_from_u64(7);
    let gets = rate(budget, || {
        let user = rng.random_range(0..MAPS);
        let k = entry(&live_prefix(user), rng.random_range(0..ENTRIES_PER_MAP));
        assert!(black_box(db.get(cf, &k).unwrap()).is_some(), "live key missing");
    });
    let scans = rate(budget, || {
        let prefix = live_prefix(rng.random_range(0..MAPS));
        let mut it = db.iter_prefix(cf, &prefix).unwrap();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.advance().unwrap();
        }
        assert_eq!(n, ENTRIES_PER_MAP, "map scan returned {n} entries");
    });
    Rates { gets, scans }
}

fn report(
    baselines: &mut Vec<(&'static str, Rates)>,
    deletes: u64,
    place: &'static str,
    rates: Rates,
) {
    if !baselines.iter().any(|(p, _)| *p == place) {
        baselines.push((place, Rates { gets: rates.gets, scans: rates.scans }));
    }
    let base = &baselines.iter().find(|(p, _)| *p == place).expect("just added").1;
    println!(
        "{deletes:>7} {place:>9} {:>12.0} {:>7.2}x {:>12.0} {:>7.2}x",
        rates.gets,
        rates.gets / base.gets,
        rates.scans,
        rates.scans / base.scans
    );
}

fn main() {
    let counts: Vec<u64> = env("RD_COUNTS")
        .unwrap_or_else(|| "0,1000,10000,50000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("RD_COUNTS: comma-separated numbers"))
        .collect();
    let budget =
        Duration::from_secs_f64(env("RD_SECONDS").and_then(|s| s.parse().ok()).unwrap_or(1.0));
    let compact = env("RD_COMPACT").is_none_or(|v| v != "0");
    // Each row's ratio is to the same placement's row with the first count (0 deletes).
    let mut baselines = Vec::new();
    println!(
        "{:>7} {:>9} {:>12} {:>8} {:>12} {:>8}",
        "deletes", "where", "gets/cpu-s", "ratio", "scans/cpu-s", "ratio"
    );
    for &deletes in &counts {
        let dir = tempfile::tempdir().unwrap();
        let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
        let db = Db::open(&format!("file://{}", dir.path().display()), options).unwrap();
        let cf = db.create_cf("map-state").unwrap();
        let live =
            (0..MAPS).flat_map(|u| (0..ENTRIES_PER_MAP).map(move |e| entry(&live_prefix(u), e)));
        let old = (0..OLD_MAPS)
            .flat_map(|m| (0..OLD_ENTRIES_PER_MAP).map(move |e| entry(&old_prefix(m), e)));
        write_all(&db, &cf, live.chain(old));
        db.flush().unwrap();
        db.compact_all().unwrap();
        let loaded = files(&db);
        assert!(deletes <= OLD_MAPS, "at most {OLD_MAPS} deletes");
        for c in 0..deletes {
            let mut batch = WriteBatch::new();
            batch.delete_prefix(&cf, &old_prefix(c));
            db.write(&batch).unwrap();
        }
        for place in ["memtable", "flushed"] {
            if place == "flushed" {
                db.flush().unwrap();
            }
            report(&mut baselines, deletes, place, measure(&db, &cf, budget));
        }
        if compact {
            let before = files(&db);
            let start = Instant::now();
            db.compact_until_settled().unwrap();
            let settle_took = start.elapsed();
            let settled = files(&db);
            let start = Instant::now();
            db.compact_all().unwrap();
            let took = start.elapsed();
            report(&mut baselines, deletes, "compacted", measure(&db, &cf, budget));
            println!(
                "        loaded: {loaded}; with deletes: {before}; after background-style \
                 compactions ({settle_took:.2?}): {settled}; after full compaction ({took:.2?}): {}",
                files(&db)
            );
        }
    }
}
