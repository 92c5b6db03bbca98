//! The engine at scale, against rust-rocksdb on the same data and the same local directory: for
//! each size (`SCALE_KEYS`, default 1M and 4M keys of 16 bytes with 100-byte values, written in
//! a scattered order in batches of 1000), load/s (writes, flush and compaction until settled),
//! get/s and multi_get/s (random existing keys; multi_get in batches of 1000), space
//! amplification (live SST bytes / user bytes), write amplification (bytes written by flush and
//! compaction / user bytes) and peak RSS against the configured memory budget.
//!
//! The `ours-dfs` rows run ours on the latency-injected store over the same local directory
//! (FLIP-423's HDFS: 1.5 ms per request), with `SCALE_DFS_READS` reads (each cold get waits for
//! storage), against rocksdb on the local directory. The `-dynamic` engines (not run by default)
//! turn on dynamic level sizes (ours: `dynamic_level_sizes`, RocksDB:
//! `level_compaction_dynamic_level_bytes`); `ours-dynamic` is compared with `rocksdb-dynamic`.
//! The `rocksdb-in-budget` rows run RocksDB as Flink sets it up under managed memory: index and
//! filter blocks in the block cache (so within the budget, as ours), L0's pinned; the other ours
//! rows are compared with `rocksdb` and with `rocksdb-in-budget`.
//!
//! Each row runs in a child process of its own (this binary, re-run with `SCALE_ROW` set), so
//! rows do not share a peak: the child reads VmHWM from /proc/self/status at its end.
//! Run: `cargo bench --bench scale` (env: SCALE_KEYS="1000000 4000000", SCALE_READS=200000,
//! SCALE_DFS_READS=20000, SCALE_ENGINES="rocksdb rocksdb-in-budget ours ours-dfs" (also:
//! ours-dynamic, rocksdb-dynamic), SCALE_DIR, SCALE_ROW_TIMEOUT_S=1800,
//! SCALE_COMPACTION_THREADS: ours' `max_background_compactions`, default 1, 2 for ours-dfs;
//! SCALE_L0_TRIGGER: ours' `l0_compaction_trigger`;
//! SCALE_TURNS=1 adds per size a row of get and multi_get ratios measured in turns, see
//! `read_turns`).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use forst::lsm::{ColumnFamily, Db, DbOptions, WriteBatch};
use forst::storage::{Latency, LatencyStorage, StorageOptions, StorageRef, open_storage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "support/results.rs"]
mod results;
use results::Measurement;

const KEY_BYTES: u64 = 16;
const VALUE_BYTES: usize = 100;
const BATCH: u64 = 1000;
const BLOCK_CACHE: u64 = 16 << 20;
const MEMTABLE: u64 = 64 << 20;
/// Frozen memtables waiting for flush (ours) = write buffers - 1 (RocksDB).
const FROZEN: usize = 2;
const MIB: f64 = (1 << 20) as f64;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn env_u64(name: &str, default: u64) -> u64 {
    env_or(name, &default.to_string()).parse().unwrap_or(default)
}

/// The i-th key: 16 bytes, scattered so that the write order is random.
fn key(i: u64) -> Vec<u8> {
    format!("k{:015}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_000_000_000).into_bytes()
}

/// 100 bytes: half derived from the key (poorly compressible), half padding.
fn value(i: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(VALUE_BYTES);
    let mut x = i ^ 0x5DEE_CE66_D1CE_4E5B;
    while v.len() < VALUE_BYTES / 2 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.resize(VALUE_BYTES, b'.');
    v
}

/// Budget of both engines: block cache plus all memtables that may be in memory.
fn budget() -> u64 {
    BLOCK_CACHE + MEMTABLE * (FROZEN as u64 + 1)
}

/// One row's measurements, printed by the child as one line of `key=value` pairs.
#[derive(Default, Debug)]
struct Row {
    load_per_s: f64,
    get_per_s: f64,
    multi_get_per_s: f64,
    space_amp: f64,
    write_amp: f64,
    peak_rss_mib: f64,
}

impl Row {
    /// The row's metrics: name, value, unit, whether higher is better.
    fn metrics(&self) -> [(&'static str, f64, &'static str, bool); 6] {
        [
            ("load", self.load_per_s, "keys/s", true),
            ("get", self.get_per_s, "gets/s", true),
            ("multi_get", self.multi_get_per_s, "keys/s", true),
            ("space amplification", self.space_amp, "x", false),
            ("write amplification", self.write_amp, "x", false),
            ("peak RSS", self.peak_rss_mib, "MiB", false),
        ]
    }

    /// Records the row's metrics, each against `baseline`'s when given.
    fn record(&self, engine: &str, keys: u64, baseline: Option<(&str, &Row)>) {
        let theirs = baseline.map(|(_, row)| row.metrics());
        for (i, (metric, value, unit, higher)) in self.metrics().into_iter().enumerate() {
            let mut m = Measurement::new(metric, unit, higher).subject(engine).value(value);
            if let (Some((name, _)), Some(theirs)) = (baseline, &theirs) {
                m = m.baseline(name, theirs[i].1, &[]);
            }
            m.label("keys", keys).record();
        }
    }

    fn encode(&self) -> String {
        format!(
            "ROW load={} get={} multi_get={} space={} write={} rss={}",
            self.load_per_s,
            self.get_per_s,
            self.multi_get_per_s,
            self.space_amp,
            self.write_amp,
            self.peak_rss_mib
        )
    }

    fn decode(line: &str) -> Option<Row> {
        let rest = line.strip_prefix("ROW ")?;
        let mut row = Row::default();
        for pair in rest.split(' ') {
            let (k, v) = pair.split_once('=')?;
            let v: f64 = v.parse().ok()?;
            match k {
                "load" => row.load_per_s = v,
                "get" => row.get_per_s = v,
                "multi_get" => row.multi_get_per_s = v,
                "space" => row.space_amp = v,
                "write" => row.write_amp = v,
                "rss" => row.peak_rss_mib = v,
                _ => return None,
            }
        }
        Some(row)
    }
}

fn peak_rss_mib() -> f64 {
    status_mib("VmHWM:")
}

fn rss_mib() -> f64 {
    status_mib("VmRSS:")
}

/// A memory figure of this process from /proc/self/status.
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib / 1024.0
}

fn user_bytes(keys: u64) -> f64 {
    (keys * (KEY_BYTES + VALUE_BYTES as u64)) as f64
}

/// The keys read: random existing keys, the same for every engine; gets and multi_gets draw
/// different ones (`seed`), so multi_gets do not find the gets' blocks cached.
fn read_keys(keys: u64, reads: u64, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..reads).map(|_| key(rng.random_range(0..keys))).collect()
}

fn per_s(n: u64, since: Instant) -> f64 {
    n as f64 / since.elapsed().as_secs_f64()
}

/// Latency of the `ours-dfs` rows' store per request.
const DFS_LATENCY: Duration = Duration::from_micros(1500);

/// Our engine's options for a row; `dfs`: what the Flink backend sets for a DB on a remote file
/// system (`ForStStateBackend.nativeOptions`): Flink's 64 MB files and two compaction threads.
fn ours_options(dfs: bool, dynamic: bool) -> DbOptions {
    let (target_file_bytes, compactions) =
        if dfs { (64 << 20, 2) } else { (DbOptions::default().target_file_bytes, 1) };
    DbOptions {
        block_cache_bytes: BLOCK_CACHE,
        memtable_bytes: MEMTABLE,
        max_frozen_memtables: FROZEN,
        dynamic_level_sizes: dynamic,
        max_background_compactions: env_u64("SCALE_COMPACTION_THREADS", compactions).max(1)
            as usize,
        target_file_bytes,
        l0_compaction_trigger: env_u64(
            "SCALE_L0_TRIGGER",
            DbOptions::default().l0_compaction_trigger as u64,
        ) as usize,
        ..DbOptions::default()
    }
}

/// Writes `keys` keys, flushes and waits until compaction settled.
fn load_ours(db: &Db, cf: &ColumnFamily, keys: u64) {
    let mut batch = WriteBatch::new();
    for i in 0..keys {
        batch.put(cf, &key(i), &value(i));
        if batch.len() as u64 == BATCH {
            db.write(&batch).unwrap();
            batch.clear();
        }
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    db.compact_until_settled().unwrap();
}

fn ours_gets(db: &Db, cf: &ColumnFamily, probes: &[Vec<u8>]) {
    for k in probes {
        assert!(db.get(cf, k).unwrap().is_some());
    }
}

fn ours_multi_gets(db: &Db, cf: &ColumnFamily, probes: &[Vec<u8>]) {
    for chunk in probes.chunks(BATCH as usize) {
        let request: Vec<_> = chunk.iter().map(|k| (cf, &k[..])).collect();
        assert!(db.multi_get(&request).unwrap().iter().all(Option::is_some));
    }
}

fn run_ours(dir: &std::path::Path, keys: u64, reads: u64, dfs: bool, dynamic: bool) -> Row {
    let url = format!("file://{}", dir.display());
    let local = open_storage(&url, &StorageOptions::default()).unwrap();
    let latency_store =
        dfs.then(|| Arc::new(LatencyStorage::new(local.clone(), Latency::per_call(DFS_LATENCY))));
    let storage = latency_store.clone().map_or(local, |store| store as StorageRef);
    let db = Db::open_with_storage(storage, ours_options(dfs, dynamic)).unwrap();
    let cf = db.create_cf("state").unwrap();
    let start = Instant::now();
    load_ours(&db, &cf, keys);
    let load = per_s(keys, start);
    let stats = db.stats();
    if let Some(store) = &latency_store {
        // What the load asked of the latency store (stderr: not part of the table).
        let s = store.stats();
        eprintln!(
            "ours-dfs load: {} requests ({} reads of {} MiB, {} writes of {} MiB), {} round \
             trips, {:.0} s of injected latency",
            s.calls,
            s.reads,
            s.bytes_read >> 20,
            s.writes,
            s.bytes_written >> 20,
            s.round_trips,
            s.delayed.as_secs_f64()
        );
    }

    let rss_loaded = rss_mib();
    let probes = read_keys(keys, reads, 7);
    let start = Instant::now();
    ours_gets(&db, &cf, &probes);
    let get = per_s(reads, start);
    let batched = read_keys(keys, reads, 8);
    let start = Instant::now();
    ours_multi_gets(&db, &cf, &batched);
    let multi_get = per_s(reads, start);
    let after = db.stats();
    eprintln!(
        "ours reads: RSS {rss_loaded:.0} MiB after the load, {:.0} MiB after the reads (peak \
         {:.0}); block cache {} hits, {} misses; index and filter partitions {} MiB held ({} MiB \
         of room the memtables leave), {} MiB loaded",
        rss_mib(),
        peak_rss_mib(),
        after.block_cache_hits - stats.block_cache_hits,
        after.block_cache_misses - stats.block_cache_misses,
        after.block_cache_index_filter_bytes >> 20,
        after.index_filter_room_bytes >> 20,
        (after.index_filter_bytes_loaded - stats.index_filter_bytes_loaded) >> 20,
    );
    let written = stats.flush_bytes_written + stats.compaction_bytes_written;
    // Where the bytes went, for reading a write amplification (stderr: not part of the table).
    eprintln!(
        "ours levels: files {:?}, MiB {:?}, flushed {} MiB, compacted {} MiB in {} compactions \
         (MiB written per level {:?})",
        stats.files_per_level,
        stats.bytes_per_level.iter().map(|b| b >> 20).collect::<Vec<_>>(),
        stats.flush_bytes_written >> 20,
        stats.compaction_bytes_written >> 20,
        stats.compactions,
        stats.compaction_bytes_written_per_level.iter().map(|b| b >> 20).collect::<Vec<_>>(),
    );
    let row = Row {
        load_per_s: load,
        get_per_s: get,
        multi_get_per_s: multi_get,
        space_amp: stats.live_sst_bytes() as f64 / user_bytes(keys),
        write_amp: written as f64 / user_bytes(keys),
        peak_rss_mib: peak_rss_mib(),
    };
    db.close().unwrap();
    row
}

fn rocks_ticker(stats: &str, name: &str) -> u64 {
    stats
        .lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(" COUNT"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `in_budget`: index and filter blocks in the block cache, L0's pinned, as Flink sets RocksDB
/// (and its ForSt) up under managed memory; otherwise RocksDB's default of holding every index
/// and filter in memory outside the cache.
/// RocksDB's options for a row; `in_budget`: index and filter blocks in the block cache, as
/// Flink sets it up under managed memory.
fn rocks_options(in_budget: bool, dynamic: bool) -> rocksdb::Options {
    let mut table = rocksdb::BlockBasedOptions::default();
    let cache = rocksdb::Cache::new_lru_cache(BLOCK_CACHE as usize).unwrap();
    table.set_block_cache(&cache);
    table.set_bloom_filter(10.0, false);
    table.set_cache_index_and_filter_blocks(in_budget);
    table.set_pin_l0_filter_and_index_blocks_in_cache(in_budget);
    let mut options = rocksdb::Options::default();
    options.create_if_missing(true);
    options.create_missing_column_families(true);
    options.set_block_based_table_factory(&table);
    options.set_write_buffer_size(MEMTABLE as usize);
    options.set_max_write_buffer_number(FROZEN as i32 + 1);
    options.set_compression_type(rocksdb::DBCompressionType::Lz4);
    options.set_level_compaction_dynamic_level_bytes(dynamic);
    options.enable_statistics();
    options
}

/// A RocksDB with the family "state", opened with `options`.
fn open_rocks(dir: &std::path::Path, options: &rocksdb::Options) -> rocksdb::DB {
    // The family takes the options too: `open_cf` would give it RocksDB's defaults (no bloom
    // filter, the default codec and block cache, 2 write buffers, static level sizes).
    let state = rocksdb::ColumnFamilyDescriptor::new("state", options.clone());
    rocksdb::DB::open_cf_descriptors(options, dir, [state]).unwrap()
}

/// Writes `keys` keys (no WAL, as ours has none), flushes and waits until compaction settled.
fn load_rocks(db: &rocksdb::DB, keys: u64) {
    let cf = db.cf_handle("state").unwrap();
    let mut no_wal = rocksdb::WriteOptions::default();
    no_wal.disable_wal(true);
    let mut batch = rocksdb::WriteBatch::default();
    for i in 0..keys {
        batch.put_cf(cf, key(i), value(i));
        if batch.len() as u64 == BATCH {
            db.write_opt(std::mem::take(&mut batch), &no_wal).unwrap();
        }
    }
    db.write_opt(batch, &no_wal).unwrap();
    db.flush_cf(cf).unwrap();
    // Settled: no compaction pending or running (bounded by the row timeout of the parent).
    loop {
        let busy = |p: &str| db.property_int_value_cf(cf, p).unwrap().unwrap_or(0) > 0;
        if !busy("rocksdb.compaction-pending") && !busy("rocksdb.num-running-compactions") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn rocks_gets(db: &rocksdb::DB, probes: &[Vec<u8>]) {
    let cf = db.cf_handle("state").unwrap();
    for k in probes {
        assert!(db.get_pinned_cf(cf, k).unwrap().is_some());
    }
}

fn rocks_multi_gets(db: &rocksdb::DB, probes: &[Vec<u8>]) {
    let cf = db.cf_handle("state").unwrap();
    for chunk in probes.chunks(BATCH as usize) {
        let got = db.batched_multi_get_cf(cf, chunk, false);
        assert!(got.iter().all(|r| matches!(r, Ok(Some(_)))));
    }
}

fn run_rocks(dir: &std::path::Path, keys: u64, reads: u64, in_budget: bool, dynamic: bool) -> Row {
    let options = rocks_options(in_budget, dynamic);
    let db = open_rocks(dir, &options);
    let cf = db.cf_handle("state").unwrap();
    let start = Instant::now();
    load_rocks(&db, keys);
    let load = per_s(keys, start);
    let stats = options.get_statistics().unwrap_or_default();
    let written = rocks_ticker(&stats, "rocksdb.flush.write.bytes")
        + rocks_ticker(&stats, "rocksdb.compact.write.bytes");
    let live = db.property_int_value_cf(cf, "rocksdb.live-sst-files-size").unwrap().unwrap_or(0);
    // Its per-level compaction table, to set beside ours (stderr: not part of the table).
    if let Ok(Some(levels)) = db.property_value_cf(cf, "rocksdb.cfstats") {
        let table = levels.lines().filter(|l| l.trim_start().starts_with('L') || l.contains("Sum"));
        eprintln!("rocksdb levels:\n{}", table.take(10).collect::<Vec<_>>().join("\n"));
    }

    let probes = read_keys(keys, reads, 7);
    let start = Instant::now();
    rocks_gets(&db, &probes);
    let get = per_s(reads, start);
    let batched = read_keys(keys, reads, 8);
    let start = Instant::now();
    rocks_multi_gets(&db, &batched);
    let multi_get = per_s(reads, start);
    Row {
        load_per_s: load,
        get_per_s: get,
        multi_get_per_s: multi_get,
        space_amp: live as f64 / user_bytes(keys),
        write_amp: written as f64 / user_bytes(keys),
        peak_rss_mib: peak_rss_mib(),
    }
}

/// Turns of a `turns` row.
const TURNS: u64 = 6;

/// In the child, for `SCALE_TURNS`: loads ours and rocksdb as the `ours` and `rocksdb` rows do,
/// side by side, then measures their gets and multi_gets in turns on the same keys, alternating
/// which goes first, and prints the median of the turns' ratios and their range. A slow phase of
/// the shared machine then weighs on both sides of a ratio; the rows measure the two engines
/// minutes apart. Both databases' files are read once before the turns: the second load's
/// writes would otherwise have pushed the first database's files out of the page cache.
fn read_turns(base: &str, keys: u64, reads: u64) {
    let (ours_dir, rocks_dir) =
        (tempfile::tempdir_in(base).unwrap(), tempfile::tempdir_in(base).unwrap());
    let url = format!("file://{}", ours_dir.path().display());
    let db = Db::open(&url, ours_options(false, false)).unwrap();
    let cf = db.create_cf("state").unwrap();
    load_ours(&db, &cf, keys);
    let rocks = open_rocks(rocks_dir.path(), &rocks_options(false, false));
    load_rocks(&rocks, keys);
    for dir in [&ours_dir, &rocks_dir] {
        read_all_files(dir.path());
    }
    let per_turn = (reads / TURNS).max(1);
    let timed = |reads: &dyn Fn()| {
        let start = Instant::now();
        reads();
        per_s(per_turn, start)
    };
    // Per operation: ours' rates, rocksdb's rates, ours / rocksdb per turn.
    let mut gets: [Vec<f64>; 3] = Default::default();
    let mut multi_gets: [Vec<f64>; 3] = Default::default();
    for turn in 0..TURNS {
        let pair = |what: &str, into: &mut [Vec<f64>; 3], ours: &dyn Fn(), rocks: &dyn Fn()| {
            let (ours, rocks) = if turn % 2 == 0 {
                let ours = timed(ours);
                (ours, timed(rocks))
            } else {
                let rocks = timed(rocks);
                (timed(ours), rocks)
            };
            eprintln!("turn {turn} {what}: ours {ours:.0}/s, rocksdb {rocks:.0}/s");
            into[0].push(ours);
            into[1].push(rocks);
            into[2].push(ours / rocks);
        };
        let probes = read_keys(keys, per_turn, 100 + turn);
        pair("get", &mut gets, &|| ours_gets(&db, &cf, &probes), &|| rocks_gets(&rocks, &probes));
        let probes = read_keys(keys, per_turn, 200 + turn);
        pair("multi_get", &mut multi_gets, &|| ours_multi_gets(&db, &cf, &probes), &|| {
            rocks_multi_gets(&rocks, &probes)
        });
    }
    let median = |values: &[f64]| {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let text = |ratios: &[f64]| {
        let (lo, hi) = ratios.iter().fold((f64::MAX, f64::MIN), |(l, h), r| (l.min(*r), h.max(*r)));
        format!("{:.2}x ({lo:.2}-{hi:.2})", median(ratios))
    };
    println!(
        "| {keys} | ours/rocksdb in {TURNS} turns | | {} | {} | | | | |",
        text(&gets[2]),
        text(&multi_gets[2])
    );
    for (metric, unit, [ours, rocks, ratios]) in
        [("get", "gets/s", &gets), ("multi_get", "keys/s", &multi_gets)]
    {
        Measurement::new(&format!("{metric}, in turns"), unit, true)
            .subject("ours")
            .value(median(ours))
            .rounds(ours)
            .baseline("rocksdb", median(rocks), rocks)
            .ratio_rounds(median(ratios), ratios)
            .label("keys", keys)
            .record();
    }
}

/// Reads every file under `dir` once, into the page cache.
fn read_all_files(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_all_files(&path);
        } else {
            std::io::copy(&mut std::fs::File::open(&path).unwrap(), &mut std::io::sink()).unwrap();
        }
    }
}

/// In the child: runs one row and prints it.
fn child(spec: &str) {
    let (engine, keys) = spec.split_once(':').expect("SCALE_ROW is engine:keys");
    let keys: u64 = keys.parse().unwrap();
    let reads = match engine {
        "ours-dfs" => env_u64("SCALE_DFS_READS", 20_000),
        _ => env_u64("SCALE_READS", 200_000),
    }
    .min(keys);
    let base = env_or("SCALE_DIR", &std::env::temp_dir().display().to_string());
    if engine == "turns" {
        return read_turns(&base, keys, reads);
    }
    let dir = tempfile::tempdir_in(base).unwrap();
    let row = match engine {
        "ours" => run_ours(dir.path(), keys, reads, false, false),
        "ours-dfs" => run_ours(dir.path(), keys, reads, true, false),
        "ours-dynamic" => run_ours(dir.path(), keys, reads, false, true),
        "rocksdb" => run_rocks(dir.path(), keys, reads, false, false),
        "rocksdb-in-budget" => run_rocks(dir.path(), keys, reads, true, false),
        "rocksdb-dynamic" => run_rocks(dir.path(), keys, reads, false, true),
        other => panic!("unknown engine {other}"),
    };
    println!("{}", row.encode());
}

/// In the parent: runs one row in a child process, killed after `timeout`.
fn run_row(engine: &str, keys: u64, timeout: Duration) -> Option<Row> {
    run_child(engine, keys, timeout)?.lines().find_map(Row::decode)
}

/// Runs this binary for `SCALE_ROW=engine:keys`, killed after `timeout`; what it printed.
fn run_child(engine: &str, keys: u64, timeout: Duration) -> Option<String> {
    let exe = std::env::current_exe().unwrap();
    let out_path =
        std::env::temp_dir().join(format!("scale-row-{}-{engine}-{keys}", std::process::id()));
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child =
        Command::new(exe).env("SCALE_ROW", format!("{engine}:{keys}")).stdout(out).spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > timeout {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    match status {
        Some(s) if s.success() => Some(text),
        Some(s) => {
            eprintln!("{engine} at {keys} keys failed: {s}");
            None
        }
        None => {
            eprintln!("{engine} at {keys} keys timed out after {timeout:?}");
            None
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var("SCALE_ROW") {
        child(&spec);
        return;
    }
    let sizes: Vec<u64> = env_or("SCALE_KEYS", "1000000 4000000")
        .split_whitespace()
        .map(|s| s.parse().expect("SCALE_KEYS: numbers"))
        .collect();
    let timeout = Duration::from_secs(env_u64("SCALE_ROW_TIMEOUT_S", 1800));
    let budget_mib = budget() as f64 / MIB;
    println!(
        "scale: 16-byte keys, 100-byte values, local directory (ours-dfs: behind {} ms per \
         request); budget {budget_mib:.0} MiB (block cache {} MiB + {} x {} MiB memtables), reads \
         {} (ours-dfs: {})",
        DFS_LATENCY.as_secs_f64() * 1e3,
        BLOCK_CACHE >> 20,
        FROZEN + 1,
        MEMTABLE >> 20,
        env_u64("SCALE_READS", 200_000),
        env_u64("SCALE_DFS_READS", 20_000)
    );
    println!(
        "| keys | engine | load/s | get/s | multi_get/s | space amp | write amp | peak RSS MiB | RSS - budget MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let engines = env_or("SCALE_ENGINES", "rocksdb rocksdb-in-budget ours ours-dfs");
    results::parameters(&[
        ("SCALE_KEYS", env_or("SCALE_KEYS", "1000000 4000000").into()),
        ("SCALE_READS", env_u64("SCALE_READS", 200_000).into()),
        ("SCALE_DFS_READS", env_u64("SCALE_DFS_READS", 20_000).into()),
        ("SCALE_ENGINES", engines.as_str().into()),
        ("SCALE_TURNS", env_or("SCALE_TURNS", "0").into()),
        ("budget_mib", budget_mib.into()),
        ("key bytes", KEY_BYTES.into()),
        ("value bytes", (VALUE_BYTES as u64).into()),
    ]);
    let turns = std::env::var("SCALE_TURNS").is_ok_and(|v| v == "1");
    for keys in sizes {
        if turns {
            print!("{}", run_child("turns", keys, timeout).unwrap_or_default());
        }
        let rows: Vec<(&str, Option<Row>)> = engines
            .split_whitespace()
            .map(|engine| (engine, run_row(engine, keys, timeout)))
            .collect();
        for (name, row) in &rows {
            if let Some(r) = row {
                if !name.starts_with("ours") {
                    r.record(name, keys, None);
                }
                println!(
                    "| {keys} | {name} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.0} | {:+.0} |",
                    r.load_per_s,
                    r.get_per_s,
                    r.multi_get_per_s,
                    r.space_amp,
                    r.write_amp,
                    r.peak_rss_mib,
                    r.peak_rss_mib - budget_mib
                );
            }
        }
        let ours = rows.iter().filter(|(name, _)| name.starts_with("ours"));
        for (name, o) in ours.filter_map(|(name, row)| Some((name, row.as_ref()?))) {
            let dynamic = name.ends_with("-dynamic");
            let baselines: &[&str] =
                if dynamic { &["rocksdb-dynamic"] } else { &["rocksdb", "rocksdb-in-budget"] };
            let rows: Vec<_> = baselines
                .iter()
                .filter_map(|&baseline| {
                    let row = rows.iter().find(|(n, _)| *n == baseline)?.1.as_ref()?;
                    Some((baseline, row))
                })
                .collect();
            if rows.is_empty() {
                o.record(name, keys, None);
            }
            for (baseline, r) in rows {
                o.record(name, keys, Some((baseline, r)));
                println!(
                    "| {keys} | {name}/{baseline} | {:.2}x | {:.2}x | {:.2}x | {:.2}x | {:.2}x | {:.2}x | |",
                    o.load_per_s / r.load_per_s,
                    o.get_per_s / r.get_per_s,
                    o.multi_get_per_s / r.multi_get_per_s,
                    o.space_amp / r.space_amp,
                    o.write_amp / r.write_amp,
                    o.peak_rss_mib / r.peak_rss_mib
                );
            }
        }
    }
}
