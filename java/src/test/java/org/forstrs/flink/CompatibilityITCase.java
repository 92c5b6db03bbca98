package org.forstrs.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.FileUtils;

import org.forstrs.tools.ReferencedFiles;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What earlier versions wrote, this version reads: each directory under {@code
 * src/test/resources/compat/} is a native savepoint of {@link ToolStateJob} (State V1 and V2 of
 * every kind, TTL, event-time timers, SQL aggregate and join state) taken at half its input by
 * the version that names the directory, with {@code fixture.properties} saying what wrote it,
 * and (from 0.1.0 on) a retained checkpoint of the same state ({@code retained-checkpoint/}). For
 * each: the tools read it in place with exactly the state the job wrote, and the job restored
 * from it at another parallelism runs to the end of its input with exactly the state it would
 * have had without the stop. A new version adds its own fixture ({@link #writeFixture}, run by
 * {@code scripts/write-compat-fixture.sh}); a fixture is never rewritten.
 */
class CompatibilityITCase {

    /** The input of the job that wrote every fixture; each was taken at half of it. */
    private static final long RECORDS = 2_000;

    private static final Path FIXTURES = Paths.get("src", "test", "resources", "compat");

    /** Next to {@code fixture.properties}: where a fixture's retained checkpoint was written. */
    private static final String RETAINED_PROPERTIES = "retained-checkpoint.properties";

    @Test
    void everyFixtureReadsAndRestoresExactly(@TempDir Path dir) throws Exception {
        List<Path> fixtures;
        try (Stream<Path> versions = Files.list(FIXTURES)) {
            fixtures = versions.filter(Files::isDirectory).sorted().collect(Collectors.toList());
        }
        assertThat(fixtures).as("fixtures under " + FIXTURES.toAbsolutePath()).isNotEmpty();
        for (Path fixture : fixtures) {
            Properties written = new Properties();
            try (InputStream in = Files.newInputStream(fixture.resolve("fixture.properties"))) {
                written.load(in);
            }
            assertThat(Long.parseLong(written.getProperty("records"))).isEqualTo(RECORDS);
            long takenAt = Long.parseLong(written.getProperty("taken-at"));
            // A copy, as a user would move a savepoint: the fixture itself is never written to.
            Path savepoint = dir.resolve(fixture.getFileName().toString());
            copy(fixture.resolve("native-savepoint"), savepoint);

            ForStToolITCase.checkInspectAndDump(
                    new Configuration(),
                    savepoint.toUri().toString(),
                    takenAt,
                    ForStToolITCase.DATABASES);
            restoreAndFinish(dir, savepoint.toUri().toString(), takenAt);
            if (Files.exists(fixture.resolve(RETAINED_PROPERTIES))) {
                readRetainedCheckpoint(fixture, dir, takenAt);
            }
        }
    }

    /**
     * A retained checkpoint names its files where they were written (as Flink's own do), so the
     * fixture is put back at the absolute directory it was written in, read there with the tools,
     * restored, and removed again; runs on one machine take turns through a lock file.
     */
    private static void readRetainedCheckpoint(Path fixture, Path dir, long takenAt)
            throws Exception {
        Properties written = new Properties();
        try (InputStream in = Files.newInputStream(fixture.resolve(RETAINED_PROPERTIES))) {
            written.load(in);
        }
        Path root = Paths.get(written.getProperty("root"));
        Path lockFile = root.resolveSibling(root.getFileName() + ".lock");
        Files.createDirectories(root.getParent());
        try (FileChannel lock =
                FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            lock.lock(); // released with the channel
            FileUtils.deleteDirectory(root.toFile());
            copy(fixture.resolve("retained-checkpoint"), root);
            try {
                String checkpoint =
                        root.resolve(written.getProperty("checkpoint")).toUri().toString();
                ForStToolITCase.checkInspectAndDump(
                        new Configuration(), checkpoint, takenAt, ForStToolITCase.DATABASES);
                restoreAndFinish(dir, checkpoint, takenAt);
            } finally {
                FileUtils.deleteDirectory(root.toFile());
            }
        }
    }

    /**
     * Writes this version's fixture into the directory the system property {@code
     * forst.compat.fixture} names (e.g. {@code src/test/resources/compat/0.2.0}).
     */
    @Test
    @EnabledIfSystemProperty(named = "forst.compat.fixture", matches = ".+")
    void writeFixture(@TempDir Path dir) throws Exception {
        Path into = Paths.get(System.getProperty("forst.compat.fixture"));
        assertThat(into).as("a fixture is never rewritten").doesNotExist();
        String run = "fixture-" + UUID.randomUUID();
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(config(dir));
        env.setParallelism(2);
        ToolStateJob.build(env, run, RECORDS);
        PacedSequence.holdAt(run, RECORDS / 2);
        JobClient job = env.executeAsync("compatibility fixture");
        Await.until("half the input", () -> PacedSequence.generated(run) >= RECORDS / 2, job);
        // triggered after those records: the savepoint holds exactly them
        String savepoint =
                job.triggerSavepoint(
                                dir.resolve("savepoints").toUri().toString(),
                                SavepointFormatType.NATIVE)
                        .get();
        job.cancel().get();
        job.getJobExecutionResult().handle((result, failure) -> null).get();
        copy(Paths.get(URI.create(savepoint)), into.resolve("native-savepoint"));
        Files.writeString(
                into.resolve("fixture.properties"),
                "# written by CompatibilityITCase#writeFixture\n"
                        + "forst-rs="
                        + System.getProperty("forst.version", "unknown")
                        + "\nflink=2.3.0\njob=ToolStateJob\nparallelism=2\nrecords="
                        + RECORDS
                        + "\ntaken-at="
                        + RECORDS / 2
                        + "\n");
    }

    /**
     * Adds a retained checkpoint of {@link ToolStateJob} at half its input to this version's
     * fixture ({@code forst.compat.fixture}), written in {@code /tmp/forst-rs-compat-<version>},
     * where the reader puts it back.
     */
    @Test
    @EnabledIfSystemProperty(named = "forst.compat.fixture", matches = ".+")
    void writeRetainedCheckpointFixture() throws Exception {
        Path into = Paths.get(System.getProperty("forst.compat.fixture"));
        assertThat(into.resolve(RETAINED_PROPERTIES)).as("a fixture is never rewritten").doesNotExist();
        Path root =
                Paths.get("/tmp", "forst-rs-compat-" + System.getProperty("forst.version", "dev"));
        FileUtils.deleteDirectory(root.toFile());
        String run = "fixture-checkpoint-" + UUID.randomUUID();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config(root));
        env.setParallelism(2);
        ToolStateJob.build(env, run, RECORDS);
        PacedSequence.holdAt(run, RECORDS / 2);
        JobClient job = env.executeAsync("compatibility fixture, retained checkpoint");
        String jobDir = root.resolve("checkpoints").toUri() + "/" + job.getJobID();
        Await.until("half the input", () -> PacedSequence.generated(run) >= RECORDS / 2, job);
        // completed after those records: the checkpoint holds exactly them
        String checkpoint = CheckpointFiles.checkpointAfterNow(job, jobDir);
        job.cancel().get();
        job.getJobExecutionResult().handle((result, failure) -> null).get();
        Path checkpointDir = Paths.get(URI.create(checkpoint));
        Path target = into.resolve("retained-checkpoint");
        copy(checkpointDir, target.resolve(root.relativize(checkpointDir).toString()));
        // what the checkpoint references outside its own directory: the shared files
        for (String referenced :
                ReferencedFiles.of(new org.apache.flink.core.fs.Path(checkpoint))) {
            Path file = Paths.get(referenced);
            assertThat(file).as("referenced from the checkpoint").startsWith(root);
            Path copied = target.resolve(root.relativize(file).toString());
            if (!Files.exists(copied)) {
                Files.createDirectories(copied.getParent());
                Files.copy(file, copied);
            }
        }
        Files.writeString(
                into.resolve(RETAINED_PROPERTIES),
                "# written by CompatibilityITCase#writeRetainedCheckpointFixture: a retained"
                        + " checkpoint of ToolStateJob at taken-at of fixture.properties,\n"
                        + "# read where it was written (root)\nroot="
                        + root
                        + "\ncheckpoint="
                        + root.relativize(checkpointDir)
                        + "\n");
        FileUtils.deleteDirectory(root.toFile());
    }

    /**
     * Restores {@link ToolStateJob} from {@code savepoint} at parallelism 3, runs it to the end of
     * its input and checks a checkpoint taken then.
     */
    private static void restoreAndFinish(Path dir, String savepoint, long takenAt)
            throws Exception {
        String run = "restored-" + UUID.randomUUID();
        Configuration config = config(dir.resolve(run));
        config.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(3);
        ToolStateJob.build(env, run, RECORDS);
        // The restored source goes on from its position: RECORDS - takenAt numbers are left.
        PacedSequence.holdAt(run, RECORDS - takenAt);
        JobClient job = env.executeAsync("restored from a compatibility fixture");
        String jobDir = dir.resolve(run).resolve("checkpoints").toUri() + "/" + job.getJobID();
        Await.until(
                "the rest of the input",
                () -> PacedSequence.generated(run) >= RECORDS - takenAt,
                job);
        String checkpoint = CheckpointFiles.checkpointAfterNow(job, jobDir);
        job.cancel().get();
        job.getJobExecutionResult().handle((result, failure) -> null).get();
        // 4 operators with keyed state at parallelism 3
        ForStToolITCase.checkInspectAndDump(new Configuration(), checkpoint, RECORDS, 12);
    }

    private static Configuration config(Path dir) {
        Configuration config =
                CountingJob.config(dir.resolve("primary"), dir.resolve("checkpoints"));
        config.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 20);
        return config;
    }

    /** Copies the tree {@code from} to {@code to}, which must not exist yet. */
    private static void copy(Path from, Path to) throws IOException {
        assertThat(to).doesNotExist();
        FileUtils.copy(
                new org.apache.flink.core.fs.Path(from.toUri()),
                new org.apache.flink.core.fs.Path(to.toUri()),
                false);
    }
}
