package org.forstrs.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.forstrs.fs.faults.FaultInjectingFileSystem;
import org.forstrs.fs.faults.FaultPlan;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Set;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The counting job with its working directories on a file system that fails: SST opens that fail
 * or find the file gone, failing reads, a file whose writes fail, and every read returning only a
 * third of what was asked. Each failure fails the read, flush or task it hits; the job recovers
 * (retries, failovers from checkpoints) and its counts stay exact.
 */
class FaultInjectionITCase {

    private static final int PARALLELISM = 2;
    private static final long RECORDS = 200_000;
    /** Many keys and small memtables, so that reads go to files. */
    private static final int KEYS = 20_000;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    @AfterEach
    void noFaults() {
        FaultPlan.activate(new FaultPlan(Set.of(), Set.of(), Set.of(), Set.of(), false));
    }

    @Test
    void countsAreExactOnAFailingFileSystem(@TempDir Path primary, @TempDir Path checkpoints)
            throws Exception {
        FaultPlan plan =
                new FaultPlan(
                        Set.of(5L, 15L), // SST opens that fail
                        Set.of(10L), // an SST open that finds the file gone
                        Set.of(3_000L, 10_000L), // read calls that fail
                        Set.of(5L), // a created file whose writes fail
                        true); // every read short
        FaultPlan.activate(plan);
        String run = "faults-" + UUID.randomUUID();
        Configuration config = CountingJob.config(primary, checkpoints);
        config.setString(
                "state.backend.forst.primary-dir",
                FaultInjectingFileSystem.SCHEME + "://" + primary.toAbsolutePath());
        config.setString("state.backend.forst.writebuffer.size", "256kb");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        CountingJob.build(env, run, RECORDS, KEYS, 4_000, 0, 1);

        env.execute("counting on a failing file system");

        System.out.printf(
                "faults fired %d of %d; %s; %d attempts resumed from checkpoints%n",
                plan.fired(), plan.planned(), plan.calls(), FailAfterCheckpoint.resumedAttempts(run));
        assertThat(plan.fired()).as("every planned fault fired").isEqualTo(plan.planned());
        assertThat(plan.shortenedReads()).isPositive();
        CheckpointRecoveryITCase.assertExactFinalCounts(CountingJob.results(run), RECORDS, KEYS);
    }
}
