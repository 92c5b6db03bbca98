package org.forstrs.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.RecoveryClaimMode;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.Path;
import org.apache.flink.util.ExceptionUtils;

import org.apache.logging.log4j.Level;
import org.forstrs.flink.snapshot.ForStSnapshotStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Restores in NO_CLAIM mode (Flink's default) on an S3-compatible server (moto on 127.0.0.1):
 * Flink promises that once the first checkpoint after the restore completed, the job no longer
 * needs the snapshot it started from. The restored DBs reference the snapshot's files where they
 * are; that checkpoint copies them, and the DBs read the copies from then on. So the snapshot (a
 * native savepoint, or a retained checkpoint with its job's whole directory) is deleted, the
 * job reads every key and runs to its end without a failover (restarts are off), and its counts
 * are exact. Deleting the snapshot's files before any checkpoint completed stays the user's
 * error: the job fails naming a missing file. On S3 no open file handle hides a deleted file.
 */
class NoClaimRestoreITCase {

    @RegisterExtension static final S3TestServer S3 = new S3TestServer();

    private static final String RELOCATED = "restored files from the checkpoint's copies";

    private String root;
    private Configuration config;

    @BeforeEach
    void onS3() throws Exception {
        root = "s3://" + S3.bucket() + "/no-claim-" + UUID.randomUUID();
        config = CountingJob.config(root + "/working", root + "/checkpoints");
        S3.initializeFlinkFileSystems(config);
    }

    @AfterEach
    void resetFileSystems() {
        S3TestServer.resetFlinkFileSystems();
    }

    @Test
    void savepointMayBeDeletedOnceTheFirstCheckpointCompleted() throws Exception {
        String run = "savepoint-" + UUID.randomUUID();
        String savepoint = savepointAtHalf(run);
        continueWithout(run, savepoint, savepoint);
    }

    @Test
    void retainedCheckpointMayBeDeletedOnceTheFirstCheckpointCompleted() throws Exception {
        String run = "retained-" + UUID.randomUUID();
        JobClient first = RescaleITCase.submit(config, null, 2, run, RescaleITCase.RECORDS / 2);
        RescaleITCase.awaitHeld(run, RescaleITCase.RECORDS / 2, first);
        String jobDir = root + "/checkpoints/" + first.getJobID();
        CheckpointFiles.checkpointAfterNow(first, jobDir);
        first.cancel().get();
        // The job's own MiniCluster shuts down once the job ended: wait on its result.
        first.getJobExecutionResult().handle((result, failure) -> null).get();
        String checkpoint = CheckpointFiles.latestCompleted(jobDir).orElseThrow();
        // The checkpoint's SSTs lie in its job's shared directory: the whole job directory goes.
        continueWithout(run, checkpoint, jobDir);
    }

    @Test
    void deletingTheSnapshotBeforeAnyCheckpointFailsTheJobNamingAMissingFile() throws Exception {
        String run = "too-early-" + UUID.randomUUID();
        String savepoint = savepointAtHalf(run);
        List<Path> ssts = ssts(new Path(savepoint));
        assertThat(ssts).as("SSTs of the savepoint").isNotEmpty();
        Configuration restored = noClaimWithoutRestarts();
        // No checkpoint before the job reads its state: Flink draws the first checkpoint's delay
        // between the minimum pause and the interval, so both are an hour. (A checkpoint would
        // fail too, copying the deleted files, but the job's failure would then only say that a
        // checkpoint failed.)
        restored.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofHours(1));
        restored.set(CheckpointingOptions.MIN_PAUSE_BETWEEN_CHECKPOINTS, Duration.ofHours(1));
        // The input waits until the files are gone, so every key the job reads is read after.
        JobClient second =
                RescaleITCase.submit(restored, savepoint, 2, run, RescaleITCase.RECORDS / 2);
        for (Path sst : ssts) {
            sst.getFileSystem().delete(sst, false);
        }
        PacedSequence.release(run);
        assertThatThrownBy(() -> second.getJobExecutionResult().get())
                .isInstanceOf(ExecutionException.class)
                .satisfies(
                        failure ->
                                assertThat(ExceptionUtils.stringifyException(failure))
                                        .as("the failure names a deleted file")
                                        .containsAnyOf(
                                                ssts.stream()
                                                        .map(p -> p.getName())
                                                        .toArray(String[]::new)));
    }

    /** Runs the counting job to half its input and stops it with a native savepoint. */
    private String savepointAtHalf(String run) throws Exception {
        JobClient first = RescaleITCase.submit(config, null, 2, run, RescaleITCase.RECORDS / 2);
        RescaleITCase.awaitHeld(run, RescaleITCase.RECORDS / 2, first);
        String savepoint =
                first.stopWithSavepoint(false, root + "/savepoints", SavepointFormatType.NATIVE)
                        .get();
        first.getJobExecutionResult().get();
        return savepoint;
    }

    /**
     * Restores the run from {@code snapshot} in NO_CLAIM mode, holding its input until both
     * subtasks' DBs read their restored files from the first checkpoint's copies, deletes {@code
     * deletable} recursively, and runs the job to its end: no failover, exact counts.
     */
    private void continueWithout(String run, String snapshot, String deletable) throws Exception {
        assertThat(ssts(new Path(deletable))).as("SSTs of the snapshot").isNotEmpty();
        try (CapturedLog log =
                CapturedLog.attach(ForStSnapshotStrategy.class.getName(), Level.INFO)) {
            JobClient second =
                    RescaleITCase.submit(
                            noClaimWithoutRestarts(), snapshot, 2, run, RescaleITCase.RECORDS / 2);
            for (int subtask = 0; subtask < 2; subtask++) {
                log.await(
                        "of a DB reading the first checkpoint's copies",
                        Await.DEADLINE,
                        e -> e.getMessage().getFormattedMessage().contains(RELOCATED));
            }
            Path gone = new Path(deletable);
            assertThat(gone.getFileSystem().delete(gone, true)).isTrue();
            assertThat(gone.getFileSystem().exists(gone)).isFalse();
            PacedSequence.release(run);
            second.getJobExecutionResult().get();
        }
        CheckpointRecoveryITCase.assertExactFinalCounts(
                CountingJob.results(run), RescaleITCase.RECORDS, RescaleITCase.KEYS);
    }

    /** NO_CLAIM, and any failure fails the job: a failover would hide a missing file. */
    private Configuration noClaimWithoutRestarts() {
        Configuration restored = new Configuration(config);
        restored.set(StateRecoveryOptions.RESTORE_MODE, RecoveryClaimMode.NO_CLAIM);
        restored.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        return restored;
    }

    /** The SSTs under {@code dir}, at any depth. */
    private static List<Path> ssts(Path dir) throws Exception {
        List<Path> found = new ArrayList<>();
        FileStatus[] entries = dir.getFileSystem().listStatus(dir);
        for (FileStatus entry : entries == null ? new FileStatus[0] : entries) {
            if (entry.isDir()) {
                found.addAll(ssts(entry.getPath()));
            } else if (entry.getPath().getName().endsWith(".sst")) {
                found.add(entry.getPath());
            }
        }
        return found;
    }
}
