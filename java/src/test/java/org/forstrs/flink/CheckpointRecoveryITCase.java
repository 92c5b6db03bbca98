package org.forstrs.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checkpoints of the ForSt-RS backend on a MiniCluster: exact counts across injected failures
 * (each recovery restores keyed state from the last completed checkpoint), and the shared
 * checkpoint directory holding only files the retained checkpoint references.
 */
class CheckpointRecoveryITCase {

    private static final int PARALLELISM = 2;
    private static final int KEYS = 500;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    @Test
    void countsAreExactAfterInjectedFailures(@TempDir Path primary, @TempDir Path checkpoints)
            throws Exception {
        String run = "failures-" + UUID.randomUUID();
        long records = 80_000;
        int failingAttempts = 7;
        CheckpointStatsLog.clear();
        StreamExecutionEnvironment env = environment(CountingJob.config(primary, checkpoints));
        CountingJob.build(env, run, records, KEYS, 20, failingAttempts, 1_500, 4_000);

        env.execute("counting with failures");

        // An attempt restored close to the end of its split may finish before its failure point.
        assertThat(CountingJob.failures(run)).isBetween(5, failingAttempts);
        // Recoveries resumed from checkpoints rather than from the start of the input.
        assertThat(CountingJob.resumedAttempts(run)).isGreaterThanOrEqualTo(3);
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

    @Test
    void sharedDirectoryHoldsOnlyFilesTheRetainedCheckpointReferences(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        String run = "cleanup-" + UUID.randomUUID();
        long records = 60_000;
        StreamExecutionEnvironment env = environment(CountingJob.config(primary, checkpoints));
        CountingJob.build(env, run, records, KEYS, 20, 0, 1, 2);

        CheckpointStatsLog.clear();
        Path jobDir = checkpoints.resolve(env.execute("counting").getJobID().toString());

        assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        assertThat(CheckpointStatsLog.recent()).anyMatch(s -> s.filesCopied() > 0);
        // A finished job's checkpoints are discarded (RETAIN_ON_CANCELLATION keeps them only
        // on cancellation), so usually nothing is referenced; files of subsumed checkpoints are
        // deleted asynchronously by the JobManager.
        Set<Path> referenced = new HashSet<>();
        Optional<Path> retained = CheckpointFiles.latestCompleted(jobDir);
        if (retained.isPresent()) {
            referenced.addAll(CheckpointFiles.referencedSstFiles(retained.get()));
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!CheckpointFiles.sharedFiles(jobDir).equals(referenced)
                && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertThat(CheckpointFiles.sharedFiles(jobDir)).isEqualTo(referenced);
    }

    static StreamExecutionEnvironment environment(Configuration config) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        return env;
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
