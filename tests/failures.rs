//! Corruption, injected storage faults, and checkpoint pins: the engine reports damage with file
//! and offset instead of panicking or returning wrong data, a failed flush or compaction leaves
//! the last good version readable, and pinned files survive compaction.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use forst::lsm::{Db, DbOptions};
use forst::storage::{
    FaultStorage, LocalStorage, OpKind, StorageOptions, StorageRef, WriteMode, block_on,
    open_storage,
};
use forst::{Error, ErrorKind};

fn options() -> DbOptions {
    DbOptions {
        memtable_bytes: 256 << 10,
        target_file_bytes: 64 << 10,
        auto_compaction: false,
        // Transient failures are retried at once, twice: tests count attempts, not time.
        background_retries: 2,
        retry_backoff: Duration::ZERO,
        ..DbOptions::default()
    }
}

fn memory(name: &str) -> StorageRef {
    open_storage(&format!("memory://{name}"), &StorageOptions::default()).unwrap()
}

fn fill(db: &Db, cf: &forst::lsm::ColumnFamily, range: std::ops::Range<u32>, tag: &str) {
    for i in range {
        db.put(cf, format!("key{i:06}").as_bytes(), format!("{tag}-{i}").as_bytes()).unwrap();
    }
}

fn only_sst(storage: &StorageRef) -> String {
    let files: Vec<String> = block_on(storage.list(""))
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .filter(|p| p.ends_with(".sst"))
        .collect();
    assert_eq!(files.len(), 1, "expected one SST: {files:?}");
    files.into_iter().next().unwrap()
}

/// One flushed SST holding key000000..key002000; returns (storage, sst path, its bytes).
fn one_table(name: &str) -> (StorageRef, String, Bytes) {
    let storage = memory(name);
    let db =
        Db::open_with_storage(storage.clone(), DbOptions { memtable_bytes: 16 << 20, ..options() })
            .unwrap();
    let cf = db.create_cf("s").unwrap();
    fill(&db, &cf, 0..2000, "v");
    db.flush().unwrap();
    db.close().unwrap();
    let path = only_sst(&storage);
    let bytes = block_on(storage.read(&path)).unwrap();
    (storage, path, bytes)
}

fn rewrite(storage: &StorageRef, path: &str, bytes: Vec<u8>) {
    block_on(storage.put(path, bytes.into(), WriteMode::Overwrite)).unwrap();
}

fn assert_corruption_names_file(err: Error, path: &str) {
    match &err {
        Error::Corruption { file, .. } => {
            assert!(file.contains(path), "{err} does not name {path}")
        }
        other => panic!("expected corruption naming {path}, got {other}"),
    }
}

#[test]
fn flipped_byte_in_a_data_block_is_reported_on_read() {
    let (storage, path, bytes) = one_table("corrupt-data");
    let mut bad = bytes.to_vec();
    bad[100] ^= 0x01; // inside the first data block
    rewrite(&storage, &path, bad);
    let db = Db::open_with_storage(storage, options()).unwrap();
    let cf = db.cf("s").unwrap();
    let err = db.get(&cf, b"key000000").unwrap_err();
    assert_corruption_names_file(err, &path);
    // Keys in intact blocks are still served correctly.
    assert_eq!(db.get(&cf, b"key001999").unwrap().unwrap(), "v-1999");
    let err = db
        .iter(&cf, None, None)
        .and_then(|mut it| {
            while it.valid() {
                it.advance()?;
            }
            Ok(())
        })
        .unwrap_err();
    assert_corruption_names_file(err, &path);
}

/// Tables open on first read (a restored or reopened database reads no file before it needs
/// one), so a damaged footer or index fails the first read and the scan, naming the file.
fn assert_reads_fail_naming(storage: &StorageRef, path: &str) {
    let db = Db::open_with_storage(storage.clone(), options()).unwrap();
    let cf = db.cf("s").unwrap();
    assert_corruption_names_file(db.get(&cf, b"key000000").unwrap_err(), path);
    assert_corruption_names_file(db.iter(&cf, None, None).err().expect("scan must fail"), path);
    // Still failing on the next try: a damaged table is never cached as opened.
    assert_corruption_names_file(db.get(&cf, b"key001000").unwrap_err(), path);
}

#[test]
fn flipped_byte_in_the_index_or_footer_fails_reads() {
    let (storage, path, bytes) = one_table("corrupt-index");
    for back in [1usize, 20, 60, 200] {
        let mut bad = bytes.to_vec();
        let at = bad.len() - back;
        bad[at] ^= 0x10;
        rewrite(&storage, &path, bad);
        assert_reads_fail_naming(&storage, &path);
    }
}

#[test]
fn truncated_file_fails_reads() {
    let (storage, path, bytes) = one_table("corrupt-truncated");
    for len in [0, 10, bytes.len() / 2, bytes.len() - 1] {
        rewrite(&storage, &path, bytes[..len].to_vec());
        assert_reads_fail_naming(&storage, &path);
    }
}

#[test]
fn short_reads_are_detected() {
    let (storage, path, _) = one_table("short-reads");
    let faulty = Arc::new(FaultStorage::new(storage));
    let db = Db::open_with_storage(faulty.clone(), options()).unwrap();
    let cf = db.cf("s").unwrap();
    faulty.short_reads(1.0, 7);
    let err = db.get(&cf, b"key000500").unwrap_err();
    assert!(err.to_string().contains(&path), "{err}");
    faulty.clear();
    assert_eq!(db.get(&cf, b"key000500").unwrap().unwrap(), "v-500");
}

/// The error that failed the database, from the error of a call made after the failure.
fn failure_cause(err: &Error) -> &Error {
    match err {
        Error::Failed(cause) => cause,
        other => panic!("expected a failed database, got {other}"),
    }
}

/// Every call of a failed database errors, naming the original cause.
fn assert_refuses_every_call(db: &Db, cf: &forst::lsm::ColumnFamily, cause: &str) {
    let errors = [
        db.put(cf, b"key", b"v").unwrap_err(),
        db.get(cf, b"key000001").unwrap_err(),
        db.iter(cf, None, None).err().expect("scans fail"),
        db.checkpoint().err().expect("checkpoints fail"),
        db.flush().unwrap_err(),
    ];
    for err in errors {
        assert!(failure_cause(&err).to_string().contains(cause), "{err} does not name {cause}");
    }
}

#[test]
fn a_transient_flush_failure_is_retried_and_loses_nothing() {
    let base = memory("fault-flush-heal");
    let faulty = Arc::new(FaultStorage::new(base.clone()));
    let db = Db::open_with_storage(faulty.clone(), options()).unwrap();
    let cf = db.create_cf("s").unwrap();
    fill(&db, &cf, 0..300, "v");
    faulty.fail_nth(OpKind::Put, 1);
    db.flush().unwrap();
    assert_eq!(faulty.injected(), 1, "the flush failed once and was retried");
    assert_eq!(db.get(&cf, b"key000299").unwrap().unwrap(), "v-299");
    db.close().unwrap();
    drop(db);
    let db = Db::open_with_storage(base, options()).unwrap();
    assert_eq!(db.get(&db.cf("s").unwrap(), b"key000299").unwrap().unwrap(), "v-299");
}

#[test]
fn a_flush_failing_past_its_retries_fails_the_database_and_reopen_finds_the_last_good_version() {
    let base = memory("fault-flush");
    let faulty = Arc::new(FaultStorage::new(base.clone()));
    let db = Db::open_with_storage(faulty.clone(), options()).unwrap();
    let cf = db.create_cf("s").unwrap();
    fill(&db, &cf, 0..500, "good");
    db.flush().unwrap();
    fill(&db, &cf, 500..1000, "pending");
    // The premise: no flush of the pending writes can have started before the faults do.
    assert_eq!(db.stats().active_memtable_entries, 500, "the pending writes wait in the memtable");
    let puts_before = faulty.calls(OpKind::Put);
    faulty.fail_always(OpKind::Put);
    let err = db.flush().unwrap_err();
    let cause = failure_cause(&err);
    assert!(cause.is_transient() && cause.to_string().contains("injected fault"), "{cause}");
    let attempts = faulty.calls(OpKind::Put) - puts_before;
    assert_eq!(attempts, 1 + u64::from(options().background_retries), "retries are bounded");
    assert_refuses_every_call(&db, &cf, "injected fault");
    db.close().unwrap();
    faulty.clear();
    drop(db);
    // Reopen: exactly the last good version.
    let db = Db::open_with_storage(base, options()).unwrap();
    let cf = db.cf("s").unwrap();
    assert_eq!(db.get(&cf, b"key000100").unwrap().unwrap(), "good-100");
    assert_eq!(db.get(&cf, b"key000700").unwrap(), None);
}

/// A permanent error is not retried (a retry would succeed here: only one put fails), and a
/// writer stalled behind the failed flush learns about it.
#[test]
fn a_permanent_background_flush_error_fails_the_database_at_once() {
    let faulty = Arc::new(FaultStorage::new(memory("fault-flush-permanent")));
    let options = DbOptions { max_frozen_memtables: 1, ..options() };
    let db = Db::open_with_storage(faulty.clone(), options).unwrap();
    let cf = db.create_cf("s").unwrap();
    faulty.fail_as(ErrorKind::PermissionDenied);
    faulty.fail_nth(OpKind::Put, 1);
    // The first full memtable's flush fails; writes go on until one stalls behind it and sees the
    // failure (a bounded number: two memtables' worth).
    let mut written = 0u32;
    let err = loop {
        assert!(written < 100_000, "no write saw the failed flush");
        match db.put(&cf, format!("key{written:06}").as_bytes(), &[7; 100]) {
            Ok(()) => written += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(failure_cause(&err).kind(), ErrorKind::PermissionDenied, "{err}");
    assert_eq!(faulty.injected(), 1);
    assert_refuses_every_call(&db, &cf, "injected fault");
}

#[test]
fn failing_compaction_leaves_the_last_good_version() {
    let base = memory("fault-compaction");
    let faulty = Arc::new(FaultStorage::new(base.clone()));
    // Small output files, so a compaction writes several and a failure can hit any of them.
    let options = || DbOptions { target_file_bytes: 4 << 10, ..options() };
    let db = Db::open_with_storage(faulty.clone(), options()).unwrap();
    let cf = db.create_cf("s").unwrap();
    for round in 0..4 {
        fill(&db, &cf, 0..800, &format!("r{round}"));
        db.flush().unwrap();
    }
    // Puts 1 and 2 write output files, put 3 the manifest: each failure must leave the old version.
    for nth in [1, 2, 3] {
        faulty.fail_nth(OpKind::Put, nth);
        assert!(
            db.compact_all().is_err(),
            "compaction must report failed put #{nth}: {:?}",
            db.stats()
        );
        faulty.clear();
        assert_eq!(db.get(&cf, b"key000400").unwrap().unwrap(), "r3-400");
    }
    db.close().unwrap();
    drop(db);
    let db = Db::open_with_storage(base, options()).unwrap();
    let cf = db.cf("s").unwrap();
    assert_eq!(db.get(&cf, b"key000400").unwrap().unwrap(), "r3-400");
    db.compact_all().unwrap();
    assert_eq!(db.get(&cf, b"key000799").unwrap().unwrap(), "r3-799");
    let outputs = db.stats().files_per_level.iter().sum::<usize>();
    assert!(outputs >= 2, "puts 1 and 2 are output files: the compaction wrote {outputs}");
}

#[test]
fn compaction_never_deletes_files_of_a_checkpoint() {
    let storage = memory("pins");
    let db = Db::open_with_storage(storage.clone(), options()).unwrap();
    let cf = db.create_cf("s").unwrap();
    for round in 0..3 {
        fill(&db, &cf, 0..1000, &format!("r{round}"));
        db.flush().unwrap();
    }
    let mut checkpoint = db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let pinned: Vec<String> = checkpoint.files().unwrap().into_iter().map(|(p, _)| p).collect();
    assert!(pinned.len() >= 3);
    // Compact while pinned: the compacted-away files leave the tree but not storage.
    fill(&db, &cf, 0..1000, "r3");
    db.flush().unwrap();
    db.compact_all().unwrap();
    let exists = |p: &str| block_on(storage.size(p)).is_ok();
    db.wait_for_file_deletions();
    for p in &pinned {
        assert!(exists(p), "pinned file {p} was deleted");
    }
    drop(checkpoint);
    db.wait_for_file_deletions();
    assert!(pinned.iter().all(|p| !exists(p)), "files compacted away are deleted once unpinned");
    assert_eq!(db.get(&cf, b"key000001").unwrap().unwrap(), "r3-1");
}

/// Files replaced by compaction are gone once `close` returns: nothing but the live files and the
/// manifests remain (close waits for the deletions it issued; no waiting by the caller).
#[test]
fn close_leaves_only_live_files() {
    let storage = memory("close-deletes");
    let db = Db::open_with_storage(storage.clone(), options()).unwrap();
    let cf = db.create_cf("s").unwrap();
    for round in 0..4 {
        fill(&db, &cf, 0..1000, &format!("r{round}"));
        db.flush().unwrap();
    }
    db.compact_all().unwrap();
    let live: usize = db.stats().files_per_level.iter().sum();
    db.close().unwrap();
    let ssts = block_on(storage.list(""))
        .unwrap()
        .into_iter()
        .filter(|f| f.path.ends_with(".sst"))
        .count();
    assert_eq!(ssts, live, "SST files left after close");
}

/// SSTs a previous process left behind (its deletes of replaced files failed, as when it dies
/// before them) are collected when the database opens again; live files stay.
#[test]
fn open_collects_files_the_manifest_does_not_list() {
    let base = memory("orphans");
    let faulty = Arc::new(FaultStorage::new(base.clone()));
    faulty.fail_always(OpKind::Delete);
    let db = Db::open_with_storage(faulty.clone(), options()).unwrap();
    let cf = db.create_cf("s").unwrap();
    for round in 0..4 {
        fill(&db, &cf, 0..1000, &format!("r{round}"));
        db.flush().unwrap();
    }
    db.compact_all().unwrap();
    let live: usize = db.stats().files_per_level.iter().sum();
    db.close().unwrap();
    drop(db);
    let ssts = || {
        let files = block_on(base.list("")).unwrap();
        files.into_iter().filter(|f| f.path.ends_with(".sst")).count()
    };
    assert!(ssts() > live, "replaced files were left behind");

    // The process "died" with its deletes failing: its claim on the directory stays until
    // removed, as after a real crash.
    assert!(Db::open_with_storage(base.clone(), options()).is_err(), "the claim held");
    block_on(base.delete("LOCK")).unwrap();
    let db = Db::open_with_storage(base.clone(), options()).unwrap();
    assert_eq!(ssts(), live, "SSTs after reopen");
    let cf = db.cf("s").unwrap();
    assert_eq!(db.get(&cf, b"key000999").unwrap().unwrap(), "r3-999");
}

/// One writer per directory: a second open of a directory that is open fails at open, with an
/// error that says so, and leaves the first writer's database intact; after close the directory
/// opens again. On the local file system and on an object store alike (a claim in the storage,
/// not a process-local lock).
#[test]
fn a_second_writer_fails_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let local: StorageRef = Arc::new(LocalStorage::new(tmp.path(), false).unwrap());
    for storage in [local, memory("second-writer")] {
        let first = Db::open_with_storage(storage.clone(), options()).unwrap();
        let cf = first.create_cf("s").unwrap();
        fill(&first, &cf, 0..1000, "first");
        first.flush().unwrap();

        let err = Db::open_with_storage(storage.clone(), options()).err().expect("must refuse");
        assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
        assert!(err.to_string().contains("already open for writing"), "{err}");

        fill(&first, &cf, 1000..2000, "first");
        first.flush().unwrap();
        first.close().unwrap();
        let reopened = Db::open_with_storage(storage.clone(), options()).unwrap();
        let cf = reopened.cf("s").unwrap();
        assert_eq!(reopened.get(&cf, b"key000999").unwrap().unwrap(), "first-999");
        assert_eq!(reopened.get(&cf, b"key001999").unwrap().unwrap(), "first-1999");
    }
}

#[test]
fn freezing_the_memtable_does_no_io() {
    let faulty = Arc::new(FaultStorage::new(memory("freeze-no-io")));
    // The flush of the frozen memtable fails; its retry waits an hour, so the database does not
    // fail during the test (closing it ends the wait).
    let options = DbOptions { retry_backoff: Duration::from_secs(3600), ..options() };
    let db = Db::open_with_storage(faulty.clone(), options).unwrap();
    let cf = db.create_cf("s").unwrap();
    fill(&db, &cf, 0..100, "v");
    // Every storage call fails from here: a freeze and a checkpoint's synchronous phase must
    // still succeed.
    for kind in OpKind::ALL {
        faulty.fail_fraction(kind, 1.0, 3);
    }
    db.freeze_memtable().unwrap();
    let _checkpoint = db.checkpoint().unwrap();
    assert_eq!(db.get(&cf, b"key000050").unwrap().unwrap(), "v-50");
}

#[test]
fn bad_options_and_oversized_entries_are_refused_with_a_clear_error() {
    let bad = DbOptions { memtable_bytes: 1, ..options() };
    let err = Db::open_with_storage(memory("bad-options"), bad).err().expect("must refuse");
    assert!(
        matches!(err, Error::InvalidArgument(_)) && err.to_string().contains("'memtable-bytes'"),
        "{err}"
    );
    let bad = DbOptions { l0_stop_trigger: 2, l0_compaction_trigger: 4, ..options() };
    let err = Db::open_with_storage(memory("bad-options"), bad).err().expect("must refuse");
    assert!(err.to_string().contains("'l0-stop-trigger'"), "{err}");

    let db = Db::open_with_storage(memory("oversized"), options()).unwrap();
    let cf = db.create_cf("s").unwrap();
    let huge = vec![0u8; (1 << 30) + 1];
    let err = db.put(&cf, b"k", &huge).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    drop(huge);
    // Nothing was written, and the database goes on.
    assert_eq!(db.get(&cf, b"k").unwrap(), None);
    db.put(&cf, b"k", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(&cf, b"k").unwrap().unwrap(), "v");
}
