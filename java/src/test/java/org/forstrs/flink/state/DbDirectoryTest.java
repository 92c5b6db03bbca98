package org.forstrs.flink.state;

import org.forstrs.jni.ForStNative;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Phaser;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/** Subtasks' DB directories under one job directory, opened and disposed concurrently. */
class DbDirectoryTest {

    private static final String[] NO_OPTIONS = new String[0];

    @TempDir Path dir;

    @Test
    void removeDeletesTheDirectoryAndItsEmptyParents() throws Exception {
        Path db = dir.resolve("job/op_x/subtask_0_attempt_0");
        Files.createDirectories(db);
        Files.writeString(db.resolve("MANIFEST-1"), "x");
        Files.writeString(dir.resolve("other"), "kept");
        DbDirectory.remove(db.toUri().toString(), NO_OPTIONS);
        assertThat(dir.resolve("job")).doesNotExist();
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
        Path db = dir.resolve("job/op_x/subtask_0_attempt_0");
        Files.createDirectories(db);
        Files.writeString(db.resolve("MANIFEST-1"), "left over");
        Files.createDirectories(dir.resolve("job/op_x/subtask_1_attempt_0"));
        DbDirectory.prepare(db.toUri().toString(), NO_OPTIONS);
        assertThat(db).isEmptyDirectory();
        assertThat(dir.resolve("job/op_x/subtask_1_attempt_0")).exists();
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
        assertThat(dir.resolve("job")).doesNotExist();
    }

    private void openAndDispose(int subtask, int rounds, Phaser together)
            throws Exception {
        for (int round = 0; round < rounds; round++) {
            String uri =
                    dir.resolve(
                                    "job/op_"
                                            + (round % 3)
                                            + "/subtask_"
                                            + subtask
                                            + "_attempt_"
                                            + round)
                            .toUri()
                            .toString();
            together.arriveAndAwaitAdvance();
            DbDirectory.prepare(uri, NO_OPTIONS);
            assertThat(DbDirectory.localDirectory(uri)).isDirectory();
            DbDirectory.remove(uri, NO_OPTIONS);
        }
    }
}
