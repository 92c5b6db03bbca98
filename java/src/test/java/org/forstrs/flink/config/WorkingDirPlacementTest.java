package org.forstrs.flink.config;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageAccess;

import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Working directories must stay out of the checkpoint directories Flink deletes whole. */
class WorkingDirPlacementTest {

    private static final JobID JOB = new JobID();

    private static FsCheckpointStorageAccess storage() throws IOException {
        return new FsCheckpointStorageAccess(new Path("file:/cp"), null, JOB, 1024, 4096);
    }

    @Test
    void insideACheckpointIsRefused() throws IOException {
        for (String inside : new String[] {"chk-3", "chk-3/shared"}) {
            assertThatThrownBy(
                            () ->
                                    WorkingDirPlacement.check(
                                            "file:///cp/" + JOB + "/" + inside + "/db", storage()))
                    .isInstanceOf(IllegalConfigurationException.class)
                    .hasMessageContaining("state.backend.forst.primary-dir")
                    .hasMessageContaining("chk-3");
        }
    }

    @Test
    void elsewhereIsAccepted() throws IOException {
        assertThatCode(() -> WorkingDirPlacement.check("file:///tmp/forst/db", storage()))
                .doesNotThrowAnyException();
        assertThatCode(
                        () ->
                                WorkingDirPlacement.check(
                                        "file:///cp/" + JOB + "/taskowned/db", storage()))
                .doesNotThrowAnyException();
        assertThatCode(
                        () ->
                                WorkingDirPlacement.check(
                                        "file:///cp/" + JOB + "/shared/op_x/subtask_0_attempt_0",
                                        storage()))
                .doesNotThrowAnyException();
        assertThatCode(() -> WorkingDirPlacement.check("/cp/" + JOB + "/op_x/db", storage()))
                .doesNotThrowAnyException();
        assertThatCode(() -> WorkingDirPlacement.check("s3://b/cp/" + JOB + "/shared", storage()))
                .doesNotThrowAnyException();
    }
}
