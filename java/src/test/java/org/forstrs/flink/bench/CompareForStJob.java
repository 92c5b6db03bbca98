package org.forstrs.flink.bench;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.forstrs.fs.bench.SlowFsCounters;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The word count of {@link AsyncWordCount} (async ValueState, one read and one write per record) or
 * the window aggregate of {@link AsyncWindowAggregate} ({@code --job window}) on whichever backend
 * {@code state.backend.type: forst} resolves to in this JVM: ForSt-RS when its jar is on the class
 * path first, Flink's ForSt otherwise; with {@code --backend rocksdb} or {@code --backend hashmap}
 * on Flink's RocksDB (in {@code --local-dir}, managed memory) or heap backend instead. So this
 * class uses Flink and test classes only, never ForSt-RS's. Prints one line per measure for
 * {@code scripts/bench-flink-forst.sh} and {@code scripts/bench-flink-backends.sh}: records/s, CPU
 * seconds of the JVM, its peak RSS, and the calls to the {@code slowfs://} file system.
 *
 * <p>Arguments: {@code --job wordcount|window}, {@code --dir <primary dir URI>} (file:// or
 * slowfs://), {@code --local-dir}, {@code --keys}, {@code --records}, {@code --parallelism},
 * {@code --managed-memory}, {@code --checkpoint-interval <ms>} with {@code --checkpoint-dir <URI>}
 * (incremental checkpoints; 0, the default: none), and any {@code --state.backend.forst.<key>
 * <value>} (the disk cache keys).
 */
public final class CompareForStJob {

    private CompareForStJob() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchArgs.parse(args);
        long records = Long.parseLong(options.getOrDefault("records", "2000000"));
        long keys = Long.parseLong(options.getOrDefault("keys", "1000000"));
        int parallelism = Integer.parseInt(options.getOrDefault("parallelism", "2"));
        Configuration config = BenchArgs.backendConfig(options);
        long checkpointMillis = Long.parseLong(options.getOrDefault("checkpoint-interval", "0"));
        if (checkpointMillis > 0) {
            config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, options.get("checkpoint-dir"));
            config.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
            config.set(
                    CheckpointingOptions.CHECKPOINTING_INTERVAL,
                    Duration.ofMillis(checkpointMillis));
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, config);
        String job = options.getOrDefault("job", "wordcount");
        switch (job) {
            case "wordcount" -> AsyncWordCount.addTo(env, records, keys);
            case "window" -> AsyncWindowAggregate.addTo(env, records, keys);
            default -> throw new IllegalArgumentException("--job: wordcount or window, not " + job);
        }
        JobExecutionResult result = env.execute(job + ", backend comparison");

        double seconds = result.getNetRuntime(TimeUnit.MILLISECONDS) / 1000.0;
        System.out.printf("records/s: %.0f%n", records / seconds);
        System.out.printf("job seconds: %.2f%n", seconds);
        System.out.printf("cpu seconds: %.2f%n", ProcessStats.cpuNanos() / 1e9);
        System.out.printf("checkpoints: %d%n", CheckpointCounter.completed());
        System.out.printf("peak rss MiB: %.0f%n", ProcessStats.peakRssKib() / 1024.0);
        System.out.printf("slowfs: %s%n", SlowFsCounters.summary());
        System.out.printf("slowfs opens: %d%n", SlowFsCounters.opens());
        System.out.printf("slowfs reads: %d%n", SlowFsCounters.reads());
        System.out.printf("slowfs creates: %d%n", SlowFsCounters.creates());
        System.out.flush();
        // Flink's ForSt leaves a native thread attached as a non-daemon thread, which keeps the
        // JVM alive after main returns.
        System.exit(0);
    }
}
