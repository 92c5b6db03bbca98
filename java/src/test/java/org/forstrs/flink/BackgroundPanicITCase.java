package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.scheduler.exceptionhistory.ExceptionHistoryEntry;
import org.apache.flink.runtime.scheduler.exceptionhistory.RootExceptionHistoryEntry;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.forstrs.jni.Failpoints;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A panic in the engine's background work (a flush, a compaction; injected through {@link
 * Failpoints#arm}) or in a write on the task's executor thread fails the task at once with the panic's message, instead of hanging it
 * until the checkpoint timeout; the job restores from its checkpoints and finishes with exact
 * counts.
 */
@Tag(Failpoints.TAG)
class BackgroundPanicITCase {

    private static final int PARALLELISM = 2;
    private static final long RECORDS = 200_000;
    /** Many keys and small memtables: many flushes, and compactions of level 0. */
    private static final int KEYS = 20_000;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    @AfterEach
    void disarm() {
        Failpoints.arm("flush", 0);
        Failpoints.arm("compaction", 0);
        Failpoints.arm("write", 0);
    }

    @Test
    void aPanickingFlushFailsTheTaskAndTheJobRecovers(
            @TempDir Path primary, @TempDir Path checkpoints, @InjectMiniCluster MiniCluster cluster)
            throws Exception {
        runWithPanicIn(
                "flush",
                List.of("flush thread panicked: failpoint 'flush' fired", "database failed"),
                primary,
                checkpoints,
                cluster);
    }

    @Test
    void aPanickingCompactionFailsTheTaskAndTheJobRecovers(
            @TempDir Path primary, @TempDir Path checkpoints, @InjectMiniCluster MiniCluster cluster)
            throws Exception {
        runWithPanicIn(
                "compaction",
                List.of("compaction panicked: failpoint 'compaction' fired", "database failed"),
                primary,
                checkpoints,
                cluster);
    }

    /** On the task's own executor thread, not in background work: the database fails too. */
    @Test
    void aPanickingWriteFailsTheTaskAndTheJobRecovers(
            @TempDir Path primary, @TempDir Path checkpoints, @InjectMiniCluster MiniCluster cluster)
            throws Exception {
        // The panicking call's RuntimeException, or another call's refusal by the failed DB,
        // whichever reaches the task first: both name the panic.
        runWithPanicIn(
                "write",
                List.of("failpoint 'write' fired"),
                primary,
                checkpoints,
                cluster);
    }

    private static void runWithPanicIn(
            String failpoint,
            List<String> inOneTrace,
            Path primary,
            Path checkpoints,
            MiniCluster cluster)
            throws Exception {
        String run = "panic-" + failpoint + "-" + UUID.randomUUID();
        Configuration config = CountingJob.config(primary, checkpoints);
        // Flushes by memtable size, many of them: level 0 fills up and compacts.
        config.setString("state.backend.forst.writebuffer.size", "256kb");
        // A checkpoint whose flush the panic failed is declined, not a failover of its own: the
        // task's next state access fails it, with the engine's message.
        config.set(CheckpointingOptions.TOLERABLE_FAILURE_NUMBER, 1_000);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        // Input paced by checkpoints, but generously: the failpoint fires within the first.
        CountingJob.build(env, run, RECORDS, KEYS, 40_000, 0, 1);
        Failpoints.arm(failpoint, 1);

        JobClient job = env.executeAsync("counting with a panic in " + failpoint);

        assertThat(Await.terminal(job)).isEqualTo(JobStatus.FINISHED);
        assertThat(failures(cluster, job.getJobID()))
                .as("the job's failures")
                .anyMatch(trace -> inOneTrace.stream().allMatch(trace::contains));
        CheckpointRecoveryITCase.assertExactFinalCounts(CountingJob.results(run), RECORDS, KEYS);
    }

    /** The stack traces (with causes) of every failure in the job's exception history. */
    private static List<String> failures(MiniCluster cluster, JobID job) throws Exception {
        List<String> traces = new ArrayList<>();
        for (RootExceptionHistoryEntry root :
                cluster.getExecutionGraphInfo(job).get().getExceptionHistory()) {
            traces.add(root.getExceptionAsString());
            for (ExceptionHistoryEntry concurrent : root.getConcurrentExceptions()) {
                traces.add(concurrent.getExceptionAsString());
            }
        }
        return traces;
    }
}
