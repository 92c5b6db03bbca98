package org.forstrs.flink.bench;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.snapshot.CheckpointStatsLog;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * FLIP-423's word count as a real Flink job on a local MiniCluster with async state on the ForSt-RS
 * backend, state in a local directory standing in for the DFS. Prints records/s and where the state
 * files were (they are deleted when the job ends).
 *
 * <pre>
 * mvn -f java/pom.xml -q -o test-compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
 * java -cp java/target/classes:java/target/test-classes:$(cat java/target/cp.txt) \
 *     org.forstrs.flink.bench.WordCountJob --records 2000000 --keys 100000 --parallelism 2 \
 *     --dir /tmp/forst-rs-state
 * </pre>
 *
 * <p>(Not {@code exec:java}: the MiniCluster deserializes the job with the application class
 * loader, which does not see Maven's isolated class path.) {@code scripts/run-main.sh} does this
 * with the packaged jar.
 */
public final class WordCountJob {

    private WordCountJob() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchArgs.parse(args);
        long records = Long.parseLong(options.getOrDefault("records", "2000000"));

        long keys = Long.parseLong(options.getOrDefault("keys", "100000"));
        int parallelism = Integer.parseInt(options.getOrDefault("parallelism", "2"));
        long checkpointMillis = Long.parseLong(options.getOrDefault("checkpoint-interval-ms", "1000"));
        Path dir =
                Path.of(
                                options.getOrDefault(
                                        "dir",
                                        Files.createTempDirectory("forst-rs-state").toString()))
                        .toAbsolutePath();
        Files.createDirectories(dir);

        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", dir.toString());
        // Beside the state directory, so that the state file counts below stay what they say.
        Path checkpoints = dir.resolveSibling(dir.getFileName() + "-checkpoints");
        if (checkpointMillis > 0) {
            config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
            config.set(
                    CheckpointingOptions.CHECKPOINTING_INTERVAL,
                    Duration.ofMillis(checkpointMillis));
        }
        BenchArgs.copyForStOptions(options, config);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, config);
        AsyncWordCount.addTo(env, records, keys);

        long[] peak = new long[2];
        Thread watcher =
                new Thread(
                        () -> {
                            while (!Thread.currentThread().isInterrupted()) {
                                long[] now = filesAndBytes(dir);
                                peak[0] = Math.max(peak[0], now[0]);
                                peak[1] = Math.max(peak[1], now[1]);
                                try {
                                    Thread.sleep(200);
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                        },
                        "state-dir-watcher");
        watcher.setDaemon(true);
        watcher.start();
        CheckpointStatsLog.clear();
        JobExecutionResult result = env.execute("ForSt-RS word count");
        watcher.interrupt();
        watcher.join();

        double seconds = result.getNetRuntime(TimeUnit.MILLISECONDS) / 1000.0;
        System.out.printf(
                "ForSt-RS word count: %d records, %d keys, parallelism %d%n",
                records, keys, parallelism);
        System.out.printf(
                "state files under %s/<job>/op_<operator>/subtask_<i>_attempt_<n>"
                        + " (peak %d files, %.1f MiB; deleted when the job ended)%n",
                dir, peak[0], peak[1] / 1048576.0);
        System.out.printf("records/s: %.0f (%.2f s)%n", records / seconds, seconds);
        printCheckpoints(checkpoints, checkpointMillis);
    }

    private static void printCheckpoints(Path dir, long intervalMillis) {
        List<CheckpointStats> stats = CheckpointStatsLog.recent();
        if (intervalMillis <= 0) {
            System.out.println("checkpoints: off (--checkpoint-interval-ms 0)");
            return;
        }
        long[] sync = stats.stream().mapToLong(CheckpointStats::syncNanos).sorted().toArray();
        long[] async = stats.stream().mapToLong(CheckpointStats::asyncNanos).sorted().toArray();
        System.out.printf(
                "checkpoints every %d ms into %s: %d subtask snapshots, median sync phase %.3f ms,"
                        + " median async phase %.1f ms, %d SSTs copied and %d reused, %d bytes"
                        + " streamed through the process%n",
                intervalMillis,
                dir,
                stats.size(),
                median(sync) / 1e6,
                median(async) / 1e6,
                stats.stream().mapToInt(CheckpointStats::filesCopied).sum(),
                stats.stream().mapToInt(CheckpointStats::filesReused).sum(),
                stats.stream().mapToLong(CheckpointStats::bytesThroughProcess).sum());
    }

    private static double median(long[] sorted) {
        return sorted.length == 0 ? 0 : sorted[sorted.length / 2];
    }

    private static long[] filesAndBytes(Path dir) {
        long[] out = new long[2];
        try {
            Files.walkFileTree(
                    dir,
                    new SimpleFileVisitor<>() {
                        @Override
                        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                            if (attrs.isRegularFile()) {
                                out[0]++;
                                out[1] += attrs.size();
                            }
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFileFailed(Path file, IOException e) {
                            return FileVisitResult.CONTINUE;
                        }
                    });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }
}
