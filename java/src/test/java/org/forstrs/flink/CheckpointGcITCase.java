package org.forstrs.flink;

import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.forstrs.tools.ForStTool;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ForStTool gc} on a checkpoint directory after a job with {@code primary-dir:
 * checkpoint-dir} was cancelled with a retained checkpoint: besides what the cancellation left
 * (files of checkpoints in flight), files and directories no checkpoint references are planted
 * under the job's {@code shared} directory (an aborted checkpoint's hand-over, a dead attempt's
 * DB directory, another backend's upload). The tool leaves a job written to within its minimum
 * age alone, lists without deleting by default, and with {@code --delete} leaves exactly the
 * files the retained checkpoint references ({@code referenced} lists them); a job restored from
 * that checkpoint then ends with exact counts.
 */
class CheckpointGcITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(3)
                            .build());

    @AfterEach
    void cancelUnfinishedJobs(@InjectClusterClient ClusterClient<?> cluster) throws Exception {
        Await.cancelUnfinished(cluster);
    }

    @Test
    void deletesExactlyWhatNoRetainedCheckpointReferences(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        String run = "gc-" + UUID.randomUUID();
        Configuration config = CountingJob.config(primary, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        String root = checkpoints.toUri().toString();

        JobClient first = RescaleITCase.submit(config, null, 2, run, RescaleITCase.RECORDS / 4);
        RescaleITCase.awaitHeld(run, RescaleITCase.RECORDS / 4, first);
        String retainedUri = RescaleITCase.cancelAfterNextCheckpoint(first, root);
        Path retained = Paths.get(URI.create(retainedUri));
        Path jobDir = retained.getParent();
        Path shared = jobDir.resolve("shared");

        List<Path> planted =
                List.of(
                        plant(shared.resolve("op_planted/subtask_0_attempt_7/000042.sst")),
                        plant(shared.resolve("op_planted/subtask_0_attempt_7/MANIFEST-000003")),
                        plant(shared.resolve("0c5e9a3b-upload-of-another-backend")));
        Path emptyDbDir = Files.createDirectories(shared.resolve("op_planted/subtask_1_attempt_2"));

        // Just written: the job may be running, so nothing is looked at.
        assertThat(gc(root)).contains("skipped");
        assertThat(planted).allMatch(Files::exists);

        String listing = gc(root, "--min-age", "0 s");
        assertThat(planted).allMatch(Files::exists);
        for (Path file : planted) {
            assertThat(listing).contains(file.getFileName().toString());
        }
        assertThat(listing).contains("nothing deleted");

        // The JobManager may still be deleting subsumed checkpoints' files: a file it deletes
        // while the tool runs is gone either way, and a second run finds nothing left.
        gc(root, "--min-age", "0 s", "--delete");
        gc(root, "--min-age", "0 s", "--delete");
        Set<Path> referenced = CheckpointFiles.referencedSstFiles(retained);
        assertThat(referenced).isNotEmpty();
        Set<Path> listed =
                tool("referenced", retainedUri)
                        .lines()
                        .map(path -> Paths.get(path).toAbsolutePath().normalize())
                        .collect(Collectors.toSet());
        assertThat(listed).containsAll(referenced).allMatch(Files::exists);
        assertThat(CheckpointFiles.sharedFiles(jobDir)).isEqualTo(referenced);
        assertThat(CheckpointFiles.emptySharedDirectories(jobDir)).isEmpty();
        assertThat(emptyDbDir).doesNotExist();

        RescaleITCase.submit(config, retainedUri, 3, run, Long.MAX_VALUE)
                .getJobExecutionResult()
                .get();
        CheckpointRecoveryITCase.assertExactFinalCounts(
                CountingJob.results(run), RescaleITCase.RECORDS, RescaleITCase.KEYS);
    }

    /**
     * A running job is left alone however long ago it last wrote (its open databases renew their
     * leases), next to a finished job whose leftover goes; a database directory no lease names is
     * named and kept, one whose lease aged out (its task manager died) is collected. The running
     * job then checkpoints and restores from that checkpoint exactly.
     */
    @Test
    void leavesRunningJobsAloneHoweverLongAgoTheyWrote(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        String root = checkpoints.toUri().toString();

        String finishedRun = "gc-finished-" + UUID.randomUUID();
        JobClient finished =
                RescaleITCase.submit(config, null, 2, finishedRun, RescaleITCase.RECORDS / 4);
        RescaleITCase.awaitHeld(finishedRun, RescaleITCase.RECORDS / 4, finished);
        String finishedCheckpoint = RescaleITCase.cancelAfterNextCheckpoint(finished, root);
        Path leftover =
                plant(
                        Paths.get(URI.create(finishedCheckpoint))
                                .resolveSibling("shared")
                                .resolve("0c5e9a3b-upload-of-a-cancelled-checkpoint"));

        Path unleasedLock =
                plant(checkpoints.resolve(jobId(1) + "/shared/op_a/subtask_0_attempt_0/LOCK"));
        Path deadDb = checkpoints.resolve(jobId(2) + "/shared/op_a/subtask_0_attempt_0");
        Path deadLock = plant(deadDb.resolve("LOCK"));
        Path deadLease = plant(checkpoints.resolve(jobId(2) + "/shared/forst-rs-leases/x.lease"));
        Files.writeString(deadLease, deadDb.toUri() + "\n");
        // A day old, against a lease timeout of 12 h below: no verdict rests on how fast
        // this test runs or on when the running job's databases last renewed theirs.
        Files.setLastModifiedTime(
                deadLease, FileTime.fromMillis(System.currentTimeMillis() - 86_400_000));

        String runningRun = "gc-running-" + UUID.randomUUID();
        JobClient running =
                RescaleITCase.submit(config, null, 2, runningRun, RescaleITCase.RECORDS / 4);
        RescaleITCase.awaitHeld(runningRun, RescaleITCase.RECORDS / 4, running);
        List<Path> liveLocks;
        try (Stream<Path> files =
                Files.walk(checkpoints.resolve(running.getJobID() + "/shared"))) {
            liveLocks = files.filter(f -> f.endsWith("LOCK")).collect(Collectors.toList());
        }
        assertThat(liveLocks).as("the running job's open databases").hasSize(2);

        String output = gc(root, "--min-age", "0 s", "--lease-timeout", "12 h", "--delete");
        assertThat(output)
                .contains("job " + running.getJobID() + ": skipped, running: 2 open database")
                .contains("job " + jobId(1) + ": skipped, cannot tell whether the database at")
                .contains("job " + jobId(2) + ": retained no checkpoint");
        assertThat(liveLocks).allMatch(Files::exists);
        assertThat(leftover).doesNotExist();
        assertThat(unleasedLock).exists();
        assertThat(deadLock).doesNotExist();
        assertThat(deadLease).doesNotExist();

        PacedSequence.holdAt(runningRun, RescaleITCase.RECORDS / 2);
        RescaleITCase.awaitHeld(runningRun, RescaleITCase.RECORDS / 2, running);
        String checkpoint = RescaleITCase.cancelAfterNextCheckpoint(running, root);
        RescaleITCase.submit(config, checkpoint, 2, runningRun, Long.MAX_VALUE)
                .getJobExecutionResult()
                .get();
        CheckpointRecoveryITCase.assertExactFinalCounts(
                CountingJob.results(runningRun), RescaleITCase.RECORDS, RescaleITCase.KEYS);
    }

    private static String jobId(int n) {
        return String.format("%032x", n);
    }

    @Test
    void refusesWhatItDoesNotUnderstand() throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
        PrintStream out =
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertThat(ForStTool.run(new String[] {}, out, errStream)).isEqualTo(2);
        assertThat(ForStTool.run(new String[] {"collect"}, out, errStream)).isEqualTo(2);
        assertThat(ForStTool.run(new String[] {"gc"}, out, errStream)).isEqualTo(2);
        assertThat(ForStTool.run(new String[] {"gc", "/a", "--force"}, out, errStream))
                .isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains("unknown command: collect", "missing", "unexpected argument --force");
    }

    private static Path plant(Path file) throws IOException {
        Files.createDirectories(file.getParent());
        return Files.write(file, new byte[] {1, 2, 3});
    }

    /** Runs {@code gc} on the checkpoint directory; its output (it must succeed). */
    private static String gc(String root, String... options) throws Exception {
        String[] args = new String[options.length + 2];
        args[0] = "gc";
        args[1] = root;
        System.arraycopy(options, 0, args, 2, options.length);
        return tool(args);
    }

    /** Runs a command of the tool; its output (it must succeed). */
    private static String tool(String... args) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status =
                ForStTool.run(
                        args,
                        new PrintStream(out, true, StandardCharsets.UTF_8),
                        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        assertThat(status).as(String.join(" ", args)).isZero();
        return out.toString(StandardCharsets.UTF_8);
    }
}
