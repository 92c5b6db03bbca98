package org.forstrs.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Fresh jobs at parallelism 8, several at a time in one task manager, with no restart allowed:
 * every subtask creates its working directory under the job's directory while others of the same
 * job create theirs and subtasks of finished jobs dispose theirs. Any start-up race fails a job
 * (no restart hides it); every job's counts must be exact.
 */
class StartupITCase {

    private static final int PARALLELISM = 8;
    private static final int JOBS = 20;
    private static final int AT_A_TIME = 4;
    private static final long RECORDS = 16_000;
    private static final int KEYS = 400;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setConfiguration(clusterConfig())
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM * AT_A_TIME)
                            .build());

    private static Configuration clusterConfig() {
        Configuration config = new Configuration();
        // 32 MiB of managed memory per slot
        config.set(
                TaskManagerOptions.MANAGED_MEMORY_SIZE,
                MemorySize.ofMebiBytes(32L * PARALLELISM * AT_A_TIME));
        return config;
    }

    @Test
    void freshJobsAtParallelismEightAllSucceed(@TempDir Path primary, @TempDir Path checkpoints)
            throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        for (int round = 0; round < JOBS / AT_A_TIME; round++) {
            List<String> runs = new ArrayList<>();
            List<JobClient> jobs = new ArrayList<>();
            for (int j = 0; j < AT_A_TIME; j++) {
                String run = "startup-" + UUID.randomUUID();
                StreamExecutionEnvironment env =
                        StreamExecutionEnvironment.getExecutionEnvironment(config);
                env.setParallelism(PARALLELISM);
                // No pacing: all input in the first checkpoint cycle.
                CountingJob.build(env, run, RECORDS, KEYS, (int) RECORDS, 0, 1);
                runs.add(run);
                jobs.add(env.executeAsync("fresh job " + (round * AT_A_TIME + j)));
            }
            for (int j = 0; j < AT_A_TIME; j++) {
                jobs.get(j).getJobExecutionResult().get();
                CheckpointRecoveryITCase.assertExactFinalCounts(
                        CountingJob.results(runs.get(j)), RECORDS, KEYS);
            }
        }
    }
}
