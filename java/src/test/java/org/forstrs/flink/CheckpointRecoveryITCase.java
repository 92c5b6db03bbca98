package org.forstrs.flink;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.snapshot.CheckpointStatsLog;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checkpoints of the ForSt-RS backend on a MiniCluster: exact counts across injected failures
 * (each recovery restores keyed state from the last completed checkpoint), with file-system and
 * with JobManager checkpoint storage, and the shared checkpoint directory holding only files the
 * retained checkpoint references.
 */
class CheckpointRecoveryITCase {

    private static final int PARALLELISM = 2;
    private static final int KEYS = 500;

    /**
     * Input per checkpoint: 1,000 records per subtask between two checkpoints, so the input of
     * each test outlasts every failure many times over (each failing attempt uses up at most a
     * few checkpoints' worth of it).
     */
    private static final int RECORDS_PER_CHECKPOINT = 2_000;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    @AfterEach
    void cancelUnfinishedJobs(@InjectClusterClient ClusterClient<?> cluster) throws Exception {
        Await.cancelUnfinished(cluster);
    }

    @Test
    void countsAreExactAfterInjectedFailures(@TempDir Path primary, @TempDir Path checkpoints)
            throws Exception {
        String run = "failures-" + UUID.randomUUID();
        long records = 80_000;
        int failingAttempts = 7;
        CheckpointStatsLog.clear();
        StreamExecutionEnvironment env = environment(CountingJob.config(primary, checkpoints));
        CountingJob.build(env, run, records, KEYS, RECORDS_PER_CHECKPOINT, failingAttempts, 1);

        env.execute("counting with failures");

        assertFailedAndResumed(run, failingAttempts);
        assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        List<CheckpointStats> stats = CheckpointStatsLog.recent();
        assertThat(stats).isNotEmpty();
        assertThat(stats)
                .as("incremental checkpoints reuse files")
                .anyMatch(s -> s.filesReused() > 0);
        assertThat(stats)
                .as("on a local file system copies are hard links")
                .allMatch(s -> s.bytesThroughProcess() == 0);
    }

    /**
     * With {@code primary-dir: checkpoint-dir} the DBs work in the job's checkpoint directory and
     * checkpoints take the new SSTs where they are: none is copied and no byte goes through the
     * process, later checkpoints reference them again, and Flink's SharedStateRegistry deletes them
     * once no retained checkpoint needs them. Every recovery restores exact counts from files in
     * the directories of DBs of earlier attempts, disposed since (they kept what checkpoints own),
     * while older checkpoints are subsumed and discarded: a file a live checkpoint needs is never
     * lost.
     */
    @Test
    void checkpointsHandFilesOverWithPrimaryDirOnCheckpointDir(@TempDir Path checkpoints)
            throws Exception {
        String run = "hand-over-" + UUID.randomUUID();
        long records = 80_000;
        int failingAttempts = 7;
        Configuration config = CountingJob.config(checkpoints, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        CheckpointStatsLog.clear();
        StreamExecutionEnvironment env = environment(config);
        CountingJob.build(env, run, records, KEYS, RECORDS_PER_CHECKPOINT, failingAttempts, 1);

        env.execute("counting with failures, files handed over");

        assertFailedAndResumed(run, failingAttempts);
        assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        List<CheckpointStats> stats = CheckpointStatsLog.recent();
        assertThat(stats).isNotEmpty();
        assertThat(stats)
                .as("no SST copied, no byte through the process")
                .allMatch(s -> s.filesCopied() == 0)
                .allMatch(s -> s.bytesCopied() == 0)
                .allMatch(s -> s.bytesThroughProcess() == 0);
        assertThat(stats).as("new SSTs handed over").anyMatch(s -> s.filesHandedOver() > 0);
        assertThat(stats).as("handed-over SSTs reused").anyMatch(s -> s.filesReused() > 0);
    }

    /**
     * Files handed over in place through 40 failovers, checkpoints every 100 ms and up to three
     * at once: results stay exact, and once the job FINISHED nothing is left under the shared
     * directory. Many checkpoints' results are discarded on the task manager here (aborted after
     * their asynchronous phase, or still running at a failover), several of them handing over the
     * same files as a completed one: the files return to their DB or, when the DB was disposed
     * first, go with the last discard, while the files completed checkpoints reference stay for
     * the restores that follow. Sampled after every failover while the job runs, the files of dead
     * attempts that no completed checkpoint references do not pile up: each goes while the job
     * still runs (a file the job leaked would stay until the end).
     */
    @Test
    void nothingIsLeftUnderSharedAfterFortyFailoversWithFilesHandedOver(@TempDir Path checkpoints)
            throws Exception {
        String run = "forty-failovers-" + UUID.randomUUID();
        long records = 400_000;
        int failingAttempts = 40;
        Configuration config = CountingJob.config(checkpoints, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        config.set(CheckpointingOptions.MAX_CONCURRENT_CHECKPOINTS, 3);
        config.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 2 * failingAttempts);
        CheckpointStatsLog.clear();
        StreamExecutionEnvironment env = environment(config);
        CountingJob.build(env, run, records, KEYS, RECORDS_PER_CHECKPOINT, failingAttempts, 1);

        JobClient job = env.executeAsync("counting with 40 failovers, files handed over");
        Path jobDir = checkpoints.resolve(job.getJobID().toString());
        // After each failover, the files of dead attempts that nothing references; once every
        // failover happened the input is held, and each of them must go while the job runs (the
        // JobManager deletes what subsumed checkpoints held): a file the job leaked stays.
        Set<Path> unreferenced = new HashSet<>();
        for (int failures = 1; failures <= failingAttempts; failures++) {
            int reached = failures;
            Await.until(
                    reached + " failovers", () -> FailAfterCheckpoint.failures(run) >= reached, job);
            unreferenced.addAll(CheckpointFiles.unreferencedOfEarlierAttempts(jobDir));
        }
        PacedSequence.holdAt(run, PacedSequence.emitted(run));
        AtomicReference<Set<Path>> left = new AtomicReference<>(unreferenced);
        try {
            Await.until(
                    "the unreferenced files of dead attempts to go while the job runs",
                    () -> {
                        Set<Path> still = new HashSet<>(unreferenced);
                        still.retainAll(CheckpointFiles.unreferencedOfEarlierAttempts(jobDir));
                        left.set(still);
                        return still.isEmpty();
                    },
                    job);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + ": " + left.get(), e);
        }
        PacedSequence.release(run);
        assertThat(Await.terminal(job)).isEqualTo(JobStatus.FINISHED);

        assertFailedAndResumed(run, failingAttempts);
        assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        assertThat(CheckpointStatsLog.recent())
                .as("new SSTs handed over")
                .anyMatch(s -> s.filesHandedOver() > 0);
        // The JobManager discards the last checkpoints' files asynchronously after FINISHED.
        Await.until(
                "an empty shared directory",
                () -> CheckpointFiles.sharedFiles(jobDir).isEmpty());
        assertThat(CheckpointFiles.sharedFiles(jobDir)).isEmpty();
    }

    /**
     * The same with the checkpoint storage Flink uses when no checkpoint directory is set, the
     * JobManager's: SSTs go through Flink's checkpoint streams (read by the native side, held by
     * the JobManager), later checkpoints reference earlier uploads, and every recovery restores
     * from those bytes.
     */
    @Test
    void countsAreExactAfterInjectedFailuresWithJobManagerStorage(@TempDir Path primary)
            throws Exception {
        String run = "jobmanager-" + UUID.randomUUID();
        long records = 80_000;
        int failingAttempts = 5;
        Configuration config = CountingJob.config(primary, primary);
        config.removeConfig(CheckpointingOptions.CHECKPOINTS_DIRECTORY);
        config.removeConfig(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION);
        config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "jobmanager");
        CheckpointStatsLog.clear();
        StreamExecutionEnvironment env = environment(config);
        CountingJob.build(env, run, records, KEYS, RECORDS_PER_CHECKPOINT, failingAttempts, 1);

        env.execute("counting with failures, JobManager checkpoint storage");

        assertFailedAndResumed(run, failingAttempts);
        assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        List<CheckpointStats> stats = CheckpointStatsLog.recent();
        assertThat(stats).isNotEmpty();
        assertThat(stats)
                .as("incremental checkpoints reuse uploads")
                .anyMatch(s -> s.filesReused() > 0);
        assertThat(stats)
                .as("every new SST is streamed through the process")
                .allMatch(s -> s.bytesThroughProcess() == s.bytesCopied())
                .anyMatch(s -> s.bytesThroughProcess() > 0);
    }

    /**
     * The same with checkpoint file merging: SSTs are still linked into the shared directory
     * (the location's target is the job's plain one), the manifest and meta info go into merged
     * files (segments, read back on restore), and the copied SSTs are still reused.
     */
    @Test
    void countsAreExactAfterInjectedFailuresWithFileMerging(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        String run = "file-merging-" + UUID.randomUUID();
        long records = 120_000;
        int failingAttempts = 3;
        Configuration config = CountingJob.config(primary, checkpoints);
        config.set(CheckpointingOptions.FILE_MERGING_ENABLED, true);
        CheckpointStatsLog.clear();
        StreamExecutionEnvironment env = environment(config);
        CountingJob.build(env, run, records, KEYS, RECORDS_PER_CHECKPOINT, failingAttempts, 1);

        env.execute("counting with failures, checkpoint file merging");

        assertFailedAndResumed(run, failingAttempts);
        assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        List<CheckpointStats> stats = CheckpointStatsLog.recent();
        assertThat(stats).anyMatch(s -> s.filesReused() > 0);
        assertThat(stats)
                .as("on a local file system copies are hard links")
                .allMatch(s -> s.bytesThroughProcess() == 0);
    }

    @Test
    void sharedDirectoryHoldsOnlyFilesTheRetainedCheckpointReferences(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        String run = "cleanup-" + UUID.randomUUID();
        // Far more input than the test waits for: the job is cancelled while it runs.
        StreamExecutionEnvironment env = environment(CountingJob.config(primary, checkpoints));
        CountingJob.build(env, run, 100_000_000, KEYS, RECORDS_PER_CHECKPOINT, 0, 1);
        CheckpointStatsLog.clear();
        JobClient job = env.executeAsync("counting, cancelled with a retained checkpoint");
        Path jobDir = checkpoints.resolve(job.getJobID().toString());

        // Many checkpoints, so that most of them were subsumed and their unique files released.
        Await.until(
                "checkpoints", () -> CheckpointStatsLog.recent().size() >= 2 * PARALLELISM * 8, job);
        job.cancel().get();
        assertThat(Await.terminal(job)).isEqualTo(JobStatus.CANCELED);

        List<CheckpointStats> stats = CheckpointStatsLog.recent();
        assertThat(stats).hasSizeGreaterThanOrEqualTo(2 * PARALLELISM * 8);
        assertThat(stats).anyMatch(s -> s.filesReused() > 0);
        Path retained = CheckpointFiles.latestCompleted(jobDir).orElseThrow();
        assertThat(CheckpointFiles.checkpointId(retained)).isGreaterThan(8);
        Set<Path> referenced = CheckpointFiles.referencedSstFiles(retained);
        assertThat(referenced).isNotEmpty();
        // Files of subsumed checkpoints are deleted asynchronously by the JobManager. A
        // checkpoint still in flight at the cancellation may leave its copies behind (Flink
        // ignores acknowledgements once its coordinator shut down): those are allowed, nothing
        // copied by the retained checkpoint or an older one is.
        long retainedId = CheckpointFiles.checkpointId(retained);
        Map<Path, Long> copiedBy = new HashMap<>();
        for (CheckpointStats s : stats) {
            s.copiedTo().forEach(p -> copiedBy.put(localPath(p), s.checkpointId()));
        }
        Await.until(
                "no leftover copies",
                () -> leftovers(jobDir, referenced, copiedBy, retainedId).isEmpty());
        assertThat(CheckpointFiles.sharedFiles(jobDir)).containsAll(referenced);
    }

    /**
     * With {@code primary-dir: checkpoint-dir}, after failovers (each attempt's DB in its own
     * directory under {@code shared}, later attempts restoring by reference from earlier ones'
     * files and collecting their directories) and a cancellation that retains the latest
     * checkpoint, the shared directory holds only files the retained checkpoint references: no DB
     * is left behind (no manifest, LOCK, owned SST, nor an empty directory of any attempt), and
     * the files of subsumed checkpoints went with their directories. A checkpoint still in flight
     * at the cancellation may leave the files it took behind (Flink ignores its
     * acknowledgement once the coordinator shut down): those alone are allowed.
     */
    @Test
    void checkpointDirHoldsOnlyRetainedFilesAfterFailoversAndCancel(@TempDir Path checkpoints)
            throws Exception {
        String run = "dir-cleanup-" + UUID.randomUUID();
        int failingAttempts = 3;
        Configuration config = CountingJob.config(checkpoints, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        StreamExecutionEnvironment env = environment(config);
        // Far more input than the test waits for: the job is cancelled while it runs.
        CountingJob.build(
                env, run, 100_000_000, KEYS, RECORDS_PER_CHECKPOINT, failingAttempts, 1);
        CheckpointStatsLog.clear();
        JobClient job = env.executeAsync("counting with failovers, cancelled, checkpoint-dir");
        Path jobDir = checkpoints.resolve(job.getJobID().toString());

        Await.until("failovers", () -> FailAfterCheckpoint.failures(run) == failingAttempts, job);
        long afterFailovers = latestCompletedId(jobDir);
        // Enough checkpoints of the last attempt that earlier ones were subsumed.
        Await.until("checkpoints", () -> latestCompletedId(jobDir) >= afterFailovers + 8, job);
        job.cancel().get();
        assertThat(Await.terminal(job)).isEqualTo(JobStatus.CANCELED);

        Path retained = CheckpointFiles.latestCompleted(jobDir).orElseThrow();
        long retainedId = CheckpointFiles.checkpointId(retained);
        Set<Path> referenced = CheckpointFiles.referencedSstFiles(retained);
        Path shared = jobDir.resolve("shared").toAbsolutePath().normalize();
        assertThat(referenced).isNotEmpty().allMatch(p -> p.startsWith(shared));
        Map<Path, Long> handedOverBy = new HashMap<>();
        for (CheckpointStats s : CheckpointStatsLog.recent()) {
            assertThat(s.filesCopied()).as("no SST copied").isZero();
            s.handedOver().forEach(p -> handedOverBy.put(localPath(p), s.checkpointId()));
        }
        Await.until(
                "no leftover DB files",
                () -> dbLeftovers(jobDir, referenced, handedOverBy, retainedId).isEmpty());
        assertThat(CheckpointFiles.sharedFiles(jobDir)).containsAll(referenced);
    }

    private static long latestCompletedId(Path jobDir) throws IOException {
        return CheckpointFiles.latestCompleted(jobDir).map(CheckpointFiles::checkpointId).orElse(0L);
    }

    /**
     * What the shared directory holds that is not a file of the retained checkpoint or of one in
     * flight at the cancellation: any other file, and any empty directory. A directory removed
     * while it is looked at counts as a leftover for this round.
     */
    private static Set<Path> dbLeftovers(
            Path jobDir, Set<Path> referenced, Map<Path, Long> handedOverBy, long retainedId)
            throws IOException {
        Set<Path> left = new HashSet<>();
        try {
            left.addAll(CheckpointFiles.sharedFiles(jobDir));
            left.removeAll(referenced);
            left.removeIf(p -> handedOverBy.getOrDefault(p, Long.MIN_VALUE) > retainedId);
            left.addAll(CheckpointFiles.emptySharedDirectories(jobDir));
        } catch (UncheckedIOException e) {
            left.add(jobDir);
        }
        return left;
    }

    /** Files in the shared directory that neither the retained nor an in-flight checkpoint owns. */
    private static Set<Path> leftovers(
            Path jobDir, Set<Path> referenced, Map<Path, Long> copiedBy, long retainedId)
            throws IOException {
        Set<Path> left = new HashSet<>(CheckpointFiles.sharedFiles(jobDir));
        left.removeAll(referenced);
        left.removeIf(p -> copiedBy.getOrDefault(p, Long.MIN_VALUE) > retainedId);
        return left;
    }

    private static Path localPath(String flinkPath) {
        return Paths.get(URI.create(flinkPath).getPath()).toAbsolutePath().normalize();
    }

    static StreamExecutionEnvironment environment(Configuration config) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        return env;
    }

    /**
     * Every failing attempt failed (the paced input outlasts them all) and every restart resumed
     * from a checkpoint that covered records of the failed attempt, past the start of the split.
     */
    static void assertFailedAndResumed(String run, int failingAttempts) {
        assertThat(FailAfterCheckpoint.failures(run)).isEqualTo(failingAttempts);
        assertThat(FailAfterCheckpoint.resumedAttempts(run)).isGreaterThanOrEqualTo(failingAttempts);
    }

    /** Each key emitted once, with its exact count. */
    static void assertExactFinalCounts(List<Tuple2<Long, Long>> results, long records, int keys) {
        Map<Long, Long> emitted = new HashMap<>();
        for (Tuple2<Long, Long> r : results) {
            assertThat(emitted.put(r.f0, r.f1)).as("key %s emitted twice", r.f0).isNull();
        }
        assertThat(emitted).isEqualTo(CountingJob.expected(records, keys));
    }
}
