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
//! Rates are per CPU second of the reading thread (see `rate`). Each ratio is to a baseline
//! database of the same data without deletes, measured in turns with it (`compare`): the 0 row
//! compares two such databases, so its ratio shows how far apart equal ones measure.
//! Run: `cargo bench --bench range_deletes` (env: RD_COUNTS=0,1000,..., RD_SECONDS of CPU time
//! per side of a measurement, RD_COMPACT=0 to skip the final compaction).

use std::hint::black_box;
use std::time::{Duration, Instant};

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "support/results.rs"]
mod results;
use results::Measurement;

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

/// Runs `op` for about `budget` of CPU time and returns its rate, in operations per CPU second
/// of the calling thread: the machine is shared, so wall time would mostly measure the
/// neighbours.
fn rate(budget: Duration, mut op: impl FnMut()) -> f64 {
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
    done as f64 / (thread_cpu_time() - start).as_secs_f64()
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

/// A database of the benchmark's data, and the range deletes written after it.
struct Loaded {
    db: Db,
    cf: ColumnFamily,
    /// Its files after the load, before the deletes.
    loaded: String,
    _dir: tempfile::TempDir,
}

fn load(deletes: u64) -> Loaded {
    assert!(deletes <= OLD_MAPS, "at most {OLD_MAPS} deletes");
    let dir = tempfile::tempdir().unwrap();
    let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
    let db = Db::open(&format!("file://{}", dir.path().display()), options).unwrap();
    let cf = db.create_cf("map-state").unwrap();
    let live = (0..MAPS).flat_map(|u| (0..ENTRIES_PER_MAP).map(move |e| entry(&live_prefix(u), e)));
    let old =
        (0..OLD_MAPS).flat_map(|m| (0..OLD_ENTRIES_PER_MAP).map(move |e| entry(&old_prefix(m), e)));
    write_all(&db, &cf, live.chain(old));
    db.flush().unwrap();
    db.compact_all().unwrap();
    let loaded = files(&db);
    for c in 0..deletes {
        let mut batch = WriteBatch::new();
        batch.delete_prefix(&cf, &old_prefix(c));
        db.write(&batch).unwrap();
    }
    Loaded { db, cf, loaded, _dir: dir }
}

impl Loaded {
    /// Reads every block into the block cache (it holds the whole state), so that every
    /// measurement reads from memory.
    fn warm(&self) {
        let mut it = self.db.iter(&self.cf, None, None).unwrap();
        while it.valid() {
            it.advance().unwrap();
        }
    }

    /// Gets a random live entry.
    fn get(&self, rng: &mut StdRng) {
        let user = rng.random_range(0..MAPS);
        let k = entry(&live_prefix(user), rng.random_range(0..ENTRIES_PER_MAP));
        assert!(black_box(self.db.get(&self.cf, &k).unwrap()).is_some(), "live key missing");
    }

    /// Iterates a random live map.
    fn scan(&self, rng: &mut StdRng) {
        let prefix = live_prefix(rng.random_range(0..MAPS));
        let mut it = self.db.iter_prefix(&self.cf, &prefix).unwrap();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.advance().unwrap();
        }
        assert_eq!(n, ENTRIES_PER_MAP, "map scan returned {n} entries");
    }
}

/// Turns per measurement: each measures the baseline and the database with the deletes.
const TURNS: usize = 7;

/// One operation's rates in turns: the database with range deletes and the baseline's, and the
/// ratio of each turn.
#[derive(Default)]
struct Turns {
    rates: Vec<f64>,
    base_rates: Vec<f64>,
    ratios: Vec<f64>,
}

/// Rates of a database with range deletes, and their ratios to the baseline's.
struct Row {
    gets: Turns,
    scans: Turns,
}

/// Measures `base` and `this` in turns, `budget` of CPU time each, so that a slow phase of the
/// shared machine weighs on both sides of a turn's ratio; reports the medians.
fn compare(base: &Loaded, this: &Loaded, budget: Duration) -> Row {
    base.warm();
    this.warm();
    let turn = budget / TURNS as u32;
    let (mut base_rng, mut rng) = (StdRng::seed_from_u64(7), StdRng::seed_from_u64(7));
    let (mut gets, mut scans) = (Turns::default(), Turns::default());
    for t in 0..TURNS {
        // Every other turn measures `this` first: the side measured second runs a few percent
        // faster (the CPU's caches and clock are warm).
        let mut pair = |op: fn(&Loaded, &mut StdRng), turns: &mut Turns| {
            let mut base_rate = || rate(turn, || op(base, &mut base_rng));
            let mut this_rate = || rate(turn, || op(this, &mut rng));
            let (base_rate, this_rate) = if t % 2 == 0 {
                (base_rate(), this_rate())
            } else {
                let this_rate = this_rate();
                (base_rate(), this_rate)
            };
            turns.ratios.push(this_rate / base_rate);
            turns.rates.push(this_rate);
            turns.base_rates.push(base_rate);
        };
        pair(Loaded::get, &mut gets);
        pair(Loaded::scan, &mut scans);
    }
    Row { gets, scans }
}

fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Prints a row and records its two measurements (gets and scans, each against the baseline).
fn report(deletes: u64, place: &str, row: Row) {
    println!(
        "{deletes:>7} {place:>9} {:>12.0} {:>7.2}x {:>12.0} {:>7.2}x",
        median(&row.gets.rates),
        median(&row.gets.ratios),
        median(&row.scans.rates),
        median(&row.scans.ratios)
    );
    for (op, turns) in [("gets", &row.gets), ("scans", &row.scans)] {
        Measurement::new(&format!("{op}, {deletes} range deletes, {place}"), "per cpu-s", true)
            .value(median(&turns.rates))
            .rounds(&turns.rates)
            .baseline("same data, no range deletes", median(&turns.base_rates), &turns.base_rates)
            .ratio_rounds(median(&turns.ratios), &turns.ratios)
            .label("op", op)
            .label("deletes", deletes)
            .label("place", place)
            .record();
    }
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
    results::parameters(&[
        ("RD_COUNTS", counts.iter().map(u64::to_string).collect::<Vec<_>>().join(",").into()),
        ("RD_SECONDS", budget.as_secs_f64().into()),
        ("RD_COMPACT", u64::from(compact).into()),
        ("turns", (TURNS as u64).into()),
        ("live maps x entries", format!("{MAPS} x {ENTRIES_PER_MAP}").into()),
        ("older maps x entries", format!("{OLD_MAPS} x {OLD_ENTRIES_PER_MAP}").into()),
    ]);
    // Every row's ratio is to this database: the same data, no deletes, compacted.
    let base = load(0);
    println!(
        "{:>7} {:>9} {:>12} {:>8} {:>12} {:>8}",
        "deletes", "where", "gets/cpu-s", "ratio", "scans/cpu-s", "ratio"
    );
    for &deletes in &counts {
        let this = load(deletes);
        report(deletes, "memtable", compare(&base, &this, budget));
        this.db.flush().unwrap();
        report(deletes, "flushed", compare(&base, &this, budget));
        if compact {
            let before = files(&this.db);
            let start = Instant::now();
            this.db.compact_until_settled().unwrap();
            let settle_took = start.elapsed();
            let settled = files(&this.db);
            let start = Instant::now();
            this.db.compact_all().unwrap();
            let took = start.elapsed();
            report(deletes, "compacted", compare(&base, &this, budget));
            println!(
                "        loaded: {}; with deletes: {before}; after background-style \
                 compactions ({settle_took:.2?}): {settled}; after full compaction ({took:.2?}): {}",
                this.loaded,
                files(&this.db)
            );
        }
    }
}
