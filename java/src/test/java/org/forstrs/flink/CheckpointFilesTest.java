package org.forstrs.flink;

import org.apache.flink.util.function.ThrowingRunnable;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/** The checkpoint directory reader the ITs poll while their jobs run. */
class CheckpointFilesTest {

    /** Checkpoints the writer below completes and subsumes; bounds the test in count. */
    private static final int CHECKPOINTS = 3_000;

    /**
     * A running job completes checkpoints and deletes the ones they subsume while a test looks
     * for the latest: the look never fails on a directory that vanished while it was listed (it
     * once failed {@code RescaleITCase} with a FileNotFoundException for a subsumed
     * {@code chk-<n>}), and finds the last one once the job stopped.
     */
    @Test
    void latestCompletedIsReadWhileCheckpointsAreSubsumed(@TempDir Path jobDir) throws Exception {
        AtomicBoolean done = new AtomicBoolean();
        CompletableFuture<Void> job =
                inBackground(
                        done,
                        () -> {
                            for (int id = 1; id <= CHECKPOINTS; id++) {
                                Path checkpoint = jobDir.resolve("chk-" + id);
                                Files.createDirectory(checkpoint);
                                Files.write(checkpoint.resolve("_metadata"), new byte[] {1});
                                Path subsumed = jobDir.resolve("chk-" + (id - 1));
                                if (id > 1) {
                                    Files.delete(subsumed.resolve("_metadata"));
                                    Files.delete(subsumed);
                                }
                            }
                        });

        while (!done.get()) {
            CheckpointFiles.latestCompleted(jobDir);
        }
        job.get();
        assertThat(CheckpointFiles.latestCompleted(jobDir).map(CheckpointFiles::checkpointId))
                .contains((long) CHECKPOINTS);
    }

    /**
     * The JobManager discards subsumed checkpoints' shared files and directories while a test
     * lists what is left: the listing leaves out what vanished instead of failing.
     */
    @Test
    void sharedFilesAreListedWhileDirectoriesAreDiscarded(@TempDir Path jobDir) throws Exception {
        Path shared = Files.createDirectories(jobDir.resolve("shared"));
        Path kept = Files.write(shared.resolve("kept.sst"), new byte[] {1});
        AtomicBoolean done = new AtomicBoolean();
        CompletableFuture<Void> discarder =
                inBackground(
                        done,
                        () -> {
                            for (int i = 0; i < CHECKPOINTS; i++) {
                                Path dir = Files.createDirectory(shared.resolve("db-" + i));
                                Files.delete(Files.write(dir.resolve("1.sst"), new byte[] {1}));
                                Files.delete(dir);
                            }
                        });

        while (!done.get()) {
            assertThat(CheckpointFiles.sharedFiles(jobDir)).contains(kept);
        }
        discarder.get();
        assertThat(CheckpointFiles.sharedFiles(jobDir)).containsExactly(kept);
    }

    /** Runs {@code work} on another thread and sets {@code done} when it ended, however. */
    private static CompletableFuture<Void> inBackground(
            AtomicBoolean done, ThrowingRunnable<Exception> work) {
        return CompletableFuture.runAsync(
                () -> {
                    try {
                        work.run();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    } finally {
                        done.set(true);
                    }
                });
    }
}
