package org.forstrs.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.forstrs.flink.snapshot.CheckpointStatsLog;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The working directory on an S3-compatible server (moto on 127.0.0.1, plain http) configured the
 * Flink way, with nothing but Flink's {@code s3.*} keys in the cluster configuration (no {@code
 * AWS_*} environment, no Flink S3 plugin): the async and the synchronous keyed backend keep their
 * databases in the bucket through injected failures and restores, the results are exact, and once
 * the job finished no object of it is left in the bucket.
 */
class S3PrimaryDirITCase {

    @RegisterExtension static final S3TestServer S3 = new S3TestServer();

    /** What the AWS environment could otherwise supply: endpoint, credentials, http, style. */
    private static final List<String> AWS_SETTINGS =
            List.of(
                    "AWS_ENDPOINT",
                    "AWS_ENDPOINT_URL",
                    "AWS_ACCESS_KEY_ID",
                    "AWS_SECRET_ACCESS_KEY",
                    "AWS_SESSION_TOKEN",
                    "AWS_ALLOW_HTTP",
                    "AWS_VIRTUAL_HOSTED_STYLE_REQUEST");

    @Test
    void jobOnS3IsExactAfterFailuresAndLeavesNothingInTheBucket(
            @TempDir Path local, @TempDir Path checkpoints) throws Exception {
        assertThat(System.getenv().keySet())
                .as("the S3 settings must come from Flink's keys alone: unset these")
                .doesNotContainAnyElementsOf(AWS_SETTINGS);
        String run = "s3-" + UUID.randomUUID();
        Configuration config = CountingJob.config(local, checkpoints);
        config.setString("state.backend.forst.primary-dir", "s3://" + S3.bucket() + "/" + run);
        // The synchronous operator's database goes to the bucket too.
        config.setString("state.backend.forst.sync.enforce-local", "false");
        config.setString("s3.endpoint", S3.endpoint());
        config.setString("s3.access-key", "flink-access-key");
        config.setString("s3.secret-key", "flink-secret-key");
        config.setString("s3.path.style.access", "true");
        CheckpointStatsLog.clear();
        // A MiniCluster of its own, so that the s3.* keys are the cluster's configuration.
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(config);
        MixedAsyncSyncITCase.build(env, run);

        env.execute("async and sync keyed state on S3, with failures");

        MixedAsyncSyncITCase.assertExactAfterFailures(run);
        assertThat(CheckpointStatsLog.recent())
                .as("checkpoints copied SSTs from the bucket to the local checkpoint directory")
                .anyMatch(s -> s.bytesThroughProcess() > 0);
        assertThat(S3.keys(run + "/")).as("objects left under the job's working prefix").isEmpty();
    }
}
