package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.HeartbeatManagerOptions;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.configuration.WebOptions;
import org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.taskexecutor.TaskManagerRunner;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.forstrs.flink.FailAfterCheckpoint.InjectedFailure;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Abrupt deaths of a task manager process: a standalone session cluster in child JVMs (one
 * JobManager, one TaskManager with two slots, all on 127.0.0.1), the counting job on ForSt-RS with
 * 15 failures injected by the job itself and then 5 SIGKILLs of the TaskManager JVM, each replaced
 * by a fresh one. Every kill comes after the job restored and completed a new checkpoint, so every
 * recovery restores keyed state written by a process that died without closing anything. The
 * final counts (written to files by the sink, since the tasks run in other JVMs) must be exact;
 * with {@code primary-dir: checkpoint-dir}, the checkpoint's shared directory must also be empty
 * once the job finished.
 */
class TaskManagerKillITCase {

    private static final int PARALLELISM = 2;
    private static final int KEYS = 500;
    private static final int INJECTED_FAILURES = 15;
    private static final int KILLS = 5;
    /** 200 checkpoints' worth of input per subtask: it outlasts every failure many times over. */
    private static final long RECORDS = 400_000;

    private static final int RECORDS_PER_CHECKPOINT = 2_000;

    private static final ObjectMapper JSON = new ObjectMapper();

    private static final String LOG_CONFIG = "log4j2-children.properties";

    /**
     * @param primaryOnCheckpointDir the DBs work under the checkpoint's shared directory and
     *     checkpoints take their files in place: then, once the job FINISHED, nothing may be left
     *     there, although killed task managers left DBs whose files checkpoints that were aborted
     *     at the failovers had handed over (the next attempts collected them)
     */
    @ParameterizedTest(name = "primary-dir: checkpoint-dir = {0}")
    @ValueSource(booleans = {false, true})
    void countsAreExactAfterTaskManagerKills(boolean primaryOnCheckpointDir, @TempDir Path dir)
            throws Exception {
        int restPort = freePort();
        Path confDir = Files.createDirectories(dir.resolve("conf"));
        Configuration config = clusterConfig(dir, restPort);
        if (primaryOnCheckpointDir) {
            config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        }
        writeFlinkConfig(confDir, config);
        Path results = Files.createDirectories(dir.resolve("results"));

        List<Process> processes = new ArrayList<>();
        try {
            processes.add(start(StandaloneSessionClusterEntrypoint.class, confDir, dir, "jm"));
            Process taskManager = start(TaskManagerRunner.class, confDir, dir, "tm-0");
            processes.add(taskManager);

            Configuration clientConfig = new Configuration();
            clientConfig.set(RestOptions.ADDRESS, "127.0.0.1");
            clientConfig.set(RestOptions.PORT, restPort);
            try (RestClusterClient<StandaloneClusterId> client =
                    new RestClusterClient<>(clientConfig, StandaloneClusterId.getInstance())) {
                JobGraph job = jobGraph(config, results);
                JobID id = client.submitJob(job).get();
                Rest rest = new Rest(restPort, id);

                // The job's own failures first, so that the kills come on top of them.
                while (rest.failures().size() < INJECTED_FAILURES) {
                    assertAlive(taskManager, dir, "tm-0");
                    Thread.sleep(50);
                }
                for (int kill = 1; kill <= KILLS; kill++) {
                    // The job recorded its last failure before this count, so the next completed
                    // checkpoint comes from the job restarted after it: the kill hits a live job.
                    int failuresBefore = rest.failures().size();
                    long completed = rest.completedCheckpoints();
                    while (rest.completedCheckpoints() <= completed) {
                        assertAlive(taskManager, dir, "tm-" + (kill - 1));
                        Thread.sleep(20);
                    }
                    taskManager.destroyForcibly().waitFor(); // SIGKILL
                    taskManager = start(TaskManagerRunner.class, confDir, dir, "tm-" + kill);
                    processes.add(taskManager);
                    // the JobManager noticed the loss (a failure of the job) before the next kill
                    while (rest.failures().size() <= failuresBefore) {
                        Thread.sleep(20);
                    }
                }

                JobResult result = client.requestJobResult(id).get();
                assertThat(result.isSuccess())
                        .as("job result %s", result.getSerializedThrowable())
                        .isTrue();
                List<String> failures = rest.failures();
                System.out.printf(
                        "%d failures, %d completed checkpoints%n",
                        failures.size(), rest.completedCheckpoints());
                assertThat(failures)
                        .filteredOn(f -> f.contains(InjectedFailure.class.getSimpleName()))
                        .hasSize(INJECTED_FAILURES);
                // each kill was one more failure (a task manager lost)
                assertThat(failures).hasSizeGreaterThanOrEqualTo(INJECTED_FAILURES + KILLS);
                if (primaryOnCheckpointDir) {
                    Path jobDir = dir.resolve("checkpoints").resolve(id.toString());
                    // The JobManager discards the last checkpoints asynchronously after FINISHED.
                    Await.until(
                            "an empty shared directory",
                            () -> CheckpointFiles.sharedFiles(jobDir).isEmpty());
                }
            }
            CheckpointRecoveryITCase.assertExactFinalCounts(readResults(results), RECORDS, KEYS);
        } finally {
            for (Process p : processes) {
                p.destroyForcibly().waitFor();
            }
        }
    }

    /** A process the test did not kill must still run; if not, its log says why. */
    private static void assertAlive(Process process, Path dir, String name) throws IOException {
        if (!process.isAlive()) {
            String log = Files.readString(dir.resolve(name + ".log"), StandardCharsets.UTF_8);
            assertThat(process.isAlive()).as("%s ended; its log:%n%s", name, log).isTrue();
        }
    }

    private static Configuration clusterConfig(Path dir, int restPort) throws IOException {
        Configuration config = new Configuration();
        config.set(JobManagerOptions.ADDRESS, "127.0.0.1");
        config.set(JobManagerOptions.PORT, freePort());
        config.set(JobManagerOptions.BIND_HOST, "127.0.0.1");
        config.set(JobManagerOptions.TOTAL_PROCESS_MEMORY, MemorySize.ofMebiBytes(768));
        config.set(RestOptions.ADDRESS, "127.0.0.1");
        config.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        config.set(RestOptions.PORT, restPort);
        config.set(TaskManagerOptions.HOST, "127.0.0.1");
        config.set(TaskManagerOptions.BIND_HOST, "127.0.0.1");
        config.set(TaskManagerOptions.NUM_TASK_SLOTS, PARALLELISM);
        // What Flink's start scripts derive for a TaskManager and pass to it.
        config.set(TaskManagerOptions.CPU_CORES, (double) PARALLELISM);
        config.set(TaskManagerOptions.FRAMEWORK_HEAP_MEMORY, MemorySize.ofMebiBytes(128));
        config.set(TaskManagerOptions.FRAMEWORK_OFF_HEAP_MEMORY, MemorySize.ofMebiBytes(128));
        config.set(TaskManagerOptions.TASK_HEAP_MEMORY, MemorySize.ofMebiBytes(256));
        config.set(TaskManagerOptions.TASK_OFF_HEAP_MEMORY, MemorySize.ofMebiBytes(64));
        config.set(TaskManagerOptions.NETWORK_MEMORY_MIN, MemorySize.ofMebiBytes(64));
        config.set(TaskManagerOptions.NETWORK_MEMORY_MAX, MemorySize.ofMebiBytes(64));
        config.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.ofMebiBytes(128));
        config.set(TaskManagerOptions.JVM_METASPACE, MemorySize.ofMebiBytes(256));
        config.set(TaskManagerOptions.JVM_OVERHEAD_MIN, MemorySize.ofMebiBytes(192));
        config.set(TaskManagerOptions.JVM_OVERHEAD_MAX, MemorySize.ofMebiBytes(192));
        // a killed TaskManager is noticed by failed heartbeat calls, within about a second
        config.set(HeartbeatManagerOptions.HEARTBEAT_INTERVAL, Duration.ofMillis(500));
        config.set(CoreOptions.TMP_DIRS, Files.createDirectories(dir.resolve("tmp")).toString());
        config.set(WebOptions.MAX_EXCEPTION_HISTORY_SIZE, 100);
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString(
                "state.backend.forst.primary-dir", dir.resolve("primary").toUri().toString());
        config.set(
                CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                dir.resolve("checkpoints").toUri().toString());
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(100));
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        config.set(
                RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS,
                2 * (INJECTED_FAILURES + KILLS));
        config.set(
                RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        return config;
    }

    /** Flink's config.yaml, one quoted flat key per line. */
    private static void writeFlinkConfig(Path confDir, Configuration config) throws IOException {
        StringBuilder yaml = new StringBuilder();
        for (Map.Entry<String, String> e : config.toMap().entrySet()) {
            yaml.append(e.getKey())
                    .append(": '")
                    .append(e.getValue().replace("'", "''"))
                    .append("'\n");
        }
        Files.writeString(confDir.resolve("config.yaml"), yaml.toString());
        // warnings and errors of the child JVMs into their logs
        Files.writeString(
                confDir.resolve(LOG_CONFIG),
                String.join(
                        "\n",
                        "rootLogger.level = WARN",
                        "rootLogger.appenderRef.console.ref = console",
                        "appender.console.type = Console",
                        "appender.console.name = console",
                        "appender.console.layout.type = PatternLayout",
                        "appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n"));
    }

    private static Process start(Class<?> main, Path confDir, Path dir, String name)
            throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return new ProcessBuilder(
                        java,
                        "-Xmx512m",
                        "-Dlog4j.configurationFile=" + confDir.resolve(LOG_CONFIG),
                        "-cp",
                        System.getProperty("java.class.path"),
                        main.getName(),
                        "--configDir",
                        confDir.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve(name + ".log").toFile())
                .start();
    }

    /** The job, with the cluster's checkpoint and restart settings (a job carries its own). */
    private static JobGraph jobGraph(Configuration config, Path results) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        String run = "kills-" + UUID.randomUUID();
        CountingJob.counts(
                        env,
                        run,
                        RECORDS,
                        KEYS,
                        RECORDS_PER_CHECKPOINT,
                        INJECTED_FAILURES,
                        1)
                .sinkTo(new FileLinesSink(results.toString()))
                .setParallelism(1);
        return env.getStreamGraph().getJobGraph();
    }

    /** Every (key, count) line any attempt of the sink wrote. */
    private static List<Tuple2<Long, Long>> readResults(Path results) throws IOException {
        List<Tuple2<Long, Long>> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(results)) {
            for (Path file : files.toList()) {
                for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                    String[] parts = line.split(" ");
                    out.add(Tuple2.of(Long.parseLong(parts[0]), Long.parseLong(parts[1])));
                }
            }
        }
        return out;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /** The JobManager's REST API for one job. */
    private static final class Rest {
        private final HttpClient http = HttpClient.newHttpClient();
        private final String base;

        Rest(int port, JobID id) {
            this.base = "http://127.0.0.1:" + port + "/jobs/" + id;
        }

        private JsonNode get(String path) throws Exception {
            HttpResponse<String> response =
                    http.send(
                            HttpRequest.newBuilder(URI.create(base + path)).build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).as("GET %s: %s", path, response.body()).isEqualTo(200);
            return JSON.readTree(response.body());
        }

        long completedCheckpoints() throws Exception {
            return get("/checkpoints").path("counts").path("completed").asLong();
        }

        /** The stack traces of the job's failures so far (its exception history). */
        List<String> failures() throws Exception {
            List<String> out = new ArrayList<>();
            JsonNode history = get("/exceptions?maxExceptions=100").path("exceptionHistory");
            for (JsonNode entry : history.path("entries")) {
                out.add(entry.path("stacktrace").asText());
            }
            return out;
        }
    }

    /** Appends "key count" lines to a file per sink subtask and attempt, flushed per record. */
    private static final class FileLinesSink implements Sink<Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private final String dir;

        FileLinesSink(String dir) {
            this.dir = dir;
        }

        @Override
        public SinkWriter<Tuple2<Long, Long>> createWriter(WriterInitContext context) {
            Path file =
                    Path.of(
                            dir,
                            "subtask-"
                                    + context.getTaskInfo().getIndexOfThisSubtask()
                                    + "-attempt-"
                                    + context.getTaskInfo().getAttemptNumber());
            return new SinkWriter<>() {
                @Override
                public void write(Tuple2<Long, Long> element, Context context) {
                    try {
                        Files.writeString(
                                file,
                                element.f0 + " " + element.f1 + "\n",
                                StandardOpenOption.CREATE,
                                StandardOpenOption.APPEND);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }
}
