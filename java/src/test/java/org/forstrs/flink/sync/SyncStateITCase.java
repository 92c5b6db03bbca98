package org.forstrs.flink.sync;

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
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.Collector;

import org.forstrs.flink.CollectFirst;
import org.forstrs.flink.FailAfterCheckpoint;
import org.forstrs.flink.PacedSequence;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
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
 * Jobs WITHOUT async state on a MiniCluster run on the synchronous keyed backend: every State V1
 * type, event-time session windows (merging namespaces, timers) and state with time-to-live,
 * each with exact results against a computation without Flink. Checkpoints run meanwhile.
 *
 * <p>With failures: one job with every V1 state type (one with time-to-live), event-time timers
 * and event-time session windows fails at least five times, each time right after a checkpoint
 * completed, and its results are still exact (every restore brings back the synchronous state
 * from that checkpoint, and the heap timers through the timer service's snapshot).
 */
class SyncStateITCase {

    private static final int PARALLELISM = 2;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    private static StreamExecutionEnvironment environment(Path dir) {
        Configuration noRestarts = new Configuration();
        // These jobs must not fail: a failure (a declined checkpoint too) fails the test at once.
        noRestarts.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        return environment(dir, noRestarts);
    }

    private static StreamExecutionEnvironment environment(Path dir, Configuration config) {
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.local-dir", dir.resolve("local").toString());
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dir.resolve("cp").toUri().toString());
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        env.enableCheckpointing(100);
        return env;
    }

    // ---- every state type ----

    /** Data records; then one marker per key. */
    private static final long N = 40_000;

    private static final int KEYS = 8;

    /** Count and maximum, shown as "count/max". */
    static final class CountMax implements AggregateFunction<Long, Tuple2<Long, Long>, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, Long.MIN_VALUE);
        }

        @Override
        public Tuple2<Long, Long> add(Long value, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + 1, Math.max(acc.f1, value));
        }

        @Override
        public String getResult(Tuple2<Long, Long> acc) {
            return acc.f0 + "/" + acc.f1;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, Math.max(a.f1, b.f1));
        }
    }

    /**
     * Data records (value i of key i % KEYS) update every state; the marker of a key reads every
     * state, prints what it saw, and clears them.
     */
    static final class AllStates extends KeyedProcessFunction<Integer, Long, String> {
        private static final long serialVersionUID = 1L;

        private transient ValueState<Long> last;
        private transient ListState<Long> list;
        private transient MapState<Long, Long> map;
        private transient ReducingState<Long> sum;
        private transient AggregatingState<Long, String> countMax;

        @Override
        public void open(OpenContext openContext) {
            last = getRuntimeContext().getState(new ValueStateDescriptor<>("last", Types.LONG));
            list = getRuntimeContext().getListState(new ListStateDescriptor<>("list", Types.LONG));
            map =
                    getRuntimeContext()
                            .getMapState(new MapStateDescriptor<>("map", Types.LONG, Types.LONG));
            sum =
                    getRuntimeContext()
                            .getReducingState(
                                    new ReducingStateDescriptor<>("sum", Long::sum, Types.LONG));
            countMax =
                    getRuntimeContext()
                            .getAggregatingState(
                                    new AggregatingStateDescriptor<>(
                                            "countMax",
                                            new CountMax(),
                                            Types.TUPLE(Types.LONG, Types.LONG)));
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<String> out) throws Exception {
            if (i < N) {
                last.update(i);
                list.add(i);
                map.put(i, 2 * i);
                if (i % 10 == 3 && i >= KEYS) {
                    map.remove(i - KEYS);
                }
                sum.add(i);
                countMax.add(i);
                return;
            }
            long mapEntries = 0;
            long mapKeySum = 0;
            long mapValueSum = 0;
            for (Map.Entry<Long, Long> e : map.entries()) {
                mapEntries++;
                mapKeySum += e.getKey();
                mapValueSum += e.getValue();
            }
            long listCount = 0;
            long listSum = 0;
            for (long x : list.get()) {
                listCount++;
                listSum += x;
            }
            int key = ctx.getCurrentKey();
            out.collect(
                    line(
                            key,
                            last.value(),
                            mapEntries,
                            mapKeySum,
                            mapValueSum,
                            map.contains((long) key),
                            listCount,
                            listSum,
                            sum.get(),
                            countMax.get()));
            last.clear();
            list.clear();
            map.clear();
            sum.clear();
            countMax.clear();
            out.collect(
                    "cleared "
                            + key
                            + " "
                            + last.value()
                            + " "
                            + list.get()
                            + " "
                            + map.isEmpty()
                            + " "
                            + sum.get()
                            + " "
                            + countMax.get());
        }
    }

    static String line(
            int key,
            Long last,
            long mapEntries,
            long mapKeySum,
            long mapValueSum,
            boolean contains,
            long listCount,
            long listSum,
            Long sum,
            String countMax) {
        return String.join(
                " ",
                "key " + key,
                "last " + last,
                "map " + mapEntries + "/" + mapKeySum + "/" + mapValueSum + "/" + contains,
                "list " + listCount + "/" + listSum,
                "sum " + sum,
                "countMax " + countMax);
    }

    @Test
    void everyStateTypeGivesExactResults(@TempDir Path dir) throws Exception {
        StreamExecutionEnvironment env = environment(dir);
        List<String> results =
                CollectFirst.collect(
                        env.fromSequence(0, N + KEYS - 1)
                                .setParallelism(1) // one ordered stream: markers come last
                                .keyBy(i -> (int) (i < N ? i % KEYS : i - N), Types.INT)
                                .process(new AllStates())
                                .returns(Types.STRING),
                        2 * KEYS);

        List<String> expected = new ArrayList<>();
        for (int key = 0; key < KEYS; key++) {
            TreeMap<Long, Long> map = new TreeMap<>();
            long count = 0;
            long total = 0;
            long max = Long.MIN_VALUE;
            for (long i = key; i < N; i += KEYS) {
                map.put(i, 2 * i);
                if (i % 10 == 3 && i >= KEYS) {
                    map.remove(i - KEYS);
                }
                count++;
                total += i;
                max = i;
            }
            expected.add(
                    line(
                            key,
                            max,
                            map.size(),
                            map.keySet().stream().mapToLong(Long::longValue).sum(),
                            map.values().stream().mapToLong(Long::longValue).sum(),
                            map.containsKey((long) key),
                            count,
                            total,
                            total,
                            count + "/" + max));
            // the user-facing list state shows a cleared list as empty
            expected.add("cleared " + key + " null [] true null null");
        }
        assertThat(results).containsExactlyInAnyOrderElementsOf(expected);
    }

    // ---- session windows ----

    private static final long SESSION_RECORDS = 60_000;
    private static final int SESSION_KEYS = 10;
    private static final long GAP_MS = 1_000;

    /**
     * Event time of record i: 10 ms apart, with a 3 s pause every 5 s of event time, so each
     * key (records 100 ms apart) has sessions of about 5 s separated by pauses longer than the
     * gap.
     */
    static long timestamp(long i) {
        long t = i * 10;
        return t + (t / 5_000) * 3_000;
    }

    /** Records per reversed block; divides the 500 records between two pauses. */
    private static final long BLOCK = 50;

    /**
     * Arrival order: blocks of 50 records reversed, so a key's windows arrive out of order and
     * merge. A block never spans a pause and is out of order by at most 490 ms, less than the
     * watermark's bound, so no record is late whenever watermarks are emitted.
     */
    static long arrival(long j) {
        long first = j / BLOCK * BLOCK;
        long last = Math.min(first + BLOCK - 1, SESSION_RECORDS - 1);
        return last - (j - first);
    }

    /** Sum and count of a session. */
    static final class SumCount implements AggregateFunction<Long, Tuple2<Long, Long>, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Long value, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + value, acc.f1 + 1);
        }

        @Override
        public String getResult(Tuple2<Long, Long> acc) {
            return acc.f0 + "/" + acc.f1;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /** "tag key [start, end) result" for one fired window. */
    static final class Describe<T>
            extends ProcessWindowFunction<T, String, Integer, TimeWindow> {
        private static final long serialVersionUID = 1L;
        private final String tag;

        Describe(String tag) {
            this.tag = tag;
        }

        @Override
        public void process(
                Integer key, Context context, Iterable<T> elements, Collector<String> out) {
            StringBuilder result = new StringBuilder();
            if (tag.equals("list")) {
                long sum = 0;
                long count = 0;
                for (T element : elements) {
                    sum += (Long) element;
                    count++;
                }
                result.append(sum).append('/').append(count);
            } else {
                for (T element : elements) {
                    result.append(element);
                }
            }
            out.collect(
                    tag
                            + " "
                            + key
                            + " ["
                            + context.window().getStart()
                            + ", "
                            + context.window().getEnd()
                            + ") "
                            + result);
        }
    }

    @Test
    void eventTimeSessionWindowsMergeNamespaces(@TempDir Path dir) throws Exception {
        StreamExecutionEnvironment env = environment(dir);
        DataStream<Long> records =
                env.fromSequence(0, SESSION_RECORDS - 1)
                        .setParallelism(1)
                        .map(SyncStateITCase::arrival)
                        .setParallelism(1)
                        .assignTimestampsAndWatermarks(
                                WatermarkStrategy.<Long>forBoundedOutOfOrderness(
                                                Duration.ofMillis(GAP_MS))
                                        .withTimestampAssigner((i, ts) -> timestamp(i)))
                        .setParallelism(1);
        // Aggregating state (the accumulators of merged sessions merge) ...
        DataStream<String> aggregated =
                records.keyBy(i -> (int) (i % SESSION_KEYS), Types.INT)
                        .window(EventTimeSessionWindows.withGap(Duration.ofMillis(GAP_MS)))
                        .aggregate(new SumCount(), new Describe<String>("agg"), Types.TUPLE(Types.LONG, Types.LONG), Types.STRING, Types.STRING);
        // ... and list state (the elements of merged sessions are appended).
        DataStream<String> listed =
                records.keyBy(i -> (int) (i % SESSION_KEYS), Types.INT)
                        .window(EventTimeSessionWindows.withGap(Duration.ofMillis(GAP_MS)))
                        .process(new Describe<Long>("list"), Types.STRING);
        List<String> results = new ArrayList<>();
        aggregated.union(listed).executeAndCollect("sessions").forEachRemaining(results::add);

        List<String> expected = new ArrayList<>();
        for (int key = 0; key < SESSION_KEYS; key++) {
            long start = -1;
            long end = -1;
            long sum = 0;
            long count = 0;
            for (long i = key; i < SESSION_RECORDS; i += SESSION_KEYS) {
                long t = timestamp(i);
                if (start >= 0 && t >= end) {
                    expected.add("agg " + key + " [" + start + ", " + end + ") " + sum + "/" + count);
                    expected.add("list " + key + " [" + start + ", " + end + ") " + sum + "/" + count);
                    start = -1;
                }
                if (start < 0) {
                    start = t;
                    sum = 0;
                    count = 0;
                }
                end = t + GAP_MS;
                sum += i;
                count++;
            }
            expected.add("agg " + key + " [" + start + ", " + end + ") " + sum + "/" + count);
            expected.add("list " + key + " [" + start + ", " + end + ") " + sum + "/" + count);
        }
        assertThat(expected).hasSizeGreaterThan(4 * SESSION_KEYS);
        assertThat(results).containsExactlyInAnyOrderElementsOf(expected);
    }

    // ---- time-to-live ----

    /** Counts per key in a value state and a map state with time-to-live (Flink's TTL layer). */
    static final class TtlCount extends KeyedProcessFunction<Integer, Long, Tuple2<Integer, Long>> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;
        private transient MapState<Long, Long> seen;

        @Override
        public void open(OpenContext openContext) {
            StateTtlConfig ttl = StateTtlConfig.newBuilder(Duration.ofDays(1)).build();
            ValueStateDescriptor<Long> countDescriptor =
                    new ValueStateDescriptor<>("ttl-count", Types.LONG);
            countDescriptor.enableTimeToLive(ttl);
            count = getRuntimeContext().getState(countDescriptor);
            MapStateDescriptor<Long, Long> seenDescriptor =
                    new MapStateDescriptor<>("ttl-seen", Types.LONG, Types.LONG);
            seenDescriptor.enableTimeToLive(ttl);
            seen = getRuntimeContext().getMapState(seenDescriptor);
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<Tuple2<Integer, Long>> out)
                throws Exception {
            Long c = count.value();
            long next = c == null ? 1 : c + 1;
            count.update(next);
            seen.put(i, next);
            long entries = 0;
            for (Long ignored : seen.keys()) {
                entries++;
            }
            // the map has one entry per record of the key so far
            out.collect(Tuple2.of(ctx.getCurrentKey(), entries == next ? next : -next));
        }
    }

    @Test
    void stateWithTimeToLive(@TempDir Path dir) throws Exception {
        StreamExecutionEnvironment env = environment(dir);
        List<Tuple2<Integer, Long>> results =
                CollectFirst.collect(
                        env.fromSequence(0, 1_999)
                                .keyBy(i -> (int) (i % 40), Types.INT)
                                .process(new TtlCount())
                                .returns(Types.TUPLE(Types.INT, Types.LONG)),
                        2_000);
        List<Tuple2<Integer, Long>> expected = new ArrayList<>();
        for (int key = 0; key < 40; key++) {
            for (long n = 1; n <= 50; n++) {
                expected.add(Tuple2.of(key, n));
            }
        }
        assertThat(results).containsExactlyInAnyOrderElementsOf(expected);
    }
    // ---- failures ----

    private static final Map<String, Queue<String>> RESULTS = new ConcurrentHashMap<>();

    /** 2,000 records per subtask between two checkpoints: 30 checkpoints' worth of input. */
    private static final int RECORDS_PER_CHECKPOINT = 4_000;

    /** Residues of the records counted per key in the map state. */
    private static final long RESIDUES = 7;

    /**
     * Per key, every V1 state type: the record count (value state with time-to-live), the sum
     * (reducing), the records (list), counts per residue mod 7 (map) and count/max (aggregating);
     * emitted once, from an event-time timer at the end of the input.
     */
    static final class EveryStateCount extends KeyedProcessFunction<Long, Long, String> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;
        private transient ReducingState<Long> sum;
        private transient ListState<Long> list;
        private transient MapState<Long, Long> residues;
        private transient AggregatingState<Long, String> countMax;

        @Override
        public void open(OpenContext openContext) {
            ValueStateDescriptor<Long> countDescriptor =
                    new ValueStateDescriptor<>("count", Types.LONG);
            countDescriptor.enableTimeToLive(
                    StateTtlConfig.newBuilder(Duration.ofDays(1)).build());
            count = getRuntimeContext().getState(countDescriptor);
            sum =
                    getRuntimeContext()
                            .getReducingState(
                                    new ReducingStateDescriptor<>("sum", Long::sum, Types.LONG));
            list = getRuntimeContext().getListState(new ListStateDescriptor<>("list", Types.LONG));
            residues =
                    getRuntimeContext()
                            .getMapState(
                                    new MapStateDescriptor<>("residues", Types.LONG, Types.LONG));
            countMax =
                    getRuntimeContext()
                            .getAggregatingState(
                                    new AggregatingStateDescriptor<>(
                                            "countMax",
                                            new CountMax(),
                                            Types.TUPLE(Types.LONG, Types.LONG)));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<String> out)
                throws Exception {
            // The end-of-input watermark fires this timer once (registrations merge).
            ctx.timerService().registerEventTimeTimer(Long.MAX_VALUE);
            Long c = count.value();
            count.update(c == null ? 1 : c + 1);
            sum.add(value);
            list.add(value);
            Long r = residues.get(value % RESIDUES);
            residues.put(value % RESIDUES, r == null ? 1 : r + 1);
            countMax.add(value);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out)
                throws Exception {
            long listCount = 0;
            long listSum = 0;
            for (long x : list.get()) {
                listCount++;
                listSum += x;
            }
            TreeMap<Long, Long> sortedResidues = new TreeMap<>();
            for (Map.Entry<Long, Long> e : residues.entries()) {
                sortedResidues.put(e.getKey(), e.getValue());
            }
            out.collect(
                    "key "
                            + ctx.getCurrentKey()
                            + " "
                            + count.value()
                            + " "
                            + sum.get()
                            + " "
                            + listCount
                            + "/"
                            + listSum
                            + " "
                            + sortedResidues
                            + " "
                            + countMax.get());
        }
    }

    /** Appends every record to the run's result queue. */
    static final class CollectingSink implements Sink<String> {
        private static final long serialVersionUID = 1L;
        private final String run;

        CollectingSink(String run) {
            this.run = run;
        }

        @Override
        public SinkWriter<String> createWriter(WriterInitContext context) {
            Queue<String> results = RESULTS.get(run);
            return new SinkWriter<>() {
                @Override
                public void write(String element, Context context) {
                    results.add(element);
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }

    /**
     * One job with every V1 state type (one with time-to-live), event-time timers and event-time
     * session windows, failing at least five times, each time right after a checkpoint completed.
     * The per-key lines come once, at the end of the input, and must be exact. Sessions that
     * fired between the last checkpoint and a failure fire again after the restore, so a session
     * may appear more than once, but each appearance must be exact and every session must appear.
     */
    @Test
    void exactAfterFailuresRestoredFromCheckpoints(@TempDir Path dir) throws Exception {
        String run = "failures-" + UUID.randomUUID();
        RESULTS.put(run, new ConcurrentLinkedQueue<>());
        long records = 120_000;
        int keys = 300;
        int failingAttempts = 6;
        Configuration restarts = new Configuration();
        restarts.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        restarts.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 10);
        restarts.set(
                RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(50));
        StreamExecutionEnvironment env = environment(dir, restarts);
        // Each subtask reads one half of the numbers in order: event time grows per subtask, and
        // every record of the second half is later than all of the first, so none is late.
        DataStream<Long> passed =
                PacedSequence.of(env, run, records, RECORDS_PER_CHECKPOINT)
                        .map(
                                new FailAfterCheckpoint(
                                        run, records / env.getParallelism(), failingAttempts, 1))
                        .returns(Types.LONG)
                        .assignTimestampsAndWatermarks(
                                WatermarkStrategy.<Long>forMonotonousTimestamps()
                                        .withTimestampAssigner((i, ts) -> timestamp(i)));
        DataStream<String> perKey =
                passed.keyBy(i -> i % keys, Types.LONG)
                        .process(new EveryStateCount())
                        .returns(Types.STRING);
        DataStream<String> sessions =
                passed.keyBy(i -> (int) (i % SESSION_KEYS), Types.INT)
                        .window(EventTimeSessionWindows.withGap(Duration.ofMillis(GAP_MS)))
                        .aggregate(
                                new SumCount(),
                                new Describe<String>("agg"),
                                Types.TUPLE(Types.LONG, Types.LONG),
                                Types.STRING,
                                Types.STRING);
        perKey.union(sessions).sinkTo(new CollectingSink(run));

        env.execute("sync state with failures");

        List<String> expectedPerKey = new ArrayList<>();
        for (long key = 0; key < keys; key++) {
            long count = 0;
            long sum = 0;
            long max = Long.MIN_VALUE;
            TreeMap<Long, Long> residues = new TreeMap<>();
            for (long i = key; i < records; i += keys) {
                count++;
                sum += i;
                max = i;
                residues.merge(i % RESIDUES, 1L, Long::sum);
            }
            expectedPerKey.add(
                    "key "
                            + key
                            + " "
                            + count
                            + " "
                            + sum
                            + " "
                            + count
                            + "/"
                            + sum
                            + " "
                            + residues
                            + " "
                            + count
                            + "/"
                            + max);
        }
        List<String> expectedSessions = new ArrayList<>();
        for (int key = 0; key < SESSION_KEYS; key++) {
            long start = -1;
            long end = -1;
            long sum = 0;
            long count = 0;
            for (long i = key; i < records; i += SESSION_KEYS) {
                long t = timestamp(i);
                if (start >= 0 && t >= end) {
                    expectedSessions.add(
                            "agg " + key + " [" + start + ", " + end + ") " + sum + "/" + count);
                    start = -1;
                }
                if (start < 0) {
                    start = t;
                    sum = 0;
                    count = 0;
                }
                end = t + GAP_MS;
                sum += i;
                count++;
            }
            expectedSessions.add(
                    "agg " + key + " [" + start + ", " + end + ") " + sum + "/" + count);
        }
        assertThat(expectedSessions).hasSizeGreaterThan(100 * SESSION_KEYS);

        // The input is paced by checkpoints, so it outlasts every failing attempt: all fail, and
        // every restart resumed from a checkpoint past the start of the split.
        assertThat(FailAfterCheckpoint.failures(run)).isEqualTo(failingAttempts);
        assertThat(FailAfterCheckpoint.resumedAttempts(run)).isGreaterThanOrEqualTo(failingAttempts);
        List<String> results = new ArrayList<>(RESULTS.get(run));
        assertThat(results)
                .filteredOn(line -> line.startsWith("key "))
                .containsExactlyInAnyOrderElementsOf(expectedPerKey);
        assertThat(results)
                .filteredOn(line -> !line.startsWith("key "))
                .isSubsetOf(expectedSessions)
                .containsAll(expectedSessions);
    }
}
