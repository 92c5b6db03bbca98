//! Checkpoints, restore and rescale at the engine level (FLIP-428): exact state under concurrent
//! flush and compaction, a failing copy fails only its checkpoint, 2 -> 3 -> 1 rescales that
//! reference the checkpoints' files instead of copying or rewriting them, server-side copies on a real S3-compatible server, and
//! checkpoints that hand their files over instead of copying them (locally and on S3).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use forst::lsm::{
    Checkpoint, ColumnFamily, Db, DbOptions, KeyGroupLayout, KeyGroups, Leave, RestoreSource,
    delete_database, restore,
};
use forst::storage::{
    FaultStorage, IoCounters, IoStats, LocalStorage, MeteredStorage, OpKind, StorageRef, block_on,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// 128 key groups: Flink's 1-byte key-group prefix.
const KEY_GROUPS: u32 = 128;
const FAMILIES: [&str; 3] = ["counts", "lists", "maps"];

type Model = BTreeMap<(String, Vec<u8>), Vec<u8>>;

fn small_options() -> DbOptions {
    DbOptions {
        memtable_bytes: 16 << 10,
        target_file_bytes: 8 << 10,
        l0_compaction_trigger: 2,
        l1_target_bytes: 64 << 10,
        ..DbOptions::default()
    }
}

/// For a restore whose files are checked right after: no background compaction may replace them
/// (with a file of its own) before the check.
fn restore_options() -> DbOptions {
    DbOptions { auto_compaction: false, ..small_options() }
}

fn local(dir: &std::path::Path) -> StorageRef {
    Arc::new(LocalStorage::new(dir, false).unwrap())
}

/// A Flink-style key: key group first.
fn key(group: u32, i: u64) -> Vec<u8> {
    let mut key = vec![group as u8];
    key.extend_from_slice(format!("key-{i:06}").as_bytes());
    key
}

struct Writer {
    db: Db,
    families: Vec<ColumnFamily>,
    model: Model,
    groups: KeyGroups,
    rng: StdRng,
}

impl Writer {
    fn new(db: Db, groups: KeyGroups, seed: u64) -> Self {
        let families = FAMILIES.iter().map(|name| db.create_cf(name).unwrap()).collect();
        Writer { db, families, model: Model::new(), groups, rng: StdRng::seed_from_u64(seed) }
    }

    /// One random put, merge or delete inside the writer's key groups, mirrored in the model.
    fn step(&mut self) {
        let group = self.rng.random_range(self.groups.first..=self.groups.last);
        let key = key(group, self.rng.random_range(0..400));
        let f = self.rng.random_range(0..FAMILIES.len());
        let (cf, name) = (&self.families[f], FAMILIES[f].to_string());
        let value = format!("v{}", self.rng.random_range(0..1_000_000)).into_bytes();
        match self.rng.random_range(0..10) {
            0 => {
                self.db.delete(cf, &key).unwrap();
                self.model.remove(&(name, key));
            }
            1..=3 if name == "lists" => {
                self.db.merge(cf, &key, &value).unwrap();
                let entry = self.model.entry((name, key)).or_default();
                if !entry.is_empty() {
                    entry.push(b',');
                }
                entry.extend_from_slice(&value);
            }
            _ => {
                self.db.put(cf, &key, &value).unwrap();
                self.model.insert((name, key), value);
            }
        }
    }
}

/// Takes the checkpoint's asynchronous phase into `dir`: returns the source a restore needs.
fn complete(mut checkpoint: Checkpoint, dir: &std::path::Path, groups: KeyGroups) -> RestoreSource {
    checkpoint.wait_durable().unwrap();
    let dest = local(dir);
    let copies: Vec<(String, String)> =
        checkpoint.files().unwrap().into_iter().map(|(name, _)| (name.clone(), name)).collect();
    let streamed = checkpoint.copy_files(&copies, dest.as_ref()).unwrap();
    assert_eq!(streamed, 0, "local checkpoint copies are hard links");
    let files = copies.into_iter().map(|(name, _)| (name.clone(), (dest.clone(), name))).collect();
    RestoreSource { manifest: checkpoint.manifest().unwrap(), files, key_groups: groups }
}

fn layout(first: u32, last: u32) -> KeyGroupLayout {
    KeyGroupLayout { range: KeyGroups::new(first, last), prefix_bytes: 1 }
}

/// Every key of the model in `groups` reads back, and scans find nothing else.
fn assert_matches(db: &Db, model: &Model, groups: KeyGroups) {
    let expected: Model = model
        .iter()
        .filter(|((_, k), _)| (groups.first..=groups.last).contains(&u32::from(k[0])))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut seen = Model::new();
    for name in FAMILIES {
        let cf = db.cf(name).expect("family restored");
        let mut it = db.iter(&cf, None, None).unwrap();
        while it.valid() {
            seen.insert((name.to_string(), it.key().to_vec()), it.value().to_vec());
            it.advance().unwrap();
        }
    }
    assert_eq!(seen.len(), expected.len(), "scan found a different number of keys");
    assert!(seen == expected, "scan differs from the model");
    for ((name, key), value) in expected.iter().step_by(7) {
        let cf = db.cf(name).unwrap();
        assert_eq!(db.get(&cf, key).unwrap().as_deref(), Some(value.as_slice()));
    }
}

/// The SST names at the top of a local directory.
fn ssts_in(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".sst"))
        .collect()
}

/// The live files of a database (those a new checkpoint pins).
fn live_files(db: &Db) -> std::collections::BTreeSet<String> {
    let mut checkpoint = db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    checkpoint.files().unwrap().into_iter().map(|(name, _)| name).collect()
}

/// A checkpoint that hands its files over moves no byte: one manifest put records it, no file is
/// created, written or copied. The database never deletes those files again: not when compaction
/// replaces them, not at close, not when a reopen collects orphans, while the files it still owns
/// go as before. The checkpoint restores exactly from the files where they are.
#[test]
fn handed_over_files_move_no_byte_and_outlive_compaction_close_and_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = tmp.path().join("db");
    std::fs::create_dir_all(&db_dir).unwrap();
    let counted = Arc::new(FaultStorage::new(local(&db_dir)));
    let groups = KeyGroups::new(0, KEY_GROUPS - 1);
    // No background compaction: nothing but the hand-over may call the storage while it runs
    // (the flush of the checkpoint's memtable is done once `wait_durable` returns).
    let db = Db::open_with_storage(counted.clone(), restore_options()).unwrap();
    let mut writer = Writer::new(db, groups, 11);
    (0..4000).for_each(|_| writer.step());
    let mut checkpoint = writer.db.checkpoint().unwrap();
    let model_at_checkpoint = writer.model.clone();
    checkpoint.wait_durable().unwrap();
    let names: Vec<String> = checkpoint.files().unwrap().into_iter().map(|(n, _)| n).collect();
    assert!(names.len() > 2, "a checkpoint of several files: {names:?}");

    let moving = [OpKind::Create, OpKind::Write, OpKind::Copy];
    let before: Vec<u64> = moving.iter().map(|&kind| counted.calls(kind)).collect();
    let puts = counted.calls(OpKind::Put);
    checkpoint.hand_over(&names, 1).unwrap();
    let after: Vec<u64> = moving.iter().map(|&kind| counted.calls(kind)).collect();
    assert_eq!(after, before, "files created, written or copied by the hand-over");
    assert_eq!(counted.calls(OpKind::Put), puts + 1, "the hand-over is one manifest put");
    let manifest = checkpoint.manifest().unwrap();
    drop(checkpoint);
    let handed_over: std::collections::BTreeSet<String> = names.iter().cloned().collect();

    // Compaction replaces every handed-over file; close waits for the deletions it issued.
    (0..4000).for_each(|_| writer.step());
    writer.db.compact_all().unwrap();
    let live = live_files(&writer.db);
    assert!(live.is_disjoint(&handed_over), "compact_all rewrote every file");
    writer.db.close().unwrap();
    let expected: std::collections::BTreeSet<String> = live.union(&handed_over).cloned().collect();
    assert_eq!(ssts_in(&db_dir), expected, "after compaction and close");

    // A reopen collects orphans: the given-away files are not among them.
    std::fs::write(db_dir.join("000999999-orphan.sst"), b"left by a dead process").unwrap();
    let reopened = Db::open_with_storage(local(&db_dir), restore_options()).unwrap();
    assert_eq!(ssts_in(&db_dir), expected, "after reopen");
    reopened.compact_all().unwrap();
    reopened.close().unwrap();
    assert!(ssts_in(&db_dir).is_superset(&handed_over), "after a second compaction");

    // Deleting the database deletes what it owns only; a database opened there later keeps
    // protecting the files it gave away.
    let kept =
        block_on(delete_database(local(&db_dir).as_ref(), Leave::EmptyDatabase, None)).unwrap();
    assert_eq!(kept, handed_over.len());
    assert_eq!(ssts_in(&db_dir), handed_over, "after deleting the database");
    let fresh = Db::open_with_storage(local(&db_dir), restore_options()).unwrap();
    assert!(fresh.cf("counts").is_none(), "a deleted database opens empty");
    fresh.close().unwrap();
    assert_eq!(ssts_in(&db_dir), handed_over, "after opening the deleted database");

    let source = RestoreSource {
        manifest,
        files: names.iter().map(|n| (n.clone(), (local(&db_dir), n.clone()))).collect(),
        key_groups: groups,
    };
    let restored_dir = tmp.path().join("restored");
    std::fs::create_dir_all(&restored_dir).unwrap();
    let restored =
        restore(local(&restored_dir), vec![source], layout(0, KEY_GROUPS - 1), restore_options())
            .unwrap();
    assert_matches(&restored, &model_at_checkpoint, groups);
}

/// Every file under `dir`, relative to it.
/// A file taken back after compaction replaced it stays while a checkpoint still pins it (the
/// checkpoint may hand it over again) and goes when that pin is let go; one nothing holds goes at
/// once; one still listed goes with the compaction that replaces it. Taking back survives a
/// reopen: the manifest no longer protects the file.
#[test]
fn taken_back_files_are_deleted_by_their_last_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = tmp.path().join("db");
    std::fs::create_dir_all(&db_dir).unwrap();
    let db = Db::open_with_storage(local(&db_dir), restore_options()).unwrap();
    let mut writer = Writer::new(db, KeyGroups::new(0, KEY_GROUPS - 1), 5);
    (0..2000).for_each(|_| writer.step());
    let mut first = writer.db.checkpoint().unwrap();
    first.wait_durable().unwrap();
    let names: Vec<String> = first.files().unwrap().into_iter().map(|(n, _)| n).collect();
    first.hand_over(&names, 1).unwrap();
    drop(first);
    let mut pinning = writer.db.checkpoint().unwrap();
    pinning.wait_durable().unwrap();
    (0..2000).for_each(|_| writer.step());
    writer.db.compact_all().unwrap();
    let taken: std::collections::BTreeSet<String> = names.iter().cloned().collect();
    assert!(live_files(&writer.db).is_disjoint(&taken), "compaction replaced them");

    writer.db.take_back(&names).unwrap();
    writer.db.wait_for_file_deletions();
    assert!(ssts_in(&db_dir).is_superset(&taken), "pinned by the second checkpoint");
    drop(pinning);
    writer.db.wait_for_file_deletions();
    assert!(ssts_in(&db_dir).is_disjoint(&taken), "gone with the last pin");

    // Taken back while listed: owned again, also for the manifest (a deletion of the database
    // keeps nothing).
    let mut second = writer.db.checkpoint().unwrap();
    second.wait_durable().unwrap();
    let listed: Vec<String> = second.files().unwrap().into_iter().map(|(n, _)| n).collect();
    second.hand_over(&listed, 2).unwrap();
    drop(second);
    writer.db.close().unwrap();
    let kept = block_on(delete_database(local(&db_dir).as_ref(), Leave::EmptyDatabase, None));
    assert_eq!(kept.unwrap(), listed.len(), "handed over: kept");
    let reopened = Db::open_with_storage(local(&db_dir), restore_options()).unwrap();
    reopened.take_back(&listed).unwrap();
    reopened.close().unwrap();
    let kept = block_on(delete_database(local(&db_dir).as_ref(), Leave::Nothing, None)).unwrap();
    assert_eq!(kept, 0, "taken back: owned again");
    assert!(ssts_in(&db_dir).is_empty());
}

fn files_in(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect()
}

/// The directory of a writer that died (its task manager killed: `LOCK` still held, SSTs the
/// manifest does not list) is collected for good: everything the database owned goes, the files
/// it handed over to a checkpoint stay, and no manifest is left, so once the checkpoint's owner
/// deleted those the directory holds nothing. A database opened there later (a reused attempt
/// directory) still does not take the kept files for orphans.
#[test]
fn a_dead_writers_directory_keeps_only_what_it_handed_over() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = tmp.path().join("subtask_0_attempt_0");
    std::fs::create_dir_all(&db_dir).unwrap();
    let db = Db::open_with_storage(local(&db_dir), restore_options()).unwrap();
    let mut writer = Writer::new(db, KeyGroups::new(0, KEY_GROUPS - 1), 5);
    (0..4000).for_each(|_| writer.step());
    let mut checkpoint = writer.db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let names: Vec<String> = checkpoint.files().unwrap().into_iter().map(|(n, _)| n).collect();
    checkpoint.hand_over(&names, 1).unwrap();
    drop(checkpoint);
    let handed_over: std::collections::BTreeSet<String> = names.iter().cloned().collect();
    (0..4000).for_each(|_| writer.step());
    writer.db.compact_all().unwrap();
    let owned = live_files(&writer.db);
    assert!(owned.is_disjoint(&handed_over) && !owned.is_empty());
    writer.db.close().unwrap();
    // What a SIGKILL leaves besides the manifest: the claim and a file no manifest lists.
    std::fs::write(db_dir.join("LOCK"), b"0123456789abcdef").unwrap();
    std::fs::write(db_dir.join("000999999-dead.sst"), b"flushed, manifest never written").unwrap();

    let kept = block_on(delete_database(local(&db_dir).as_ref(), Leave::Nothing, None)).unwrap();
    assert_eq!(kept, handed_over.len());
    assert_eq!(files_in(&db_dir), handed_over, "only the handed-over files stay");

    // Collected again (a later attempt), nothing changes while the checkpoint needs them ...
    let again = block_on(delete_database(local(&db_dir).as_ref(), Leave::Nothing, None)).unwrap();
    assert_eq!(again, handed_over.len());
    assert_eq!(files_in(&db_dir), handed_over);
    // ... and a database reopened there protects them.
    let reused =
        block_on(delete_database(local(&db_dir).as_ref(), Leave::EmptyDatabase, None)).unwrap();
    assert_eq!(reused, handed_over.len());
    let fresh = Db::open_with_storage(local(&db_dir), restore_options()).unwrap();
    fresh.close().unwrap();
    assert_eq!(ssts_in(&db_dir), handed_over, "a database opened there took them for orphans");

    // The JobManager deletes all but one as checkpoints are subsumed, then the last one.
    let mut remaining: Vec<&String> = handed_over.iter().collect();
    let last = remaining.pop().unwrap();
    remaining.iter().for_each(|name| std::fs::remove_file(db_dir.join(name)).unwrap());
    assert_eq!(
        block_on(delete_database(local(&db_dir).as_ref(), Leave::Nothing, None)).unwrap(),
        1
    );
    assert_eq!(files_in(&db_dir), [last.clone()].into_iter().collect());
    std::fs::remove_file(db_dir.join(last)).unwrap();
    assert_eq!(
        block_on(delete_database(local(&db_dir).as_ref(), Leave::Nothing, None)).unwrap(),
        0
    );
    assert!(files_in(&db_dir).is_empty(), "nothing is left: {:?}", files_in(&db_dir));
}

#[test]
fn checkpoint_under_concurrent_flush_and_compaction_restores_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let all = KeyGroups::new(0, KEY_GROUPS - 1);
    let db = Db::open_with_storage(local(&tmp.path().join("db")), small_options()).unwrap();
    let mut writer = Writer::new(db, all, 7);
    for _ in 0..20_000 {
        writer.step();
    }
    // The synchronous phase, on the writing thread, between two writes (as Flink's task thread).
    let checkpoint = writer.db.checkpoint().unwrap();
    let at_checkpoint = writer.model.clone();
    // Writes continue (memtables fill, flush and compaction run) while the async phase runs. The
    // async phase starts once 2,000 writes followed the checkpoint, however threads are scheduled,
    // and the writer goes on until it ends.
    let done = Arc::new(AtomicBool::new(false));
    let (started, writes_followed) = std::sync::mpsc::channel();
    let background = {
        let done = done.clone();
        std::thread::spawn(move || {
            for _ in 0..2_000 {
                writer.step();
            }
            started.send(()).unwrap();
            while !done.load(Ordering::Relaxed) {
                writer.step();
            }
            writer
        })
    };
    writes_followed.recv().unwrap();
    let source = complete(checkpoint, &tmp.path().join("chk-1"), all);
    done.store(true, Ordering::Relaxed);
    let writer = background.join().unwrap();
    assert!(writer.model != at_checkpoint, "writes after the checkpoint must not be in it");
    let restored =
        restore(local(&tmp.path().join("restored")), vec![source], layout(0, 127), small_options())
            .unwrap();
    assert_matches(&restored, &at_checkpoint, all);
}

#[test]
fn a_failed_copy_fails_that_checkpoint_only() {
    let tmp = tempfile::tempdir().unwrap();
    let all = KeyGroups::new(0, KEY_GROUPS - 1);
    let db = Db::open_with_storage(local(&tmp.path().join("db")), small_options()).unwrap();
    let mut writer = Writer::new(db, all, 11);
    for _ in 0..5_000 {
        writer.step();
    }
    let dest = Arc::new(FaultStorage::new(local(&tmp.path().join("chk"))));
    dest.fail_nth(OpKind::Copy, 1);
    let mut failed = writer.db.checkpoint().unwrap();
    failed.wait_durable().unwrap();
    let copies: Vec<_> = failed.files().unwrap().into_iter().map(|(n, _)| (n.clone(), n)).collect();
    let err = failed.copy_files(&copies, dest.as_ref()).unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    drop(failed);
    for _ in 0..2_000 {
        writer.step();
    }
    let source = complete(writer.db.checkpoint().unwrap(), &tmp.path().join("chk-2"), all);
    let restored =
        restore(local(&tmp.path().join("restored")), vec![source], layout(0, 127), small_options())
            .unwrap();
    assert_matches(&restored, &writer.model, all);
}

/// A restore by reference: the new directory holds no data file (nothing copied, linked or
/// downloaded), only the one file of range deletes the restore writes when the sources had any.
fn assert_referenced(dir: &std::path::Path, db: &Db) {
    let placed = ssts_in(dir);
    let tombstone_files = db.stats().range_tombstone_files;
    assert!(tombstone_files <= 1, "{tombstone_files} tombstone files after a restore");
    assert_eq!(placed.len(), tombstone_files, "files placed in {}: {placed:?}", dir.display());
}

#[test]
fn rescale_two_to_three_to_one_references_files_and_keeps_exact_state() {
    let tmp = tempfile::tempdir().unwrap();
    let halves = [KeyGroups::new(0, 63), KeyGroups::new(64, 127)];
    let mut model = Model::new();
    let mut sources = Vec::new();
    for (i, groups) in halves.into_iter().enumerate() {
        let db = Db::open_with_storage(local(&tmp.path().join(format!("db{i}"))), small_options())
            .unwrap();
        let mut writer = Writer::new(db, groups, 100 + i as u64);
        for _ in 0..15_000 {
            writer.step();
        }
        // A range deletion must stay inside its own database's keys after combining.
        let maps = writer.db.cf("maps").unwrap();
        let prefix = [groups.first as u8 + 1];
        let mut batch = forst::lsm::WriteBatch::new();
        batch.delete_prefix(&maps, &prefix);
        writer.db.write(&batch).unwrap();
        writer.model.retain(|(name, key), _| !(name == "maps" && key.starts_with(&prefix)));
        model.extend(writer.model.clone());
        sources.push(complete(
            writer.db.checkpoint().unwrap(),
            &tmp.path().join(format!("chk{i}")),
            groups,
        ));
    }

    let checkpoint_files: Vec<_> =
        (0..2).map(|i| ssts_in(&tmp.path().join(format!("chk{i}")))).collect();
    let thirds = [KeyGroups::new(0, 42), KeyGroups::new(43, 85), KeyGroups::new(86, 127)];
    let mut next = Vec::new();
    for (i, groups) in thirds.into_iter().enumerate() {
        let dir = tmp.path().join(format!("third{i}"));
        let sources = sources.clone();
        let db =
            restore(local(&dir), sources, layout(groups.first, groups.last), restore_options())
                .unwrap();
        assert_referenced(&dir, &db);
        // The first two thirds hold a source's range deletion, in the file the restore wrote.
        assert_eq!(db.stats().range_tombstone_files, usize::from(i < 2), "third {i}");
        assert_matches(&db, &model, groups);
        // Compaction rewrites the checkpoints' files into files of its own, dropping what lies
        // outside the bounds; the state stays the same and the checkpoints keep every file.
        db.compact_all().unwrap();
        db.wait_for_file_deletions();
        assert!(!ssts_in(&dir).is_empty(), "compaction wrote files of its own");
        for (j, files) in checkpoint_files.iter().enumerate() {
            assert_eq!(&ssts_in(&tmp.path().join(format!("chk{j}"))), files);
        }
        assert_matches(&db, &model, groups);
        next.push(complete(
            db.checkpoint().unwrap(),
            &tmp.path().join(format!("chk-third{i}")),
            groups,
        ));
    }

    let dir = tmp.path().join("one");
    let db = restore(local(&dir), next, layout(0, 127), restore_options()).unwrap();
    assert_referenced(&dir, &db);
    assert_matches(&db, &model, KeyGroups::new(0, 127));
}

#[test]
fn restore_keeps_the_order_of_overlapping_level0_files() {
    // Ten L0 files that all hold the same keys: only the newest version may win after a restore,
    // however the concurrent copies of the restore complete.
    let tmp = tempfile::tempdir().unwrap();
    let options = DbOptions { auto_compaction: false, ..small_options() };
    let db = Db::open_with_storage(local(&tmp.path().join("db")), options.clone()).unwrap();
    let cf = db.create_cf("counts").unwrap();
    for round in 0..10u32 {
        for i in 0..200 {
            db.put(&cf, &key(i % KEY_GROUPS, u64::from(i)), format!("round-{round}").as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    }
    assert!(db.stats().files_per_level[0] >= 10);
    let all = KeyGroups::new(0, KEY_GROUPS - 1);
    let source = complete(db.checkpoint().unwrap(), &tmp.path().join("chk"), all);
    for attempt in 0..10 {
        let dir = tmp.path().join(format!("restored-{attempt}"));
        let restored =
            restore(local(&dir), vec![source.clone()], layout(0, 127), options.clone()).unwrap();
        let cf = restored.cf("counts").unwrap();
        for i in 0..200 {
            let value = restored.get(&cf, &key(i % KEY_GROUPS, u64::from(i))).unwrap();
            assert_eq!(value.as_deref(), Some(&b"round-9"[..]), "attempt {attempt}, key {i}");
        }
    }
}

/// On S3 too a checkpoint hands its files over where they are: the hand-over writes one object,
/// the manifest (its bytes are all the storage receives), and no SST is created, written or
/// copied. A restore references them in place: the restored database writes no SST of its own and
/// serves reads from the checkpointed database's objects.
#[test]
fn on_s3_checkpoint_hands_files_over_and_restores_them_in_place() {
    let options = support::s3_options();
    let open = |url: &str| forst::storage::open_storage(url, &options).unwrap();
    let base = support::fresh_s3_url("hand-over");
    let all = KeyGroups::new(0, KEY_GROUPS - 1);
    let db_storage = open(&format!("{base}/db"));
    let counted = Arc::new(FaultStorage::new(db_storage.clone()));
    // No background compaction: nothing but the hand-over may write while it runs.
    let db = Db::open_with_storage(counted.clone(), restore_options()).unwrap();
    let mut writer = Writer::new(db, all, 23);
    (0..5_000).for_each(|_| writer.step());
    let mut checkpoint = writer.db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let names: Vec<String> = checkpoint.files().unwrap().into_iter().map(|(n, _)| n).collect();
    assert!(names.len() > 2, "a checkpoint of several files: {names:?}");

    let objects_before = objects(db_storage.as_ref());
    let moving = [OpKind::Create, OpKind::Write, OpKind::Copy];
    let calls_before: Vec<u64> = moving.iter().map(|&kind| counted.calls(kind)).collect();
    let (puts, written) = (counted.calls(OpKind::Put), writer.db.stats().io.bytes_written);
    checkpoint.hand_over(&names, 1).unwrap();
    let calls_after: Vec<u64> = moving.iter().map(|&kind| counted.calls(kind)).collect();
    assert_eq!(calls_after, calls_before, "objects created, written or copied by the hand-over");
    assert_eq!(counted.calls(OpKind::Put), puts + 1, "the hand-over is one manifest put");
    let new_objects: BTreeMap<String, u64> = objects(db_storage.as_ref())
        .into_iter()
        .filter(|(path, _)| !objects_before.contains_key(path))
        .collect();
    assert_eq!(new_objects.len(), 1, "one new object, the manifest: {new_objects:?}");
    assert!(new_objects.keys().all(|path| !path.ends_with(".sst")), "{new_objects:?}");
    assert_eq!(
        writer.db.stats().io.bytes_written - written,
        new_objects.values().sum::<u64>(),
        "bytes written by the hand-over: the manifest's only"
    );
    let manifest = checkpoint.manifest().unwrap();
    drop(checkpoint);
    let model_at_checkpoint = writer.model.clone();
    writer.db.close().unwrap();

    let source_reads = Arc::new(FaultStorage::new(db_storage.clone()));
    let files = names.iter().map(|n| (n.clone(), (source_reads.clone() as StorageRef, n.clone())));
    let source = RestoreSource { manifest, files: files.collect(), key_groups: all };
    let restored_storage = open(&format!("{base}/restored"));
    let restored_counted = Arc::new(FaultStorage::new(restored_storage.clone()));
    let restored =
        restore(restored_counted.clone(), vec![source], layout(0, 127), restore_options()).unwrap();
    assert_matches(&restored, &model_at_checkpoint, all);
    assert_eq!(restored_counted.calls(OpKind::Copy), 0, "files copied into the restored database");
    assert!(
        objects(restored_storage.as_ref()).keys().all(|path| !path.ends_with(".sst")),
        "SSTs in the restored database's directory"
    );
    assert!(source_reads.calls(OpKind::Read) > 0, "reads served from the checkpoint's objects");
    restored.close().unwrap();
}

/// Every object under a storage: path to size.
fn objects(storage: &dyn forst::storage::Storage) -> BTreeMap<String, u64> {
    block_on(storage.list("")).unwrap().into_iter().map(|f| (f.path, f.size)).collect()
}

#[test]
fn on_s3_checkpoint_copies_and_restores_server_side() {
    let options = support::s3_options();
    let open = |url: &str| forst::storage::open_storage(url, &options).unwrap();
    let base = support::fresh_s3_url("checkpoint");
    let all = KeyGroups::new(0, KEY_GROUPS - 1);
    let db = Db::open_with_storage(open(&format!("{base}/db")), small_options()).unwrap();
    let mut writer = Writer::new(db, all, 21);
    for _ in 0..5_000 {
        writer.step();
    }
    let mut checkpoint = writer.db.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let dest = open(&format!("{base}/shared"));
    let copies: Vec<_> = checkpoint
        .files()
        .unwrap()
        .into_iter()
        .map(|(n, _)| (n.clone(), format!("x-{n}")))
        .collect();
    assert!(!copies.is_empty());
    assert_eq!(checkpoint.copy_files(&copies, dest.as_ref()).unwrap(), 0, "server-side copies");
    let files = copies.into_iter().map(|(name, to)| (name, (dest.clone(), to))).collect();
    let source = RestoreSource { manifest: checkpoint.manifest().unwrap(), files, key_groups: all };
    let restored =
        restore(open(&format!("{base}/restored")), vec![source], layout(0, 127), small_options())
            .unwrap();
    assert_matches(&restored, &writer.model, all);
}

/// Key groups next to the boundaries of a 2 -> 3 -> 1 rescale (63/64, 42/43, 85/86) and the ends.
const EDGE_GROUPS: [u32; 15] = [0, 41, 42, 43, 44, 62, 63, 64, 65, 84, 85, 86, 87, 126, 127];

/// The keys of a group at its edges: the group alone (the smallest key it can hold), just above
/// it, in the middle, and its largest ones.
fn edge_keys(group: u32) -> [Vec<u8>; 5] {
    let g = group as u8;
    [vec![g], vec![g, 0], vec![g, b'm'], vec![g, 0xff], vec![g, 0xff, 0xff, 0xff]]
}

/// Two databases (key groups 0-63 and 64-127) whose files each span all of their key groups in a
/// family, at level 0 and below, so every file straddles the new boundaries of a rescale to 3.
/// Every group holds its edge keys, some overwritten or deleted in later files.
fn straddling_sources(root: &std::path::Path) -> (Vec<RestoreSource>, Model) {
    let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
    let mut model = Model::new();
    let mut sources = Vec::new();
    for (i, groups) in [KeyGroups::new(0, 63), KeyGroups::new(64, 127)].into_iter().enumerate() {
        let db =
            Db::open_with_storage(local(&root.join(format!("db{i}"))), options.clone()).unwrap();
        for name in FAMILIES {
            let cf = db.create_cf(name).unwrap();
            for group in groups.first..=groups.last {
                for (j, key) in edge_keys(group).into_iter().enumerate() {
                    let value = format!("{name}-{group}-{j}").into_bytes();
                    db.put(&cf, &key, &value).unwrap();
                    model.insert((name.to_string(), key), value);
                }
            }
        }
        db.flush().unwrap();
        db.compact_all().unwrap();
        for round in 1..3u32 {
            for name in FAMILIES {
                let cf = db.cf(name).unwrap();
                for group in (groups.first..=groups.last).filter(|g| g % (round + 1) == 0) {
                    let [alone, _, middle, last, _] = edge_keys(group);
                    let value = format!("{name}-{group}-round-{round}").into_bytes();
                    db.put(&cf, &last, &value).unwrap();
                    model.insert((name.to_string(), last), value);
                    let deleted = if round == 1 { middle } else { alone };
                    db.delete(&cf, &deleted).unwrap();
                    model.remove(&(name.to_string(), deleted));
                }
            }
            db.flush().unwrap();
        }
        sources.push(complete(db.checkpoint().unwrap(), &root.join(format!("chk{i}")), groups));
    }
    (sources, model)
}

/// The sources, reading their files through one counting storage per source.
fn metered(sources: Vec<RestoreSource>) -> (Vec<RestoreSource>, Vec<Arc<IoCounters>>) {
    sources
        .into_iter()
        .map(|mut source| {
            let (storage, _) = source.files.values().next().expect("a file").clone();
            let metered = MeteredStorage::new(storage);
            let counters = metered.counters();
            let metered: StorageRef = Arc::new(metered);
            for (holder, _) in source.files.values_mut() {
                *holder = metered.clone();
            }
            (source, counters)
        })
        .unzip()
}

fn total(counters: &[Arc<IoCounters>]) -> IoStats {
    counters.iter().map(|c| c.snapshot()).fold(IoStats::default(), |sum, s| IoStats {
        reads: sum.reads + s.reads,
        bytes_read: sum.bytes_read + s.bytes_read,
        other_requests: sum.other_requests + s.other_requests,
        ..sum
    })
}

/// A rescale reads nothing of the checkpoints' files, not even of files that straddle a new
/// key-group boundary (all of them here): their visible bounds come from the key groups alone.
#[test]
fn rescale_reads_no_byte_of_straddling_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (sources, model) = straddling_sources(tmp.path());
    let (sources, counters) = metered(sources);
    let thirds = [KeyGroups::new(0, 42), KeyGroups::new(43, 85), KeyGroups::new(86, 127)];
    let mut next = Vec::new();
    for (i, groups) in thirds.into_iter().enumerate() {
        let before = total(&counters);
        let dir = tmp.path().join(format!("third{i}"));
        let db = restore(
            local(&dir),
            sources.clone(),
            layout(groups.first, groups.last),
            restore_options(),
        )
        .unwrap();
        assert_eq!(total(&counters), before, "rescale 2 -> 3 read the checkpoints' files");
        assert_matches(&db, &model, groups);
        next.push(complete(
            db.checkpoint().unwrap(),
            &tmp.path().join(format!("chk-third{i}")),
            groups,
        ));
    }
    let (next, counters) = metered(next);
    let db =
        restore(local(&tmp.path().join("one")), next, layout(0, 127), restore_options()).unwrap();
    assert_eq!(total(&counters), IoStats::default(), "rescale 3 -> 1 read the checkpoints' files");
    assert_matches(&db, &model, KeyGroups::new(0, 127));
}

fn scan(mut it: forst::lsm::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.advance().unwrap();
    }
    out
}

/// Gets, prefix scans, scans across each boundary and seeks to each group's first key see
/// exactly the keys of `groups`, whatever file bounds end next to them.
fn assert_exact_at_edges(db: &Db, model: &Model, groups: KeyGroups) {
    assert_matches(db, model, groups);
    let inside = |key: &[u8]| (groups.first..=groups.last).contains(&u32::from(key[0]));
    for name in FAMILIES {
        let cf = db.cf(name).unwrap();
        let expected = |from: &[u8], to: Option<&[u8]>| -> Vec<(Vec<u8>, Vec<u8>)> {
            model
                .iter()
                .filter(|((n, k), _)| {
                    n == name && k.as_slice() >= from && to.is_none_or(|to| k.as_slice() < to)
                })
                .filter(|((_, k), _)| inside(k))
                .map(|((_, k), v)| (k.clone(), v.clone()))
                .collect()
        };
        for group in EDGE_GROUPS {
            let g = group as u8;
            let context = format!("family {name}, group {group}, database of {groups:?}");
            for key in edge_keys(group) {
                let want = model.get(&(name.to_string(), key.clone())).filter(|_| inside(&key));
                let got = db.get(&cf, &key).unwrap();
                assert_eq!(got.as_deref(), want.map(Vec::as_slice), "get {key:?}, {context}");
            }
            let next = [g.wrapping_add(1)];
            let end = (group < 127).then_some(&next[..]);
            assert_eq!(
                scan(db.iter_prefix(&cf, &[g]).unwrap()),
                expected(&[g], end),
                "prefix, {context}"
            );
            if let Some(end) = end {
                let (from, to) = ([g, 0xff], [end[0], 1]);
                let across = scan(db.iter(&cf, Some(&from), Some(&to)).unwrap());
                assert_eq!(across, expected(&from, Some(&to)), "scan across, {context}");
                let mut it = db.iter(&cf, None, None).unwrap();
                it.seek(end).unwrap();
                let first = it.valid().then(|| it.key().to_vec());
                let want = expected(end, None).into_iter().next().map(|(k, _)| k);
                assert_eq!(first, want, "seek to the next group, {context}");
            }
        }
    }
}

/// Exactness at clipped edges: after a rescale 2 -> 3 of files that all straddle the new
/// boundaries, then 3 -> 1 of the clipped files (bounds with exclusive ends, recorded in the
/// checkpoints' manifests), and after a compaction rewrote each result. The middle third
/// overwrites and deletes edge keys and compacts before its checkpoint, so after 3 -> 1 a clipped
/// file of the first third, which still holds the old versions of those keys, ends (exclusive)
/// exactly where the middle third's own file starts.
#[test]
fn rescaled_databases_see_exactly_their_key_groups_at_every_edge() {
    let tmp = tempfile::tempdir().unwrap();
    let (sources, mut model) = straddling_sources(tmp.path());
    let thirds = [KeyGroups::new(0, 42), KeyGroups::new(43, 85), KeyGroups::new(86, 127)];
    let mut next = Vec::new();
    for (i, groups) in thirds.into_iter().enumerate() {
        let dir = tmp.path().join(format!("third{i}"));
        let db = restore(
            local(&dir),
            sources.clone(),
            layout(groups.first, groups.last),
            restore_options(),
        )
        .unwrap();
        assert_exact_at_edges(&db, &model, groups);
        if i == 1 {
            for name in FAMILIES {
                let cf = db.cf(name).unwrap();
                for group in groups.first..=groups.last {
                    let [alone, .., last] = edge_keys(group);
                    db.put(&cf, &last, b"middle third").unwrap();
                    model.insert((name.to_string(), last), b"middle third".to_vec());
                    db.delete(&cf, &alone).unwrap();
                    model.remove(&(name.to_string(), alone));
                }
            }
            db.compact_all().unwrap();
            assert_exact_at_edges(&db, &model, groups);
        }
        next.push(complete(
            db.checkpoint().unwrap(),
            &tmp.path().join(format!("chk-third{i}")),
            groups,
        ));
        db.compact_all().unwrap();
        assert_exact_at_edges(&db, &model, groups);
    }
    let all = KeyGroups::new(0, 127);
    let db =
        restore(local(&tmp.path().join("one")), next, layout(0, 127), restore_options()).unwrap();
    assert_exact_at_edges(&db, &model, all);
    db.compact_all().unwrap();
    assert_exact_at_edges(&db, &model, all);
}

/// A file clipped to key groups it holds no key of stays listed (a restore does not read it to
/// find out) but shows nothing: no get, scan or seek finds its keys, a checkpoint and a restore of
/// it work, and compaction drops it.
#[test]
fn a_clipped_file_without_visible_keys_shows_nothing_until_compaction_drops_it() {
    let tmp = tempfile::tempdir().unwrap();
    let options = DbOptions { auto_compaction: false, ..DbOptions::default() };
    let db = Db::open_with_storage(local(&tmp.path().join("db")), options).unwrap();
    let cf = db.create_cf("counts").unwrap();
    for group in [40, 50] {
        db.put(&cf, &key(group, 1), b"outside").unwrap();
    }
    db.flush().unwrap();
    let source =
        complete(db.checkpoint().unwrap(), &tmp.path().join("chk"), KeyGroups::new(0, 127));
    let restored =
        restore(local(&tmp.path().join("gap")), vec![source], layout(43, 45), restore_options())
            .unwrap();
    let kept = live_files(&restored);
    assert_eq!(kept.len(), 1, "the straddling file stays listed");
    let name = kept.iter().next().unwrap();
    assert!(restored.holds_file(name));
    let cf = restored.cf("counts").unwrap();
    for group in [40, 43, 44, 45, 50] {
        assert_eq!(restored.get(&cf, &key(group, 1)).unwrap(), None);
        assert!(scan(restored.iter_prefix(&cf, &[group as u8]).unwrap()).is_empty());
    }
    assert!(scan(restored.iter(&cf, None, None).unwrap()).is_empty());
    let mut it = restored.iter(&cf, None, None).unwrap();
    it.seek(&[44]).unwrap();
    assert!(!it.valid());
    assert_eq!(restored.stats().files_per_level.iter().sum::<usize>(), 1);

    let again = complete(
        restored.checkpoint().unwrap(),
        &tmp.path().join("chk-gap"),
        KeyGroups::new(43, 45),
    );
    let twice =
        restore(local(&tmp.path().join("again")), vec![again], layout(44, 44), restore_options())
            .unwrap();
    assert!(scan(twice.iter(&twice.cf("counts").unwrap(), None, None).unwrap()).is_empty());

    restored.compact_all().unwrap();
    assert!(live_files(&restored).is_empty(), "compaction dropped the file");
    assert!(!restored.holds_file(name));
    assert!(scan(restored.iter(&cf, None, None).unwrap()).is_empty());
}

/// A NO_CLAIM restore: the restored database reads the snapshot's files where they are until a
/// checkpoint holds copies of them; relocated to those copies, it reads, scans (an iterator
/// opened before included), compacts, checkpoints and reopens with the snapshot deleted. A copy
/// of another size is refused and moves nothing.
#[test]
fn relocated_files_are_read_from_their_copies_once_the_snapshot_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let all = KeyGroups::new(0, KEY_GROUPS - 1);
    let db = Db::open_with_storage(local(&tmp.path().join("db")), small_options()).unwrap();
    let mut writer = Writer::new(db, all, 31);
    (0..20_000).for_each(|_| writer.step());
    let snapshot_dir = tmp.path().join("savepoint");
    let source = complete(writer.db.checkpoint().unwrap(), &snapshot_dir, all);
    let model = writer.model.clone();
    writer.db.close().unwrap();

    let restored_dir = tmp.path().join("restored");
    let restored =
        restore(local(&restored_dir), vec![source], layout(0, 127), restore_options()).unwrap();
    // A few reads open some tables through the snapshot; an iterator pins today's version.
    let counts = restored.cf("counts").unwrap();
    let mut pinned = restored.iter(&counts, None, None).unwrap();
    let first_key = pinned.key().to_vec();

    // The first checkpoint after the restore copies the files (hard links here).
    let mut checkpoint = restored.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let names: Vec<String> = checkpoint.files().unwrap().into_iter().map(|(n, _)| n).collect();
    assert!(names.len() > 3, "several restored files: {names:?}");
    let locations = checkpoint.file_locations().unwrap();
    assert!(locations.iter().all(Option::is_some), "restored by reference: {locations:?}");
    let copies_dir = tmp.path().join("chk-2");
    let copy_names: Vec<(String, String)> =
        names.iter().map(|n| (n.clone(), format!("copy-{n}"))).collect();
    checkpoint.copy_files(&copy_names, local(&copies_dir).as_ref()).unwrap();
    drop(checkpoint);
    let copies = Arc::new(FaultStorage::new(local(&copies_dir)));
    let relocation: std::collections::HashMap<String, (StorageRef, String)> = copy_names
        .iter()
        .map(|(name, copy)| (name.clone(), (copies.clone() as StorageRef, copy.clone())))
        .collect();

    // A copy of another size is refused, and nothing moves.
    let short = format!("copy-{}", names[0]);
    let bytes = std::fs::read(copies_dir.join(&short)).unwrap();
    std::fs::write(copies_dir.join("short.sst"), &bytes[..bytes.len() - 1]).unwrap();
    let mut bad = relocation.clone();
    bad.insert(names[0].clone(), (copies.clone() as StorageRef, "short.sst".to_string()));
    let refused = restored.relocate(&bad).unwrap_err().to_string();
    assert!(refused.contains("short.sst"), "the refusal names the copy: {refused}");
    let mut checkpoint = restored.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    assert_eq!(checkpoint.file_locations().unwrap(), locations, "a refused relocation moved files");
    drop(checkpoint);

    assert_eq!(restored.relocate(&relocation).unwrap(), names.len());
    assert_eq!(restored.relocate(&relocation).unwrap(), 0, "relocated twice");
    std::fs::remove_dir_all(&snapshot_dir).unwrap();

    assert_eq!(pinned.key(), first_key.as_slice());
    let mut scanned = 1;
    while {
        pinned.advance().unwrap();
        pinned.valid()
    } {
        scanned += 1;
    }
    assert!(scanned > 1, "the pinned iterator read on");
    drop(pinned);
    assert_matches(&restored, &model, all);
    assert!(copies.calls(OpKind::Read) > 0, "reads served from the copies");
    let mut checkpoint = restored.checkpoint().unwrap();
    checkpoint.wait_durable().unwrap();
    let moved = checkpoint.file_locations().unwrap();
    let copies_url = forst::storage::Storage::url(copies.as_ref()).to_string();
    assert!(
        moved.iter().all(|l| l.as_deref().is_some_and(|l| l.starts_with(copies_url.as_str()))),
        "a new checkpoint's manifest names the copies: {moved:?}"
    );
    drop(checkpoint);
    restored.close().unwrap();

    // The database's own manifest recorded the move: a reopen finds every file, and compacts.
    let reopened = Db::open_with_storage(local(&restored_dir), restore_options()).unwrap();
    assert_matches(&reopened, &model, all);
    reopened.compact_all().unwrap();
    assert_matches(&reopened, &model, all);
    reopened.close().unwrap();
}
