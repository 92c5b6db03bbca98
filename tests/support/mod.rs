//! Shared helpers for integration tests: `mod support;` in a test file.
//!
//! S3 tests run against a real S3-compatible server: a moto server started once per test binary
//! (see `s3_server.py`), or the server named by `FORST_S3_ENDPOINT` / `FORST_S3_BUCKET`.
#![allow(dead_code)] // each test binary uses a different subset

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use forst::storage::{S3Options, StorageOptions, StorageRef, open_storage};

pub struct S3Server {
    pub endpoint: String,
    pub bucket: String,
    /// Kept (never dropped: statics are not) so the server's stdin stays open until this process
    /// exits; the OS then closes it and the script stops moto.
    _child: Option<(Child, ChildStdin)>,
}

static S3: OnceLock<S3Server> = OnceLock::new();

/// (endpoint, bucket) of the test S3 server, starting it on first use.
pub fn s3() -> (String, String) {
    let server = S3.get_or_init(start_s3);
    (server.endpoint.clone(), server.bucket.clone())
}

/// Options to reach [`s3()`]; moto accepts any credentials.
pub fn s3_options() -> StorageOptions {
    let (endpoint, _) = s3();
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    StorageOptions {
        s3: S3Options {
            endpoint: Some(endpoint),
            region: Some(env("FORST_S3_REGION", "us-east-1")),
            access_key_id: Some(env("FORST_S3_ACCESS_KEY_ID", "testing")),
            secret_access_key: Some(env("FORST_S3_SECRET_ACCESS_KEY", "testing")),
            path_style: None,
            ..S3Options::default()
        },
        ..StorageOptions::default()
    }
}

/// URL of a prefix on the test S3 server that no other test (or earlier run) uses.
pub fn fresh_s3_url(tag: &str) -> String {
    let (_, bucket) = s3();
    format!("s3://{bucket}/{}", unique_name(tag))
}

/// Storage on a fresh prefix of the test S3 server.
pub fn fresh_s3(tag: &str) -> StorageRef {
    let url = fresh_s3_url(tag);
    open_storage(&url, &s3_options()).unwrap_or_else(|e| panic!("cannot open {url}: {e}"))
}

/// Storage on a fresh `memory://` store.
pub fn fresh_memory(tag: &str) -> StorageRef {
    open_storage(&format!("memory://{}", unique_name(tag)), &StorageOptions::default())
        .expect("memory storage")
}

/// `tag-<pid>-<time>-<counter>`: unique across tests, processes and reruns against one server.
pub fn unique_name(tag: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{tag}-{}-{nanos}-{n}", std::process::id())
}

fn start_s3() -> S3Server {
    if let Ok(endpoint) = std::env::var("FORST_S3_ENDPOINT") {
        let bucket = std::env::var("FORST_S3_BUCKET")
            .expect("FORST_S3_ENDPOINT is set, so FORST_S3_BUCKET must name a bucket on it");
        return S3Server { endpoint, bucket, _child: None };
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/s3_server.py");
    let python = std::env::var("FORST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(&python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {python} {script}: {e}; run scripts/install-deps.sh")
        });
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");

    // A thread reads the script's output so the wait below can time out.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let ready = line.starts_with("READY ");
            if tx.send(line).is_err() || ready {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(90)) {
            Ok(line) if line.starts_with("READY ") => {
                let mut words = line.split_whitespace().skip(1);
                let endpoint = words.next().expect("endpoint in READY line").to_string();
                let bucket = words.next().expect("bucket in READY line").to_string();
                return S3Server { endpoint, bucket, _child: Some((child, stdin)) };
            }
            Ok(line) => seen.push(line),
            Err(e) => {
                let _ = child.kill();
                let status = child.wait().ok();
                panic!(
                    "moto S3 server did not start ({e}, exit {status:?}): {}\n\
                     S3 tests need moto: run scripts/install-deps.sh \
                     (or set FORST_S3_ENDPOINT and FORST_S3_BUCKET)",
                    seen.join("\n")
                );
            }
        }
    }
}
