package org.forstrs.flink;

import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Restore with rescale of the ForSt-RS backend: a job stopped at parallelism 2 continues at 3,
 * then at 1, from native savepoints and from retained checkpoints; final counts are exact.
 */
class RescaleITCase {

    static final int KEYS = 700;
    static final long RECORDS = 90_000;
    /** The input's pace: 1,500 records between two completed checkpoints. */
    private static final int RECORDS_PER_CHECKPOINT = 1_500;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(3)
                            .build());

    @AfterEach
    void cancelUnfinishedJobs(@InjectClusterClient ClusterClient<?> cluster) throws Exception {
        Await.cancelUnfinished(cluster);
    }

    @Test
    void savepointsRestoreAtTwoThreeAndOne(
            @TempDir Path primary, @TempDir Path checkpoints, @TempDir Path savepoints)
            throws Exception {
        String run = "savepoints-" + UUID.randomUUID();
        Configuration config = CountingJob.config(primary, checkpoints);

        JobClient first = submit(config, null, 2, run, RECORDS / 4);
        awaitHeld(run, RECORDS / 4, first);
        Path atTwo = stopWithSavepoint(first, savepoints);

        JobClient second = submit(config, atTwo.toUri().toString(), 3, run, RECORDS / 2);
        awaitHeld(run, RECORDS / 2, second);
        Path atThree = stopWithSavepoint(second, savepoints);

        submit(config, atThree.toUri().toString(), 1, run, Long.MAX_VALUE).getJobExecutionResult().get();

        CheckpointRecoveryITCase.assertExactFinalCounts(CountingJob.results(run), RECORDS, KEYS);
        assertThat(CheckpointFiles.keyedHandles(atTwo)).hasSize(2);
        assertThat(CheckpointFiles.keyedHandles(atThree)).hasSize(3);
        // A native savepoint stands alone: every SST lies in its own directory.
        assertThat(CheckpointFiles.referencedSstFiles(atThree))
                .isNotEmpty()
                .allMatch(f -> f.startsWith(atThree.toAbsolutePath().normalize()));
    }

    /**
     * A native savepoint is self-contained and relocatable, as Flink's own are: moved to another
     * directory (its original deleted), it restores, at another parallelism, exactly.
     */
    @Test
    void aMovedNativeSavepointRestores(
            @TempDir Path primary, @TempDir Path checkpoints, @TempDir Path savepoints)
            throws Exception {
        String run = "moved-" + UUID.randomUUID();
        Configuration config = CountingJob.config(primary, checkpoints);
        JobClient first = submit(config, null, 2, run, RECORDS / 2);
        awaitHeld(run, RECORDS / 2, first);
        Path taken = stopWithSavepoint(first, savepoints);
        Path elsewhere = Files.createDirectories(savepoints.resolve("moved"));
        Path moved = Files.move(taken, elsewhere.resolve(taken.getFileName()));

        submit(config, moved.toUri().toString(), 3, run, Long.MAX_VALUE)
                .getJobExecutionResult()
                .get();

        CheckpointRecoveryITCase.assertExactFinalCounts(CountingJob.results(run), RECORDS, KEYS);
        assertThat(taken).doesNotExist();
    }

    @Test
    void retainedCheckpointsRestoreAtTwoThreeAndOne(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        retainedCheckpointsRestoreAtTwoThreeAndOne(
                CountingJob.config(primary, checkpoints), checkpoints.toUri().toString());
    }

    /**
     * As above with {@code primary-dir: checkpoint-dir}: the DBs work in the checkpoint's shared
     * directory, checkpoints hand their files over, and each rescale restores by reference from
     * files that earlier jobs' DBs wrote.
     */
    @Test
    void retainedCheckpointsRestoreAtTwoThreeAndOneWithCheckpointDirAsPrimary(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        retainedCheckpointsRestoreAtTwoThreeAndOne(config, checkpoints.toUri().toString());
    }

    /**
     * The job at 2, cancelled after a checkpoint, continues at 3 from the retained checkpoint,
     * cancelled again, and ends at 1; final counts are exact. {@code checkpoints} is the
     * checkpoint directory of {@code config} (the cluster needs 3 slots).
     */
    static void retainedCheckpointsRestoreAtTwoThreeAndOne(
            Configuration config, String checkpoints) throws Exception {
        String run = "retained-" + UUID.randomUUID();

        JobClient first = submit(config, null, 2, run, RECORDS / 4);
        awaitHeld(run, RECORDS / 4, first);
        String atTwo = cancelAfterNextCheckpoint(first, checkpoints);

        JobClient second = submit(config, atTwo, 3, run, RECORDS / 2);
        awaitHeld(run, RECORDS / 2, second);
        String atThree = cancelAfterNextCheckpoint(second, checkpoints);

        submit(config, atThree, 1, run, Long.MAX_VALUE).getJobExecutionResult().get();

        CheckpointRecoveryITCase.assertExactFinalCounts(CountingJob.results(run), RECORDS, KEYS);
        assertThat(CheckpointFiles.keyedHandles(atTwo)).hasSize(2);
        assertThat(CheckpointFiles.keyedHandles(atThree)).hasSize(3);
    }

    /**
     * Submits the counting job; its input (over all jobs of the run) is held at {@code holdAt}
     * records, so the job is known to be mid-input when the test stops it.
     */
    static JobClient submit(
            Configuration base, String restoreFrom, int parallelism, String run, long holdAt)
            throws Exception {
        Configuration config = new Configuration(base);
        if (restoreFrom != null) {
            config.set(StateRecoveryOptions.SAVEPOINT_PATH, restoreFrom);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(parallelism);
        CountingJob.build(env, run, RECORDS, KEYS, RECORDS_PER_CHECKPOINT, 0, 1);
        if (holdAt == Long.MAX_VALUE) {
            PacedSequence.release(run);
        } else {
            PacedSequence.holdAt(run, holdAt);
        }
        return env.executeAsync("counting at parallelism " + parallelism);
    }

    /** Waits until the input emitted all it may ({@code records}, over all jobs of the run). */
    static void awaitHeld(String run, long records, JobClient job) throws Exception {
        Await.until(records + " records", () -> PacedSequence.emitted(run) >= records, job);
    }

    private static Path stopWithSavepoint(JobClient job, Path savepoints) throws Exception {
        String location =
                job.stopWithSavepoint(
                                false, savepoints.toUri().toString(), SavepointFormatType.NATIVE)
                        .get();
        job.getJobExecutionResult().get();
        return Paths.get(URI.create(location));
    }

    /** Cancels the job once a checkpoint completed after now; returns the retained one's URI. */
    static String cancelAfterNextCheckpoint(JobClient job, String checkpoints)
            throws Exception {
        String jobDir = checkpoints.replaceAll("/+$", "") + "/" + job.getJobID();
        long before =
                CheckpointFiles.latestCompleted(jobDir).map(CheckpointFiles::checkpointId).orElse(0L);
        Await.until(
                "a checkpoint of " + jobDir,
                () ->
                        CheckpointFiles.latestCompleted(jobDir)
                                        .map(CheckpointFiles::checkpointId)
                                        .orElse(0L)
                                > before,
                job);
        job.cancel().get();
        Await.terminal(job);
        return CheckpointFiles.latestCompleted(jobDir).orElseThrow();
    }
}
