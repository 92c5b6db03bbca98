package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;

import org.forstrs.flink.config.ForStOptions.HandOverScope;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.forstrs.flink.config.ForStOptions.HandOverScope.FILE_SYSTEM;
import static org.forstrs.flink.config.ForStOptions.HandOverScope.SHARED_DIRECTORY;

class FileHandOverTest {

    private static final Path SHARED = new Path("file:/data/checkpoints/job-1/shared");
    private static final Path HDFS_SHARED = new Path("hdfs://nn:8020/checkpoints/job-1/shared");

    @Test
    void byDefaultOnlyADbUnderTheSharedDirectoryHandsOver() {
        assertThat(
                        FileHandOver.applies(
                                "file:///data/checkpoints/job-1/shared/op_x/subtask_0_attempt_0",
                                SHARED,
                                SHARED_DIRECTORY))
                .isTrue();
        assertThat(
                        FileHandOver.applies(
                                "file:///data/checkpoints/job-1/taskowned/op_x/subtask_0_attempt_0",
                                SHARED,
                                SHARED_DIRECTORY))
                .isFalse();
        assertThat(
                        FileHandOver.applies(
                                "hdfs://nn:8020/forst/job-1/op_x/subtask_0",
                                HDFS_SHARED,
                                SHARED_DIRECTORY))
                .as("a primary directory on the checkpoint's DFS but outside its shared directory")
                .isFalse();
        assertThat(
                        FileHandOver.applies(
                                "file:///data/checkpoints/job-1/shared-not/db",
                                SHARED,
                                SHARED_DIRECTORY))
                .isFalse();
    }

    @Test
    void fileSystemScopeHandsOverAnywhereOnADfsAndUnderTheJobDirectoryLocally() {
        assertThat(
                        FileHandOver.applies(
                                "file:///data/checkpoints/job-1/taskowned/job-1/op_x/subtask_0_attempt_0",
                                SHARED,
                                FILE_SYSTEM))
                .isTrue();
        assertThat(
                        FileHandOver.applies(
                                "file:///tmp/forst-rs/job-1/op_x/subtask_0", SHARED, FILE_SYSTEM))
                .isFalse();
        assertThat(
                        FileHandOver.applies(
                                "hdfs://nn:8020/forst/job-1/op_x/subtask_0",
                                HDFS_SHARED,
                                FILE_SYSTEM))
                .isTrue();
    }

    @Test
    void otherFileSystemsCopy() {
        for (HandOverScope scope : HandOverScope.values()) {
            assertThat(FileHandOver.applies("hdfs://other:8020/forst/db", HDFS_SHARED, scope))
                    .isFalse();
            assertThat(FileHandOver.applies("s3://bucket/forst/db", HDFS_SHARED, scope)).isFalse();
            assertThat(FileHandOver.applies("s3://bucket/forst/db", SHARED, scope)).isFalse();
        }
    }

    @Test
    void s3AndS3aAreOneFileSystem() {
        Path s3Shared = new Path("s3://bucket/checkpoints/job-1/shared");
        assertThat(
                        FileHandOver.applies(
                                "s3a://bucket/checkpoints/job-1/shared/op_x/subtask_0_attempt_0",
                                s3Shared,
                                SHARED_DIRECTORY))
                .isTrue();
        assertThat(
                        FileHandOver.applies(
                                "s3a://other/checkpoints/job-1/shared/op_x/subtask_0_attempt_0",
                                s3Shared,
                                SHARED_DIRECTORY))
                .isFalse();
    }
}
