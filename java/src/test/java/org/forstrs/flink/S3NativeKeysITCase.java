package org.forstrs.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.forstrs.flink.snapshot.CheckpointStatsLog;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The working directory and the checkpoints on an S3-compatible server (moto on 127.0.0.1, plain
 * http), configured with nothing but the keys of Flink 2.3's native S3 file system (FLIP-555:
 * {@code s3.endpoint}, {@code s3.path-style-access}, {@code s3.access-key}, ...), which serves
 * Flink's side of s3:// as a plugin: the async and the synchronous keyed backend keep their
 * databases in the bucket, checkpoints take their files where they are, and after injected
 * failures and restores the results are exact.
 */
class S3NativeKeysITCase {

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
    void jobWithWorkingDirAndCheckpointsOnS3ConfiguredByFlip555KeysIsExact() throws Exception {
        assertThat(System.getenv().keySet())
                .as("the S3 settings must come from Flink's keys alone: unset these")
                .doesNotContainAnyElementsOf(AWS_SETTINGS);
        String run = "s3-native-keys-" + UUID.randomUUID();
        String root = "s3://" + S3.bucket() + "/" + run;
        Configuration config = CountingJob.config(root + "/working", root + "/checkpoints");
        config.setString("state.backend.forst.sync.enforce-local", "false");
        // FLIP-555's keys, and only those.
        S3.setFlinkKeys(config);
        config.setString("s3.upload.min.part.size", "5242880");
        config.setString("s3.retry.max-num-retries", "3");
        config.setString("s3.connection.timeout", "10 s");
        CheckpointStatsLog.clear();
        FileSystem.initialize(config, S3TestServer.flinkPlugins(config));
        try {
            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.createLocalEnvironment(config);
            MixedAsyncSyncITCase.build(env, run);

            env.execute("async and sync keyed state, working dir and checkpoints on S3");
        } finally {
            FileSystem.initialize(new Configuration(), null);
        }

        MixedAsyncSyncITCase.assertExactAfterFailures(run);
        // The working directory is outside the checkpoint's shared directory: SSTs are copied
        // into it inside the bucket (server-side), no byte through the process.
        assertThat(CheckpointStatsLog.recent())
                .as("checkpoints copied the SSTs server-side, in the bucket")
                .anyMatch(s -> s.filesCopied() > 0)
                .allMatch(s -> s.bytesThroughProcess() == 0);
    }

    /** Flink's plugin directory with flink-s3-fs-native, as Maven lays it out for the ITs. */
}
