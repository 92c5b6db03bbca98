package org.forstrs.flink.bench;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
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
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * FLIP-423's two-stage word count with synchronous State V1 ({@code ValueState<Long>} in a {@code
 * KeyedProcessFunction}, no async state) as a real Flink job on a local MiniCluster, on our backend
 * ({@code --backend forst}) or Flink's {@code EmbeddedRocksDBStateBackend} ({@code --backend
 * rocksdb}), state on a local directory, checkpoints off, the same managed memory for both.
 *
 * <p>One source subtask emits the records in order: stage 1 ({@code --keys} records) writes each
 * of the N distinct words once, stage 2 ({@code --records} records) counts words drawn uniformly
 * from those N. Every record is one read and one write of the state (read/write ratio 1; in stage
 * 1 the reads miss). Prints stage 2's records/s ({@code records/s:}, the number the scripts
 * compare: from the first stage-2 record any counting subtask sees to the last one), stage 1's
 * rate and the job's whole run time, and fails unless exactly N reads missed (stage 1's) and
 * stage 2's reads all hit.
 *
 * <pre>
 * java -cp java/target/forstjni-*.jar:java/target/test-classes:$(cat java/target/bench-classpath.txt) \
 *     org.forstrs.flink.bench.SyncWordCountJob --backend forst --keys 1000000 --records 2000000
 * </pre>
 *
 * {@code scripts/bench-sync.sh} runs both backends alternately in separate JVMs.
 */
public final class SyncWordCountJob {

    private SyncWordCountJob() {}

    // The MiniCluster runs in this JVM: the counting subtasks report here.
    private static final AtomicLong MISSES = new AtomicLong();
    private static final AtomicLong STAGE2_RECORDS = new AtomicLong();
    private static final AtomicLong FIRST_NANOS = new AtomicLong(Long.MAX_VALUE);
    private static final AtomicLong STAGE2_FIRST_NANOS = new AtomicLong(Long.MAX_VALUE);
    private static final AtomicLong STAGE2_LAST_NANOS = new AtomicLong(Long.MIN_VALUE);
    private static final Set<String> STATE_CLASSES = ConcurrentHashMap.newKeySet();

    /** A word and whether it belongs to stage 2. */
    public static final class Word {
        public String word;
        public boolean stage2;

        public Word() {}

        Word(String word, boolean stage2) {
            this.word = word;
            this.stage2 = stage2;
        }
    }

    /** Counts words in a V1 ValueState: one read and one write per record. */
    static final class Count extends KeyedProcessFunction<String, Word, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;
        private transient long misses;
        private transient long stage2Records;
        private transient long firstNanos;
        private transient long stage2FirstNanos;
        private transient long stage2LastNanos;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            // which backend's state this really is (ForStSyncValueState or RocksDBValueState)
            STATE_CLASSES.add(count.getClass().getSimpleName());
            firstNanos = Long.MAX_VALUE;
            stage2FirstNanos = Long.MAX_VALUE;
            stage2LastNanos = Long.MIN_VALUE;
        }

        @Override
        public void processElement(Word word, Context ctx, Collector<Long> out) throws Exception {
            if (firstNanos == Long.MAX_VALUE) {
                firstNanos = System.nanoTime();
            }
            if (word.stage2 && stage2FirstNanos == Long.MAX_VALUE) {
                stage2FirstNanos = System.nanoTime();
            }
            Long c = count.value();
            if (c == null) {
                misses++;
                c = 0L;
            }
            count.update(c + 1);
            if (word.stage2) {
                stage2Records++;
                stage2LastNanos = System.nanoTime();
            }
        }

        @Override
        public void close() {
            MISSES.addAndGet(misses);
            STAGE2_RECORDS.addAndGet(stage2Records);
            FIRST_NANOS.accumulateAndGet(firstNanos, Math::min);
            STAGE2_FIRST_NANOS.accumulateAndGet(stage2FirstNanos, Math::min);
            STAGE2_LAST_NANOS.accumulateAndGet(stage2LastNanos, Math::max);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchArgs.parse(args);
        String backend = options.getOrDefault("backend", "forst");
        long keys = Long.parseLong(options.getOrDefault("keys", "1000000"));
        long records = Long.parseLong(options.getOrDefault("records", "2000000"));
        int parallelism = Integer.parseInt(options.getOrDefault("parallelism", "2"));
        String managed = options.getOrDefault("managed-memory", "128m");
        Path dir =
                Path.of(
                                options.getOrDefault(
                                        "dir",
                                        Files.createTempDirectory("forst-rs-sync-bench")
                                                .toString()))
                        .toAbsolutePath();
        Files.createDirectories(dir);

        Configuration config = new Configuration();
        // Checkpoints stay off (no interval set): this measures state access only.
        config.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse(managed));
        switch (backend) {
            case "forst":
                config.set(StateBackendOptions.STATE_BACKEND, "forst");
                config.setString("state.backend.forst.primary-dir", dir.resolve("primary").toString());
                // the synchronous path's DB lives here (sync.enforce-local defaults to true)
                config.setString("state.backend.forst.local-dir", dir.resolve("local").toString());
                break;
            case "rocksdb":
                config.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
                config.setString("state.backend.rocksdb.localdir", dir.resolve("local").toString());
                break;
            default:
                throw new IllegalArgumentException("--backend forst|rocksdb, not " + backend);
        }

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, config);
        long total = keys + records;
        env.fromSequence(0, total - 1)
                // one source subtask, so that every counting subtask sees all of its stage-1
                // records before its first stage-2 record
                .setParallelism(1)
                .map(
                        i ->
                                i < keys
                                        ? new Word("word-" + i, false)
                                        : new Word(
                                                "word-"
                                                        + Math.floorMod(
                                                                i * 0x9E3779B97F4A7C15L, keys),
                                                true))
                .returns(Word.class)
                .setParallelism(1)
                .keyBy(w -> w.word)
                .process(new Count())
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());

        JobExecutionResult result = env.execute("ForSt-RS sync word count (" + backend + ")");
        deleteRecursively(dir);

        long stage2Nanos = STAGE2_LAST_NANOS.get() - STAGE2_FIRST_NANOS.get();
        long stage1Nanos = STAGE2_FIRST_NANOS.get() - FIRST_NANOS.get();
        double seconds = result.getNetRuntime(TimeUnit.MILLISECONDS) / 1000.0;
        System.out.printf(
                "sync word count on %s (state class %s): %d keys (stage 1), %d records (stage 2),"
                        + " parallelism %d, managed memory %s, checkpoints off%n",
                backend, STATE_CLASSES, keys, records, parallelism, managed);
        String expectedState = backend.equals("forst") ? "ForStSyncValueState" : "RocksDBValueState";
        if (!STATE_CLASSES.equals(Set.of(expectedState))) {
            throw new IllegalStateException(
                    "expected " + expectedState + " only, the job used " + STATE_CLASSES);
        }
        if (MISSES.get() != keys || STAGE2_RECORDS.get() != records) {
            throw new IllegalStateException(
                    String.format(
                            "expected %d misses (stage 1) and %d stage-2 records, counted %d and %d",
                            keys, records, MISSES.get(), STAGE2_RECORDS.get()));
        }
        System.out.printf(
                "stage 1 records/s: %.0f (%.2f s)%n", keys / (stage1Nanos / 1e9), stage1Nanos / 1e9);
        System.out.printf("job run time: %.2f s%n", seconds);
        System.out.printf(
                "records/s: %.0f (stage 2, %.2f s)%n",
                records / (stage2Nanos / 1e9), stage2Nanos / 1e9);
    }

    private static void deleteRecursively(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
