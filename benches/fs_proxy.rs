//! Positional-read throughput through the Flink file-system proxy vs native storage on the same
//! local file: `LocalStorage` (std::fs pread), object_store's `LocalFileSystem`, the proxy
//! (`FlinkProxyStorage` over Flink's local file system, through JNI), and a plain Java loop over
//! the Flink FS (no JNI). 4 KiB and 64 KiB reads at random aligned offsets, 1 and 8 threads.
//!
//! Needs a JVM class path with the forstjni classes, Flink and the bench's Java class
//! (`FORST_BENCH_CLASSPATH`); run it through `scripts/bench-fs-proxy.sh`. Env: `FSB_FILE_MIB`
//! (default 256), `FSB_MILLIS` per measurement (default 2000).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use forst::storage::{
    FlinkProxyStorage, LocalBackend, StorageOptions, StorageRef, WriteMode, block_on, open_storage,
};
use jni::JavaVM;
use jni::objects::JValue;

#[path = "support/jvm.rs"]
mod jvm;
#[path = "support/results.rs"]
mod results;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use results::Measurement;

const FILE: &str = "data.bin";

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// MB/s of `threads` threads reading `size`-byte ranges for `millis` ms.
fn measure(storage: &StorageRef, file_bytes: u64, size: u64, threads: usize, millis: u64) -> f64 {
    let total = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_millis(millis);
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (storage, total) = (storage.clone(), total.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(t as u64);
                let blocks = file_bytes / size;
                let mut bytes = 0;
                while Instant::now() < deadline {
                    let at = rng.random_range(0..blocks) * size;
                    let data = block_on(storage.read_range(FILE, at..at + size)).unwrap();
                    assert_eq!(data.len() as u64, size);
                    bytes += size;
                }
                total.fetch_add(bytes, Ordering::Relaxed);
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    total.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn java_loop(vm: &JavaVM, uri: &str, size: u64, threads: usize, millis: u64) -> f64 {
    let mut env = vm.attach_current_thread().unwrap();
    let start = Instant::now();
    let uri = env.new_string(uri).unwrap();
    let bytes = env
        .call_static_method(
            "org/forstrs/fs/bench/JavaReadLoop",
            "run",
            "(Ljava/lang/String;IIJ)J",
            &[
                JValue::Object(&uri),
                JValue::Int(size as i32),
                JValue::Int(threads as i32),
                JValue::Long(millis as i64),
            ],
        )
        .and_then(|v| v.j())
        .unwrap_or_else(|e| {
            let _ = env.exception_describe();
            panic!("JavaReadLoop.run failed: {e}")
        });
    bytes as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let Ok(classpath) = std::env::var("FORST_BENCH_CLASSPATH") else {
        eprintln!("fs_proxy: FORST_BENCH_CLASSPATH is not set; run scripts/bench-fs-proxy.sh");
        return;
    };
    let file_bytes = env("FSB_FILE_MIB", 256) << 20;
    let millis = env("FSB_MILLIS", 2000);

    results::parameters(&[
        ("FSB_FILE_MIB", (file_bytes >> 20).into()),
        ("FSB_MILLIS", millis.into()),
    ]);
    let vm = jvm::start(&classpath);

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    let url = format!("file://{root}");
    let local_options = StorageOptions { local_fsync: false, ..Default::default() };
    let local = open_storage(&url, &local_options).unwrap();
    let mut data = vec![0u8; file_bytes as usize];
    StdRng::seed_from_u64(7).fill(&mut data[..]);
    block_on(local.put(FILE, Bytes::from(data), WriteMode::Overwrite)).unwrap();

    let mut object_store_options = local_options.clone();
    object_store_options.local_backend = LocalBackend::ObjectStore;
    let object_store = open_storage(&url, &object_store_options).unwrap();
    // Resolves the bridge classes on this thread: attached from native code, it sees the class
    // path through the system class loader.
    let flink_proxy = FlinkProxyStorage::open(&url).unwrap();
    let kind = block_on(flink_proxy.read_kind(FILE)).unwrap();
    let proxy: StorageRef = Arc::new(flink_proxy);

    println!(
        "positional reads of a {} MiB file (page cache), {millis} ms per cell; proxy read path: \
         {kind}",
        file_bytes >> 20
    );
    println!(
        "{:>6} {:>7} | {:>12} {:>12} {:>12} {:>12} | {:>9} {:>9} {:>9}",
        "read",
        "threads",
        "local MB/s",
        "obj_st MB/s",
        "proxy MB/s",
        "java MB/s",
        "px/local",
        "px/obj_st",
        "px/java"
    );
    for size in [4u64 << 10, 64 << 10] {
        for threads in [1usize, 8] {
            // warm-up: opens streams and fills pools
            measure(&proxy, file_bytes, size, threads, 200);
            let l = measure(&local, file_bytes, size, threads, millis);
            let o = measure(&object_store, file_bytes, size, threads, millis);
            let p = measure(&proxy, file_bytes, size, threads, millis);
            let j = java_loop(&vm, &format!("{url}/{FILE}"), size, threads, millis);
            println!(
                "{:>5}K {threads:>7} | {l:>12.0} {o:>12.0} {p:>12.0} {j:>12.0} | {:>9.2} {:>9.2} {:>9.2}",
                size >> 10,
                p / l,
                p / o,
                p / j
            );
            let baselines = [
                ("LocalStorage (native)", l),
                ("object_store LocalFileSystem", o),
                ("Java loop over Flink's FS", j),
            ];
            for (baseline, rate) in baselines {
                let plural = if threads == 1 { "" } else { "s" };
                let name = format!("{} KiB reads, {threads} thread{plural}", size >> 10);
                Measurement::new(&name, "MB/s", true)
                    .subject("Flink file-system proxy (JNI)")
                    .value(p)
                    .baseline(baseline, rate, &[])
                    .label("read_kib", size >> 10)
                    .label("threads", threads as u64)
                    .record();
            }
        }
    }
}
