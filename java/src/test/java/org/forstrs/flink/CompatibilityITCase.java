package org.forstrs.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
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
 * the version that names the directory, with {@code fixture.properties} saying what wrote it.
 * For each: the tools read it in place with exactly the state the job wrote, and the job restored
 * from it at another parallelism runs to the end of its input with exactly the state it would
 * have had without the stop. A new version adds its own fixture ({@link #writeFixture}, run by
 * {@code scripts/write-compat-fixture.sh}); a fixture is never rewritten.
 */
class CompatibilityITCase {

    /** The input of the job that wrote every fixture; each was taken at half of it. */
    private static final long RECORDS = 2_000;

    private static final Path FIXTURES = Paths.get("src", "test", "resources", "compat");

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

    private static void copy(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path file : files.collect(Collectors.toList())) {
                Path target = to.resolve(from.relativize(file).toString());
                if (Files.isDirectory(file)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(file, target);
                }
            }
        }
    }
}
