package org.forstrs.flink.state;

import org.apache.flink.api.common.JobID;

import org.forstrs.flink.snapshot.HandedOverFileHandle;
import org.forstrs.jni.ForStNative;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Phaser;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** Subtasks' DB directories under one job directory, opened and disposed concurrently. */
class DbDirectoryTest {

    private static final String[] NO_OPTIONS = new String[0];

    /** A job directory's name: Flink's job id. */
    private static final String JOB = new JobID().toHexString();

    @TempDir Path dir;

    @Test
    void removeDeletesTheDirectoryAndItsEmptyParents() throws Exception {
        Path db = dir.resolve(JOB + "/op_x/subtask_0_attempt_0");
        Files.createDirectories(db);
        Files.writeString(db.resolve("MANIFEST-1"), "x");
        Files.writeString(dir.resolve("other"), "kept");
        DbDirectory.remove(db.toUri().toString(), NO_OPTIONS);
        assertThat(dir.resolve(JOB)).doesNotExist();
        // above the job directory nothing is ours: Flink's shared directory stays
        Path shared = dir.resolve("shared");
        Path inShared = shared.resolve("op_x/subtask_0_attempt_0");
        Files.createDirectories(inShared);
        DbDirectory.remove(inShared.toUri().toString(), NO_OPTIONS);
        assertThat(shared.resolve("op_x")).doesNotExist();
        assertThat(shared).isEmptyDirectory();
        assertThat(dir.resolve("other")).exists();
        // schemes without a Flink file system that the engine does not serve either are skipped
        DbDirectory.remove("nofs://forst-rs-test/x", NO_OPTIONS);
    }

    /** Object-store directories (s3, memory) go through the engine's store: nothing stays. */
    @Test
    void removeDeletesADatabaseTheEngineServes() throws Exception {
        String uri = "memory://db-directory-test/job/op_x/subtask_0_attempt_0";
        ByteBuffer key = ByteBuffer.allocateDirect(1).put(0, (byte) 7);
        ByteBuffer out = ByteBuffer.allocateDirect(8);
        try (NativeDb db = NativeDb.open(uri, NO_OPTIONS)) {
            db.put(db.createColumnFamily("s"), key, 1, key, 1);
            db.compact();
        }
        try (NativeDb reopened = NativeDb.open(uri, NO_OPTIONS)) {
            assertThat(reopened.get(reopened.createColumnFamily("s"), key, 1, out, 8)).isEqualTo(1);
        }
        DbDirectory.remove(uri, NO_OPTIONS);
        try (NativeDb fresh = NativeDb.open(uri, NO_OPTIONS)) {
            assertThat(fresh.get(fresh.createColumnFamily("s"), key, 1, out, 8))
                    .isEqualTo(ForStNative.NOT_FOUND);
        }
        DbDirectory.remove(uri, NO_OPTIONS);
    }

    @Test
    void prepareKeepsParentsAndRemovesALeftover() throws Exception {
        Path db = dir.resolve(JOB + "/op_x/subtask_0_attempt_0");
        Files.createDirectories(db);
        Files.writeString(db.resolve("MANIFEST-1"), "left over");
        Files.createDirectories(dir.resolve(JOB + "/op_x/subtask_1_attempt_0"));
        DbDirectory.prepare(db.toUri().toString(), NO_OPTIONS, 2, AttemptRun.UNKNOWN);
        assertThat(db).isEmptyDirectory();
        assertThat(dir.resolve(JOB + "/op_x/subtask_1_attempt_0")).exists();
    }

    /**
     * Attempt 1 of a subtask collects what attempt 0 left when its task manager was killed (no
     * dispose: the claim still held): everything its DB owned goes, the file it handed over to a
     * checkpoint stays until the JobManager deletes it, and that deletion removes the directory.
     * Another subtask's directory is not touched.
     */
    @Test
    void theNextAttemptCollectsADeadAttemptsDirectory() throws Exception {
        Path operator = dir.resolve("shared/op_x");
        Path dead = operator.resolve("subtask_0_attempt_0");
        Path otherSubtask = operator.resolve("subtask_1_attempt_0");
        Files.createDirectories(otherSubtask);
        Files.writeString(otherSubtask.resolve("MANIFEST-000000000001"), "another subtask's");
        String handedOver;
        try (NativeDb db = NativeDb.open(dead.toUri().toString(), NO_OPTIONS)) {
            int cf = db.createColumnFamily("s");
            put(db, cf, 1);
            NativeCheckpoint checkpoint = db.prepareCheckpoint();
            try {
                checkpoint.manifest();
                String[] names = checkpoint.fileNames();
                assertThat(names).hasSize(1);
                handedOver = names[0];
                db.handedOverFiles().handOver(checkpoint, 1, names);
            } finally {
                checkpoint.release();
            }
            put(db, cf, 2);
            db.compact(); // rewrites the handed-over file into one the DB owns
        }
        Files.writeString(dead.resolve("LOCK"), "0123456789abcdef"); // the killed writer's claim
        // a manifest the killed writer was writing: listings skip it, the collection may not
        Files.writeString(dead.resolve(".tmp-4242-7-MANIFEST-000000000009"), "half a manifest");
        try (Stream<Path> files = Files.list(dead)) {
            assertThat(files.count()).as("owned SSTs, manifest, LOCK, temp").isGreaterThan(4);
        }

        Path next = operator.resolve("subtask_0_attempt_1");
        DbDirectory.prepare(next.toUri().toString(), NO_OPTIONS, 2, AttemptRun.UNKNOWN);
        assertThat(next).isEmptyDirectory();
        try (Stream<Path> files = Files.list(dead)) {
            assertThat(files.map(f -> f.getFileName().toString())).containsExactly(handedOver);
        }
        assertThat(otherSubtask.resolve("MANIFEST-000000000001")).exists();

        // the JobManager deletes the file once no checkpoint references it
        Path file = dead.resolve(handedOver);
        new HandedOverFileHandle(
                        new org.apache.flink.core.fs.Path(file.toUri()),
                        Files.size(file),
                        null,
                        1,
                        handedOver)
                .discardState();
        assertThat(dead).doesNotExist();
        assertThat(next).exists();
    }

    /**
     * Attempt 0 of a run restored nothing, handed files over to checkpoints 1, 2 and 3 and died
     * with its task manager; the run restored checkpoint 1 at the failover (2 and 3 were aborted).
     * Attempt 1 of the same run collects the files only 2 and 3 handed over and keeps the one 1
     * references; an attempt of another run (a new job, a restart of the whole graph) keeps
     * every handed-over file.
     */
    @Test
    void filesOnlyCheckpointsAbortedAtTheFailoverHandedOverAreCollectedInTheSameRun()
            throws Exception {
        Path operator = dir.resolve("shared/op_killed");
        Path dead = operator.resolve("subtask_0_attempt_0");
        String deadUri = dead.toUri().toString();
        DbDirectory.prepare(deadUri, NO_OPTIONS, 1, new AttemptRun("run-a", 0, Set.of()));
        List<String> first;
        List<String> later = new ArrayList<>();
        try (NativeDb db = NativeDb.open(deadUri, NO_OPTIONS)) {
            int cf = db.createColumnFamily("s");
            put(db, cf, 1);
            first = handOverAll(db, 1);
            put(db, cf, 2);
            later.addAll(handOverAll(db, 2));
            db.compact();
            later.addAll(handOverAll(db, 3));
        } // killed: closed without a dispose, its manifest stays
        later.removeAll(first);
        assertThat(first).hasSize(1);
        assertThat(later).isNotEmpty();
        Set<String> restoredFiles = Set.of(dead.resolve(first.get(0)).toUri().toString());

        Path otherRun = dir.resolve("other");
        copyDirectory(dead, otherRun.resolve("op_killed/subtask_0_attempt_0"));
        DbDirectory.prepare(
                otherRun.resolve("op_killed/subtask_0_attempt_1").toUri().toString(),
                NO_OPTIONS,
                1,
                new AttemptRun("run-b", 1, restoredFiles));
        try (Stream<Path> files = Files.list(otherRun.resolve("op_killed/subtask_0_attempt_0"))) {
            assertThat(files.map(f -> f.getFileName().toString()))
                    .as("another run keeps every handed-over file")
                    .containsExactlyInAnyOrderElementsOf(
                            Stream.concat(first.stream(), later.stream()).toList());
        }

        DbDirectory.prepare(
                operator.resolve("subtask_0_attempt_1").toUri().toString(),
                NO_OPTIONS,
                1,
                new AttemptRun("run-a", 1, restoredFiles));
        try (Stream<Path> files = Files.list(dead)) {
            assertThat(files.map(f -> f.getFileName().toString()))
                    .as("only the restored checkpoint's file stays")
                    .containsExactlyElementsOf(first);
        }
    }

    private static List<String> handOverAll(NativeDb db, long checkpointId) {
        NativeCheckpoint checkpoint = db.prepareCheckpoint();
        try {
            checkpoint.manifest();
            String[] names = checkpoint.fileNames();
            db.handedOverFiles().handOver(checkpoint, checkpointId, names);
            return List.of(names);
        } finally {
            checkpoint.release();
        }
    }

    private static void copyDirectory(Path from, Path to) throws java.io.IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
    }

    /** The same on a store the engine serves (s3, memory): listed and deleted natively. */
    @Test
    void theNextAttemptCollectsADeadAttemptOnAnObjectStore() throws Exception {
        String operator = "memory://db-directory-test/" + JOB + "/op_y";
        String dead = operator + "/subtask_0_attempt_0";
        try (NativeDb db = NativeDb.open(dead, NO_OPTIONS)) {
            put(db, db.createColumnFamily("s"), 1);
            db.compact();
        }
        long lock = ForStNative.fileCreate(dead, NO_OPTIONS, "LOCK"); // the killed writer's claim
        ForStNative.fileFinish(lock);
        assertThat(ForStNative.listChildren(operator, NO_OPTIONS))
                .containsExactly("subtask_0_attempt_0");
        assertThat(ForStNative.listChildren(dead, NO_OPTIONS)).contains("LOCK");

        DbDirectory.prepare(operator + "/subtask_0_attempt_1", NO_OPTIONS, 2, AttemptRun.UNKNOWN);
        assertThat(ForStNative.listChildren(operator, NO_OPTIONS)).isEmpty();
    }

    /**
     * After a rescale from 4 to 2 that followed a task manager's death, subtask 0 collects the
     * directories of subtasks 2 and 3, which nobody opens again; subtask 1's stays.
     */
    @Test
    void subtaskZeroCollectsSubtasksTheOperatorNoLongerHas() throws Exception {
        String operator = "memory://db-directory-test/" + JOB + "/op_rescaled";
        for (String name :
                new String[] {"subtask_1_attempt_0", "subtask_2_attempt_0", "subtask_3_attempt_4"}) {
            try (NativeDb db = NativeDb.open(operator + "/" + name, NO_OPTIONS)) {
                put(db, db.createColumnFamily("s"), 1);
                db.compact();
            }
        }
        DbDirectory.prepare(operator + "/subtask_1_attempt_1", NO_OPTIONS, 2, AttemptRun.UNKNOWN);
        assertThat(ForStNative.listChildren(operator, NO_OPTIONS))
                .as("only subtask 0 collects gone subtasks")
                .containsExactlyInAnyOrder("subtask_2_attempt_0", "subtask_3_attempt_4");

        DbDirectory.prepare(operator + "/subtask_0_attempt_0", NO_OPTIONS, 2, AttemptRun.UNKNOWN);
        assertThat(ForStNative.listChildren(operator, NO_OPTIONS)).isEmpty();
    }

    private static void put(NativeDb db, int cf, int value) {
        ByteBuffer key = ByteBuffer.allocateDirect(1).put(0, (byte) 7);
        ByteBuffer bytes = ByteBuffer.allocateDirect(4).putInt(0, value);
        db.put(cf, key, 1, bytes, 4);
    }

    /**
     * Eight subtasks open and dispose their directories under one job directory at the same time,
     * 200 rounds each: a subtask's cleanup of empty parents once made another's open fail with
     * NoSuchFileException. Every open must find its directory in place.
     */
    @Test
    void concurrentOpensAndDisposesNeverFail() throws Exception {
        int subtasks = 8;
        int rounds = 200;
        ExecutorService threads = Executors.newFixedThreadPool(subtasks);
        Phaser together = new Phaser(subtasks);
        try {
            List<Future<?>> results = new ArrayList<>();
            for (int s = 0; s < subtasks; s++) {
                int subtask = s;
                results.add(
                        threads.submit(
                                () -> {
                                    try {
                                        openAndDispose(subtask, rounds, together);
                                    } finally {
                                        // the others stop waiting for this one, done or failed
                                        together.arriveAndDeregister();
                                    }
                                    return null;
                                }));
            }
            for (Future<?> result : results) {
                result.get();
            }
        } finally {
            threads.shutdownNow();
        }
        assertThat(dir.resolve(JOB)).doesNotExist();
    }

    private void openAndDispose(int subtask, int rounds, Phaser together)
            throws Exception {
        for (int round = 0; round < rounds; round++) {
            String uri =
                    dir.resolve(
                                    JOB
                                            + "/op_"
                                            + (round % 3)
                                            + "/subtask_"
                                            + subtask
                                            + "_attempt_"
                                            + round)
                            .toUri()
                            .toString();
            together.arriveAndAwaitAdvance();
            DbDirectory.prepare(uri, NO_OPTIONS, 8, AttemptRun.UNKNOWN);
            assertThat(DbDirectory.localDirectory(uri)).isDirectory();
            DbDirectory.remove(uri, NO_OPTIONS);
        }
    }
}
