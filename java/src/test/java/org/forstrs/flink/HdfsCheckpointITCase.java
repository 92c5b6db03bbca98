package org.forstrs.flink;

import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.snapshot.CheckpointStatsLog;
import org.forstrs.flink.state.DbLease;
import org.forstrs.fs.CountingFileSystem;
import org.forstrs.fs.HdfsCluster;

import org.apache.flink.api.common.JobID;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.groups.OperatorMetricGroup;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checkpoints with {@code primary-dir: checkpoint-dir} and checkpoint storage on a real HDFS
 * (MiniDFSCluster, reached through the file-system proxy): exact counts across injected failures
 * and rescales, and every byte written to the DFS accounted for, so that a second copy of an SST
 * would show.
 */
class HdfsCheckpointITCase {

    private static final int PARALLELISM = 2;
    private static final int KEYS = 500;
    private static final int RECORDS_PER_CHECKPOINT = 2_000;

    /** Keeps every metric after the job: engine statistics are read once the backends are gone. */
    private static final InMemoryReporter REPORTER = InMemoryReporter.createWithRetainedMetrics();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setConfiguration(REPORTER.addToConfiguration(new Configuration()))
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(3)
                            .build());

    @AfterEach
    void cancelUnfinishedJobs(@InjectClusterClient ClusterClient<?> cluster) throws Exception {
        Await.cancelUnfinished(cluster);
    }

    @TempDir static java.nio.file.Path hdfsDir;

    private static HdfsCluster hdfs;

    @BeforeAll
    static void startHdfs() throws IOException {
        hdfs = HdfsCluster.start(hdfsDir, 1);
    }

    @AfterAll
    static void stopHdfs() {
        if (hdfs != null) {
            hdfs.close();
        }
    }

    @Test
    void countsAreExactAfterInjectedFailuresWithPrimaryDirOnCheckpointDirOnHdfs()
            throws Exception {
        String run = "hdfs-failures-" + UUID.randomUUID();
        long records = 60_000;
        int failingAttempts = 4;
        Configuration config = handOverConfig(hdfs.uri("/checkpoints-" + run));
        CheckpointStatsLog.clear();
        StreamExecutionEnvironment env = environment(config);
        CountingJob.build(env, run, records, KEYS, RECORDS_PER_CHECKPOINT, failingAttempts, 1);

        env.execute("counting with failures on hdfs");

        CheckpointRecoveryITCase.assertFailedAndResumed(run, failingAttempts);
        CheckpointRecoveryITCase.assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        assertHandedOverOnly(CheckpointStatsLog.recent());
    }

    /** {@link RescaleITCase}'s rescales 2 -> 3 -> 1 from retained checkpoints, on HDFS. */
    @Test
    void retainedCheckpointsRestoreAtTwoThreeAndOneWithPrimaryDirOnCheckpointDirOnHdfs()
            throws Exception {
        String checkpoints = hdfs.uri("/checkpoints-rescale-" + UUID.randomUUID());
        RescaleITCase.retainedCheckpointsRestoreAtTwoThreeAndOne(
                handOverConfig(checkpoints), checkpoints);
    }

    /**
     * Over a run of at least 20 checkpoints, the bytes written to the DFS are exactly the SSTs the
     * engines flushed and compacted, the engines' other files (manifests, their writer claims),
     * the DBs' leases and Flink's checkpoint metadata: SSTs are written once, checkpoints copy none of them (a copy
     * would add its bytes to the SSTs' or the other files' count).
     */
    @Test
    void bytesWrittenToTheDfsAreTheEnginesFlushesAndCompactionsOnly() throws Exception {
        String run = "hdfs-bytes-" + UUID.randomUUID();
        long records = 60_000;
        Configuration config =
                handOverConfig(CountingFileSystem.uri(hdfs.uri("/checkpoints-" + run)));
        // Flink's own state handles (meta info, manifests, the source's splits) travel inside
        // _metadata, so _metadata holds every byte Flink writes itself.
        config.setString("state.storage.fs.memory-threshold", "1mb");
        config.setString("state.backend.forst.metrics.engine-stats", "true");
        CheckpointStatsLog.clear();
        CountingFileSystem.reset();
        StreamExecutionEnvironment env = environment(config);
        CountingJob.build(env, run, records, KEYS, RECORDS_PER_CHECKPOINT, 0, 1);

        JobClient job = env.executeAsync("counting on hdfs, bytes counted");
        job.getJobExecutionResult().get();

        CheckpointRecoveryITCase.assertExactFinalCounts(CountingJob.results(run), records, KEYS);
        Map<String, Long> written = CountingFileSystem.bytesWrittenByFile();
        long checkpoints = written.keySet().stream().filter(f -> f.endsWith("/_metadata")).count();
        assertThat(checkpoints).as("completed checkpoints").isGreaterThanOrEqualTo(20);
        long sstBytes = sum(written, f -> f.endsWith(".sst"));
        long metadataBytes = sum(written, f -> f.endsWith("/_metadata"));
        Map<String, Long> others =
                filter(written, f -> !f.endsWith(".sst") && !f.endsWith("/_metadata"));
        // One write to each DB directory falls outside the engine's own count: its writer claim
        // (LOCK, put before the engine counts its storage's bytes). Disposing a DB writes nothing.
        long claimBytes = sum(others, f -> f.endsWith("/LOCK"));
        // So does its lease for gc (DbLease: the backend writes it, and renews it every 30 s).
        long leaseBytes = sum(others, f -> f.endsWith(DbLease.SUFFIX));
        long otherBytes = sum(others, f -> true);

        long flushed = engineTotal(job.getJobID(), "flush-bytes-written");
        long compacted = engineTotal(job.getJobID(), "compaction-bytes-written");
        long engineWrites = engineTotal(job.getJobID(), "storage-bytes-written");
        assertThat(flushed).as("bytes flushed").isPositive();
        assertThat(compacted).as("bytes compacted").isPositive();
        assertThat(sstBytes).as("SST bytes written to the DFS").isEqualTo(flushed + compacted);
        assertThat(others.keySet().stream().filter(f -> f.endsWith("/LOCK")))
                .as("one claim per DB")
                .hasSize(PARALLELISM);
        assertThat(others.keySet().stream().filter(f -> f.endsWith(DbLease.SUFFIX)))
                .as("one lease per DB")
                .hasSize(PARALLELISM);
        assertThat(otherBytes)
                .as("bytes of the engines' manifests, claims and leases")
                .isEqualTo(engineWrites - flushed - compacted + claimBytes + leaseBytes);
        assertThat(sstBytes + otherBytes + metadataBytes)
                .as("bytes written to the DFS: the engines' and Flink's _metadata, nothing else")
                .isEqualTo(engineWrites + claimBytes + leaseBytes + metadataBytes);
        assertHandedOverOnly(CheckpointStatsLog.recent());
    }

    private static Configuration handOverConfig(String checkpoints) {
        Configuration config = CountingJob.config(checkpoints, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        return config;
    }

    private static StreamExecutionEnvironment environment(Configuration config) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        return env;
    }

    private static void assertHandedOverOnly(List<CheckpointStats> stats) {
        assertThat(stats).isNotEmpty();
        assertThat(stats)
                .as("no SST copied, no byte through the process")
                .allMatch(s -> s.filesCopied() == 0)
                .allMatch(s -> s.bytesCopied() == 0)
                .allMatch(s -> s.bytesThroughProcess() == 0);
        assertThat(stats).as("new SSTs handed over").anyMatch(s -> s.filesHandedOver() > 0);
        assertThat(stats).as("handed-over SSTs reused").anyMatch(s -> s.filesReused() > 0);
    }

    private static Map<String, Long> filter(Map<String, Long> written, Predicate<String> file) {
        return written.entrySet().stream()
                .filter(e -> file.test(e.getKey()))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
    }

    private static long sum(Map<String, Long> written, Predicate<String> file) {
        return written.entrySet().stream()
                .filter(e -> file.test(e.getKey()))
                .mapToLong(Map.Entry::getValue)
                .sum();
    }

    /** An engine statistic summed over the subtasks of the counting operator, as at close. */
    private static long engineTotal(JobID job, String stat) {
        List<OperatorMetricGroup> groups =
                REPORTER.findOperatorMetricGroups(job, CountingJob.COUNT_OPERATOR);
        assertThat(groups).as("one metric group per subtask").hasSize(PARALLELISM);
        long total = 0;
        for (OperatorMetricGroup group : groups) {
            Metric metric = REPORTER.getMetricsByGroup(group).get("forstrs." + stat);
            assertThat(metric).as(stat).isInstanceOf(Gauge.class);
            total += ((Number) ((Gauge<?>) metric).getValue()).longValue();
        }
        return total;
    }
}
