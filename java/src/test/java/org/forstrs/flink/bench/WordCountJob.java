package org.forstrs.flink.bench;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

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
import java.util.HashMap;
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

    /** Counts words in a V2 ValueState: one read and one write per record. */
    static final class Count extends KeyedProcessFunction<String, String, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(String word, Context ctx, Collector<Long> out) {
            count.asyncValue()
                    .thenCompose(c -> count.asyncUpdate(c == null ? 1 : c + 1));
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
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
        // any --state.backend.forst.<key> <value> is passed to the backend
        for (Map.Entry<String, String> option : options.entrySet()) {
            if (option.getKey().startsWith("state.backend.forst.")) {
                config.setString(option.getKey(), option.getValue());
            }
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, config);
        env.fromSequence(0, records - 1)
                .map(i -> "word-" + Math.floorMod(i * 0x9E3779B97F4A7C15L, keys))
                .returns(Types.STRING)
                .keyBy(w -> w)
                .enableAsyncState()
                .process(new Count())
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());

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
