package org.forstrs.flink;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.KeyGroupsSavepointStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.CommonTestUtils;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.Collector;

import org.forstrs.flink.config.ForStOptions;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Migration through canonical savepoints: a job with event-time windows (aggregating, reducing
 * and list window state), event-time timers and every State V1 type runs on Flink's {@code
 * HashMapStateBackend} at parallelism 2, continues on ForSt-RS at parallelism 3 from a canonical
 * savepoint, and finishes on Flink's {@code EmbeddedRocksDBStateBackend} at parallelism 2 from
 * ForSt-RS's canonical savepoint. Its whole output equals what an uninterrupted run emits,
 * computed here without Flink. A single source subtask gives every record its number as event
 * time, so no record is late and the output does not depend on where the job stops.
 */
class CanonicalSavepointMigrationITCase {

    private static final long RECORDS = 60_000;
    private static final int KEYS = 40;
    private static final long WINDOW = 1_000;
    private static final long TIMER_DELAY = 300;
    private static final long LISTED_EVERY = 97;

    private static final Map<String, Queue<String>> OUTPUT = new ConcurrentHashMap<>();

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
    void hashMapToForStToRocksDbEmitsWhatAnUninterruptedRunEmits(
            @TempDir Path primary,
            @TempDir Path checkpoints,
            @TempDir Path savepoints,
            @InjectMiniCluster MiniCluster miniCluster)
            throws Exception {
        String run = "canonical-" + UUID.randomUUID();
        OUTPUT.put(run, new ConcurrentLinkedQueue<>());

        Configuration hashMap = config("hashmap", checkpoints);
        JobClient onHashMap = submit(hashMap, null, 2, run, RECORDS / 4);
        awaitHeld(run, RECORDS / 4, onHashMap, miniCluster);
        Path fromHashMap = stopWithSavepoint(onHashMap, savepoints, SavepointFormatType.CANONICAL);

        Configuration forSt = config("forst", checkpoints);
        forSt.setString("state.backend.forst.primary-dir", primary.toUri().toString());
        JobClient onForSt = submit(forSt, fromHashMap, 3, run, RECORDS / 2);
        awaitHeld(run, RECORDS / 2, onForSt, miniCluster);
        Path fromForSt = stopWithSavepoint(onForSt, savepoints, SavepointFormatType.CANONICAL);

        submit(config("rocksdb", checkpoints), fromForSt, 2, run, Long.MAX_VALUE)
                .getJobExecutionResult()
                .get();

        assertOutputIsAnUninterruptedRun(run);

        // Ours wrote the unified format: key-group handles only, and the timers among the
        // managed keyed states rather than in raw keyed state.
        assertThat(managedKeyedState(fromForSt))
                .isNotEmpty()
                .allMatch(KeyGroupsSavepointStateHandle.class::isInstance);
        assertThat(rawKeyedState(fromForSt)).isEmpty();
    }

    /**
     * Ours with heap timers, then with timers in the store from its native savepoint (the timer
     * service wrote the heap timers into raw keyed state, and adds them to the store queues on
     * restore), then with heap timers again from a canonical savepoint (where stored timers are
     * states like any other).
     */
    @Test
    void timersMoveFromTheHeapIntoTheStoreAndBack(
            @TempDir Path primary,
            @TempDir Path checkpoints,
            @TempDir Path savepoints,
            @InjectMiniCluster MiniCluster miniCluster)
            throws Exception {
        String run = "timer-services-" + UUID.randomUUID();
        OUTPUT.put(run, new ConcurrentLinkedQueue<>());
        Configuration heapTimers = config("forst", checkpoints);
        heapTimers.setString("state.backend.forst.primary-dir", primary.toUri().toString());
        heapTimers.set(ForStOptions.TIMER_SERVICE_FACTORY, ForStOptions.TimerServiceType.HEAP);
        Configuration storeTimers = new Configuration(heapTimers);
        storeTimers.set(ForStOptions.TIMER_SERVICE_FACTORY, ForStOptions.TimerServiceType.ForStDB);

        JobClient onHeap = submit(heapTimers, null, 2, run, RECORDS / 4);
        awaitHeld(run, RECORDS / 4, onHeap, miniCluster);
        Path native1 = stopWithSavepoint(onHeap, savepoints, SavepointFormatType.NATIVE);
        assertThat(rawKeyedState(native1)).isNotEmpty();

        JobClient inStore = submit(storeTimers, native1, 3, run, RECORDS / 2);
        awaitHeld(run, RECORDS / 2, inStore, miniCluster);
        Path canonical = stopWithSavepoint(inStore, savepoints, SavepointFormatType.CANONICAL);
        assertThat(rawKeyedState(canonical)).isEmpty();

        submit(heapTimers, canonical, 2, run, Long.MAX_VALUE).getJobExecutionResult().get();
        assertOutputIsAnUninterruptedRun(run);
    }

    private static void assertOutputIsAnUninterruptedRun(String run) {
        List<String> actual = new ArrayList<>(OUTPUT.get(run));
        actual.sort(null);
        List<String> expected = expectedOutput();
        expected.sort(null);
        assertThat(actual).hasSameSizeAs(expected).containsExactlyElementsOf(expected);
    }

    private static Configuration config(String backend, Path checkpoints) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, backend);
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
        // A failure would replay output: the test must see none.
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        return config;
    }

    /** Submits the job; its input (over all jobs of the run) is held at {@code holdAt} records. */
    private static JobClient submit(
            Configuration base, Path restoreFrom, int parallelism, String run, long holdAt)
            throws Exception {
        Configuration config = new Configuration(base);
        if (restoreFrom != null) {
            config.set(StateRecoveryOptions.SAVEPOINT_PATH, restoreFrom.toUri().toString());
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(parallelism);
        env.setMaxParallelism(128);
        build(env, run);
        if (holdAt == Long.MAX_VALUE) {
            PacedSequence.release(run);
        } else {
            PacedSequence.holdAt(run, holdAt);
        }
        return env.executeAsync("canonical migration at parallelism " + parallelism);
    }

    private static void build(StreamExecutionEnvironment env, String run) {
        DataStream<Long> numbers =
                // No checkpoints here: all input in one cycle, held only where the test says.
                PacedSequence.of(env, run, RECORDS, (int) RECORDS)
                        .setParallelism(1)
                        .uid("numbers")
                        .assignTimestampsAndWatermarks(
                                WatermarkStrategy.<Long>forMonotonousTimestamps()
                                        .withTimestampAssigner((value, previous) -> value))
                        .setParallelism(1)
                        .uid("event-time");
        KeyedStream<Long, Long> keyed = numbers.keyBy(new KeyOf());
        Sink<String> sink = new CollectingSink(run);
        keyed.window(TumblingEventTimeWindows.of(Duration.ofMillis(WINDOW)))
                .aggregate(new Sum(), new Label<>("aggregate"))
                .uid("aggregating-window")
                .sinkTo(sink)
                .uid("aggregating-sink");
        keyed.window(
                        SlidingEventTimeWindows.of(
                                Duration.ofMillis(2 * WINDOW), Duration.ofMillis(WINDOW)))
                .reduce(Long::sum, new Label<>("reduce"))
                .uid("reducing-window")
                .sinkTo(sink)
                .uid("reducing-sink");
        keyed.window(TumblingEventTimeWindows.of(Duration.ofMillis(WINDOW)))
                .process(new CountAndSum())
                .uid("list-window")
                .sinkTo(sink)
                .uid("list-sink");
        keyed.process(new AllStates()).uid("all-states").sinkTo(sink).uid("all-states-sink");
    }

    /** What the job emits without any savepoint, computed without Flink. */
    private static List<String> expectedOutput() {
        Map<String, long[]> windows = new TreeMap<>();
        long[] count = new long[KEYS];
        long[] sum = new long[KEYS];
        long[] max = new long[KEYS];
        List<List<Long>> listed = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) {
            listed.add(new ArrayList<>());
        }
        List<String> out = new ArrayList<>();
        for (long v = 0; v < RECORDS; v++) {
            int k = (int) (v % KEYS);
            long tumbling = v - v % WINDOW;
            window(windows, "aggregate", k, tumbling, 1)[0] += v;
            // a sliding window of two slides: the one starting here and the one before
            window(windows, "reduce", k, tumbling, 1)[0] += v;
            window(windows, "reduce", k, tumbling - WINDOW, 1)[0] += v;
            long[] list = window(windows, "list", k, tumbling, 2);
            list[0]++;
            list[1] += v;
            out.add("timer " + k + " " + (v + TIMER_DELAY) + " " + v);
            count[k]++;
            sum[k] += v;
            max[k] = Math.max(max[k], v);
            if (v % LISTED_EVERY == 0) {
                listed.get(k).add(v);
            }
        }
        windows.forEach(
                (window, values) -> {
                    StringBuilder line = new StringBuilder(window);
                    for (long value : values) {
                        line.append(' ').append(value);
                    }
                    out.add(line.toString());
                });
        for (int k = 0; k < KEYS; k++) {
            out.add(finalLine(k, count[k], sum[k], max[k], listed.get(k), 0));
        }
        return out;
    }

    private static long[] window(
            Map<String, long[]> windows, String kind, int key, long start, int values) {
        return windows.computeIfAbsent(kind + " " + key + " " + start, w -> new long[values]);
    }

    private static String finalLine(
            long key, long count, long sum, long max, List<Long> listed, long pending) {
        return "final " + key + " " + count + " " + sum + " " + max + " " + listed + " " + pending;
    }

    /**
     * Waits until every task runs (a savepoint needs them all) and the input emitted all it may
     * (over all jobs of the run); no deadlines.
     */
    private static void awaitHeld(String run, long records, JobClient job, MiniCluster miniCluster)
            throws Exception {
        CommonTestUtils.waitForAllTaskRunning(miniCluster, job.getJobID(), false);
        Await.until(records + " records", () -> PacedSequence.emitted(run) >= records, job);
    }

    private static Path stopWithSavepoint(
            JobClient job, Path savepoints, SavepointFormatType format) throws Exception {
        String location = job.stopWithSavepoint(false, savepoints.toUri().toString(), format).get();
        job.getJobExecutionResult().get();
        return Paths.get(URI.create(location));
    }

    private static List<KeyedStateHandle> managedKeyedState(Path savepoint) throws IOException {
        List<KeyedStateHandle> handles = new ArrayList<>();
        for (OperatorSubtaskState subtask : subtaskStates(savepoint)) {
            handles.addAll(subtask.getManagedKeyedState());
        }
        return handles;
    }

    private static List<KeyedStateHandle> rawKeyedState(Path savepoint) throws IOException {
        List<KeyedStateHandle> handles = new ArrayList<>();
        for (OperatorSubtaskState subtask : subtaskStates(savepoint)) {
            handles.addAll(subtask.getRawKeyedState());
        }
        return handles;
    }

    private static List<OperatorSubtaskState> subtaskStates(Path savepoint) throws IOException {
        CheckpointMetadata metadata;
        try (InputStream in = Files.newInputStream(savepoint.resolve("_metadata"))) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            new DataInputStream(in),
                            CanonicalSavepointMigrationITCase.class.getClassLoader(),
                            savepoint.toString());
        }
        List<OperatorSubtaskState> states = new ArrayList<>();
        for (OperatorState operator : metadata.getOperatorStates()) {
            states.addAll(operator.getStates());
        }
        return states;
    }

    private static final class KeyOf implements KeySelector<Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Long value) {
            return value % KEYS;
        }
    }

    private static final class Sum implements AggregateFunction<Long, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Long value, Long accumulator) {
            return accumulator + value;
        }

        @Override
        public Long getResult(Long accumulator) {
            return accumulator;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    private static final class Max implements AggregateFunction<Long, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return Long.MIN_VALUE;
        }

        @Override
        public Long add(Long value, Long accumulator) {
            return Math.max(accumulator, value);
        }

        @Override
        public Long getResult(Long accumulator) {
            return accumulator;
        }

        @Override
        public Long merge(Long a, Long b) {
            return Math.max(a, b);
        }
    }

    /** "kind key windowStart value" for a pre-aggregated window. */
    private static final class Label<T> extends ProcessWindowFunction<T, String, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;
        private final String kind;

        Label(String kind) {
            this.kind = kind;
        }

        @Override
        public void process(Long key, Context context, Iterable<T> values, Collector<String> out) {
            for (T value : values) {
                out.collect(kind + " " + key + " " + context.window().getStart() + " " + value);
            }
        }
    }

    /** A window over all its elements (list window state): "list key start count sum". */
    private static final class CountAndSum
            extends ProcessWindowFunction<Long, String, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(
                Long key, Context context, Iterable<Long> values, Collector<String> out) {
            long count = 0;
            long sum = 0;
            for (long value : values) {
                count++;
                sum += value;
            }
            long start = context.window().getStart();
            out.collect("list " + key + " " + start + " " + count + " " + sum);
        }
    }

    /**
     * Every State V1 type and event-time timers: each record registers a timer {@link
     * #TIMER_DELAY} later that emits the record (kept in map state until then); at the end of
     * the input each key emits its count (value), sum (reducing), max (aggregating), the records
     * divisible by {@link #LISTED_EVERY} (list) and how many records still wait for a timer.
     */
    private static final class AllStates extends KeyedProcessFunction<Long, Long, String> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;
        private transient ReducingState<Long> sum;
        private transient AggregatingState<Long, Long> max;
        private transient ListState<Long> listed;
        private transient MapState<Long, Long> pending;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            sum =
                    getRuntimeContext()
                            .getReducingState(
                                    new ReducingStateDescriptor<>("sum", Long::sum, Types.LONG));
            max =
                    getRuntimeContext()
                            .getAggregatingState(
                                    new AggregatingStateDescriptor<>("max", new Max(), Types.LONG));
            listed =
                    getRuntimeContext()
                            .getListState(new ListStateDescriptor<>("listed", Types.LONG));
            pending =
                    getRuntimeContext()
                            .getMapState(
                                    new MapStateDescriptor<>("pending", Types.LONG, Types.LONG));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<String> out)
                throws Exception {
            Long current = count.value();
            count.update(current == null ? 1 : current + 1);
            sum.add(value);
            max.add(value);
            if (value % LISTED_EVERY == 0) {
                listed.add(value);
            }
            long at = value + TIMER_DELAY;
            pending.put(at, value);
            ctx.timerService().registerEventTimeTimer(at);
            ctx.timerService().registerEventTimeTimer(Long.MAX_VALUE);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out)
                throws Exception {
            long key = ctx.getCurrentKey();
            if (timestamp != Long.MAX_VALUE) {
                out.collect("timer " + key + " " + timestamp + " " + pending.get(timestamp));
                pending.remove(timestamp);
                return;
            }
            List<Long> values = new ArrayList<>();
            listed.get().forEach(values::add);
            long waiting = 0;
            for (Long ignored : pending.keys()) {
                waiting++;
            }
            out.collect(finalLine(key, count.value(), sum.get(), max.get(), values, waiting));
        }
    }

    /** Appends every record to the run's output queue (the MiniCluster runs in this JVM). */
    private static final class CollectingSink implements Sink<String> {
        private static final long serialVersionUID = 1L;
        private final String run;

        CollectingSink(String run) {
            this.run = run;
        }

        @Override
        public SinkWriter<String> createWriter(WriterInitContext context) {
            Queue<String> output = OUTPUT.get(run);
            return new SinkWriter<>() {
                @Override
                public void write(String element, Context context) {
                    output.add(element);
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }
}
