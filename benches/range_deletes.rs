//! Range-delete benchmark (issue 13): point gets/s and prefix scans/s on a 200k-key database
//! while 0, 1,000, 10,000 and 50,000 range deletes are live, first with the tombstones still in
//! the memtable, then flushed; then a full compaction and the files before and after it.
//!
//! Data is Flink map state: 2,000 live maps of 100 entries (`key group | user | namespace | map
//! key`). Each range delete is a `MapState.clear()` of another, older map of the same user (two
//! entries each), so the deletes interleave with the live data and each covers real entries.
//! A get reads a random live entry; a prefix scan iterates one random live map (100 entries).
//! Run: `cargo bench --bench range_deletes` (env: RD_COUNTS=0,1000,..., RD_SECONDS per
//! measurement, RD_COMPACT=0 to skip the final compaction).

use std::hint::black_box;
use std::time::{Duration, Instant};

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MAPS: u64 = 2_000;
const ENTRIES_PER_MAP: u64 = 100;
const DOOMED_ENTRIES_PER_MAP: u64 = 2;

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

fn doomed_prefix(clear: u64) -> Vec<u8> {
    map_prefix(clear % MAPS, &format!("old{clear:06}"))
}

fn entry(prefix: &[u8], e: u64) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(format!("e{e:03}").as_bytes());
    k
}

/// Runs `op` for about `budget`, returning operations per second.
fn rate(budget: Duration, mut op: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut done = 0u64;
    // Bounded: stops at the budget or at 10M operations, whichever comes first.
    while done < 10_000_000 {
        for _ in 0..64 {
            op();
        }
        done += 64;
        if start.elapsed() >= budget {
            break;
        }
    }
    done as f64 / start.elapsed().as_secs_f64()
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
    format!("{count} files, {:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

struct Rates {
    gets: f64,
    scans: f64,
}

fn measure(db: &Db, cf: &ColumnFamily, budget: Duration) -> Rates {
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

fn main() {
    let counts: Vec<u64> = env("RD_COUNTS")
        .unwrap_or_else(|| "0,1000,10000,50000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("RD_COUNTS: comma-separated numbers"))
        .collect();
    let budget = Duration::from_secs_f64(
        env("RD_SECONDS").and_then(|s| s.parse().ok()).unwrap_or(1.0),
    );
    let compact = env("RD_COMPACT").is_none_or(|v| v != "0");
    let mut baseline: Option<Rates> = None;
    println!(
        "{:>7} {:>9} {:>12} {:>8} {:>12} {:>8}",
        "deletes", "where", "gets/s", "ratio", "scans/s", "ratio"
    );
    for &deletes in &counts {
        let dir = tempfile::tempdir().unwrap();
        let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
        let db = Db::open(&format!("file://{}", dir.path().display()), options).unwrap();
        let cf = db.create_cf("map-state").unwrap();
        let live = (0..MAPS)
            .flat_map(|u| (0..ENTRIES_PER_MAP).map(move |e| entry(&live_prefix(u), e)));
        let doomed = (0..deletes)
            .flat_map(|c| (0..DOOMED_ENTRIES_PER_MAP).map(move |e| entry(&doomed_prefix(c), e)));
        write_all(&db, &cf, live.chain(doomed));
        db.flush().unwrap();
        db.compact_all().unwrap();
        let loaded = files(&db);
        for c in 0..deletes {
            let mut batch = WriteBatch::new();
            batch.delete_prefix(&cf, &doomed_prefix(c));
            db.write(&batch).unwrap();
        }
        for place in ["memtable", "flushed"] {
            if place == "flushed" {
                db.flush().unwrap();
            }
            let rates = measure(&db, &cf, budget);
            let base = baseline.get_or_insert(Rates { gets: rates.gets, scans: rates.scans });
            println!(
                "{deletes:>7} {place:>9} {:>12.0} {:>7.2}x {:>12.0} {:>7.2}x",
                rates.gets,
                rates.gets / base.gets,
                rates.scans,
                rates.scans / base.scans
            );
        }
        if compact {
            let before = files(&db);
            let start = Instant::now();
            db.compact_all().unwrap();
            let took = start.elapsed();
            let rates = measure(&db, &cf, budget);
            println!(
                "{deletes:>7} {:>9} {:>12.0} {:>8} {:>12.0}    (loaded: {loaded}; before \
                 compaction: {before}; after: {}; compaction took {took:.2?})",
                "compacted",
                rates.gets,
                "",
                rates.scans,
                files(&db)
            );
        }
    }
}
