package org.forstrs.flink.bench;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * Timer registration and firing throughput as a real Flink job on a local MiniCluster: one
 * event-time timer per record ({@code --timers} records over {@code --keys} keys, all distinct),
 * registered while no watermark moves, then all fired by the end-of-input watermark. Backends:
 * {@code forst} (ours, timers in the store), {@code forst-heap} (ours, timers on the heap) and
 * {@code rocksdb} (Flink's {@code EmbeddedRocksDBStateBackend}, timers in RocksDB), state on a
 * local directory, checkpoints off. Prints {@code register/s:} (from the first registration any
 * subtask makes to the last) and {@code fire/s:} (likewise for firings) and fails unless every
 * timer fired exactly once (count and timestamp sum).
 *
 * <p>{@code scripts/bench-timers.sh} runs the three in turn in separate JVMs.
 */
public final class TimerBenchJob {

    private TimerBenchJob() {}

    private static final long BASE_TS = 1_000;

    // The MiniCluster runs in this JVM: the subtasks report here.
    private static final AtomicLong FIRED = new AtomicLong();
    private static final AtomicLong FIRED_SUM = new AtomicLong();
    private static final AtomicLong FIRST_REGISTER = new AtomicLong(Long.MAX_VALUE);
    private static final AtomicLong LAST_REGISTER = new AtomicLong(Long.MIN_VALUE);
    private static final AtomicLong FIRST_FIRE = new AtomicLong(Long.MAX_VALUE);
    private static final AtomicLong LAST_FIRE = new AtomicLong(Long.MIN_VALUE);

    /** Registers a timer per record; counts firings. */
    static final class Timers extends KeyedProcessFunction<Long, Long, Long> {
        private static final long serialVersionUID = 1L;
        private final long keys;
        private transient long firstRegister;
        private transient long lastRegister;
        private transient long firstFire;
        private transient long lastFire;
        private transient long fired;
        private transient long firedSum;

        Timers(long keys) {
            this.keys = keys;
        }

        @Override
        public void open(OpenContext openContext) {
            firstRegister = Long.MAX_VALUE;
            lastRegister = Long.MIN_VALUE;
            firstFire = Long.MAX_VALUE;
            lastFire = Long.MIN_VALUE;
        }

        @Override
        public void processElement(Long record, Context ctx, Collector<Long> out) {
            if (firstRegister == Long.MAX_VALUE) {
                firstRegister = System.nanoTime();
            }
            ctx.timerService().registerEventTimeTimer(BASE_TS + record / keys);
            lastRegister = System.nanoTime();
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<Long> out) {
            if (firstFire == Long.MAX_VALUE) {
                firstFire = System.nanoTime();
            }
            fired++;
            firedSum += timestamp;
            lastFire = System.nanoTime();
        }

        @Override
        public void close() {
            FIRED.addAndGet(fired);
            FIRED_SUM.addAndGet(firedSum);
            FIRST_REGISTER.accumulateAndGet(firstRegister, Math::min);
            LAST_REGISTER.accumulateAndGet(lastRegister, Math::max);
            FIRST_FIRE.accumulateAndGet(firstFire, Math::min);
            LAST_FIRE.accumulateAndGet(lastFire, Math::max);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchArgs.parse(args);
        String backend = options.getOrDefault("backend", "forst");
        long timers = Long.parseLong(options.getOrDefault("timers", "2000000"));
        long keys = Long.parseLong(options.getOrDefault("keys", "20000"));
        int parallelism = Integer.parseInt(options.getOrDefault("parallelism", "2"));
        String managed = options.getOrDefault("managed-memory", "128m");
        Path dir =
                Path.of(
                                options.getOrDefault(
                                        "dir",
                                        Files.createTempDirectory("forst-rs-timer-bench")
                                                .toString()))
                        .toAbsolutePath();
        Files.createDirectories(dir);

        Configuration config = new Configuration();
        config.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse(managed));
        switch (backend) {
            case "forst":
            case "forst-heap":
                config.set(StateBackendOptions.STATE_BACKEND, "forst");
                config.setString("state.backend.forst.primary-dir", dir.resolve("primary").toString());
                config.setString("state.backend.forst.local-dir", dir.resolve("local").toString());
                config.setString(
                        "state.backend.forst.timer-service.factory",
                        backend.equals("forst") ? "ForStDB" : "HEAP");
                if (options.containsKey("timer-cache")) {
                    config.setString(
                            "state.backend.forst.timer-service.cache-size",
                            options.get("timer-cache"));
                }
                break;
            case "rocksdb":
                config.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
                config.setString("state.backend.rocksdb.localdir", dir.resolve("local").toString());
                config.setString("state.backend.rocksdb.timer-service.factory", "ROCKSDB");
                break;
            default:
                throw new IllegalArgumentException(
                        "--backend forst|forst-heap|rocksdb, not " + backend);
        }

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, config);
        env.fromSequence(0, timers - 1)
                .setParallelism(1)
                .keyBy(i -> i % keys, Types.LONG)
                .process(new Timers(keys))
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());
        env.execute("ForSt-RS timers (" + backend + ")");
        deleteRecursively(dir);

        long expectedSum = 0;
        for (long i = 0; i < timers; i++) {
            expectedSum += BASE_TS + i / keys;
        }
        if (FIRED.get() != timers || FIRED_SUM.get() != expectedSum) {
            throw new IllegalStateException(
                    String.format(
                            "expected %d timers (timestamp sum %d), fired %d (sum %d)",
                            timers, expectedSum, FIRED.get(), FIRED_SUM.get()));
        }
        double registerSeconds = (LAST_REGISTER.get() - FIRST_REGISTER.get()) / 1e9;
        double fireSeconds = (LAST_FIRE.get() - FIRST_FIRE.get()) / 1e9;
        System.out.printf(
                "timers on %s: %d timers, %d keys, parallelism %d, managed memory %s,"
                        + " checkpoints off%n",
                backend, timers, keys, parallelism, managed);
        System.out.printf("register/s: %.0f (%.2f s)%n", timers / registerSeconds, registerSeconds);
        System.out.printf("fire/s: %.0f (%.2f s)%n", timers / fireSeconds, fireSeconds);
    }

    private static void deleteRecursively(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
