package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.LogEvent;

import org.forstrs.fs.faults.FaultInjectingFileSystem;
import org.forstrs.fs.faults.FaultPlan;
import org.forstrs.jni.NativeLog;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine's events in the task manager's log: the counting job on ForSt-RS with its working
 * directory on a file system whose reads time out now and then; the engine retries each timed-out
 * read, and the retry reaches slf4j (log4j here) as a WARN of {@code
 * org.forstrs.native.storage.retrying} whose message names the DB it happened for: job,
 * operator, subtask and attempt.
 */
class NativeLogITCase {

    private static final int PARALLELISM = 2;
    private static final long RECORDS = 50_000;
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
    void aStorageRetryIsLoggedWithTheDbItHappenedFor(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        try (CapturedLog log = CapturedLog.attach(NativeLog.LOGGER_PREFIX, Level.WARN)) {
            FaultPlan plan = FaultPlan.timedOutReads(Set.of(1L, 10L, 100L, 1_000L));
            FaultPlan.activate(plan);
            Configuration config = CountingJob.config(primary, checkpoints);
            config.setString(
                    "state.backend.forst.primary-dir",
                    FaultInjectingFileSystem.SCHEME + "://" + primary.toAbsolutePath());
            config.setString("state.backend.forst.writebuffer.size", "256kb");
            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.getExecutionEnvironment(config);
            env.setParallelism(PARALLELISM);
            String run = "native-log-" + UUID.randomUUID();
            CountingJob.build(env, run, RECORDS, KEYS, 4_000, 0, 1);

            JobClient client = env.executeAsync("counting with reads that time out");
            JobID job = client.getJobID();
            LogEvent retry =
                    log.await(
                            "of the job's retried read",
                            Await.DEADLINE,
                            event ->
                                    event.getLevel() == Level.WARN
                                            && event.getMessage()
                                                    .getFormattedMessage()
                                                    .contains("[job=" + job));
            client.getJobExecutionResult().get();

            String message = retry.getMessage().getFormattedMessage();
            System.out.printf("%s: %s%n", retry.getLoggerName(), message);
            assertThat(retry.getLoggerName()).isEqualTo("org.forstrs.native.storage.retrying");
            Pattern expected =
                    Pattern.compile(
                            Pattern.quote("[job=" + job + ", op=")
                                    + "[^,\\]]*_\\([12]/2\\), subtask=[01], attempt=0\\]"
                                    + " retrying GET \\(1/\\d+\\) in \\S+ after: .*"
                                    + "SocketTimeoutException: injected fault: read #\\d+ .*",
                            Pattern.DOTALL);
            assertThat(message).matches(expected);
            assertThat(plan.fired()).isPositive();
            CheckpointRecoveryITCase.assertExactFinalCounts(
                    CountingJob.results(run), RECORDS, KEYS);
        }
    }
}
