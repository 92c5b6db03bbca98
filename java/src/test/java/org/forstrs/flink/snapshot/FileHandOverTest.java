package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class FileHandOverTest {

    private static final Path SHARED = new Path("file:/data/checkpoints/job-1/shared");

    @Test
    void dbUnderTheJobCheckpointDirectoryHandsOver() {
        assertThat(
                        FileHandOver.applies(
                                "file:///data/checkpoints/job-1/taskowned/job-1/op_x/subtask_0_attempt_0",
                                SHARED))
                .isTrue();
    }

    @Test
    void localDbElsewhereIsCopied() {
        assertThat(FileHandOver.applies("file:///tmp/forst-rs/job-1/op_x/subtask_0", SHARED))
                .isFalse();
        assertThat(FileHandOver.applies("file:///data/checkpoints/job-2/taskowned/db", SHARED))
                .isFalse();
    }

    @Test
    void sameDistributedFileSystemHandsOverOthersCopy() {
        Path hdfsShared = new Path("hdfs://nn:8020/checkpoints/job-1/shared");
        assertThat(FileHandOver.applies("hdfs://nn:8020/forst/job-1/op_x/subtask_0", hdfsShared))
                .isTrue();
        assertThat(FileHandOver.applies("hdfs://other:8020/forst/db", hdfsShared)).isFalse();
        assertThat(FileHandOver.applies("s3://bucket/forst/db", hdfsShared)).isFalse();
        assertThat(FileHandOver.applies("s3://bucket/forst/db", SHARED)).isFalse();
    }
}
