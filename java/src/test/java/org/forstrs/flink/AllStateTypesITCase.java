package org.forstrs.flink;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.v2.AggregatingState;
import org.apache.flink.api.common.state.v2.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.v2.ListState;
import org.apache.flink.api.common.state.v2.ListStateDescriptor;
import org.apache.flink.api.common.state.v2.MapState;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.ReducingState;
import org.apache.flink.api.common.state.v2.ReducingStateDescriptor;
import org.apache.flink.api.common.state.v2.StateFuture;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * List, Map, Reducing and Aggregating State V2 on a MiniCluster with exact results: map
 * iteration across many chunks (more than 10,000 entries in one map), contains / get / remove /
 * isEmpty / clear, list add / get / clear; and event-time windows (namespaces, timers).
 */
class AllStateTypesITCase {

    private static final int PARALLELISM = 2;

    /** Data records. */
    private static final long N = 100_000;

    /** Keys: N / KEYS = 12,500 map entries per key. */
    private static final int KEYS = 8;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    private static Configuration config(Path primary) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", primary.toString());
        return config;
    }

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
     * Records below N are data (value i of key i % KEYS); then one marker per key reads every
     * state and clears it, then a second marker per key reads the cleared states.
     */
    static final class AllStates extends KeyedProcessFunction<Integer, Long, String> {
        private static final long serialVersionUID = 1L;

        private transient ListState<Long> list;
        private transient MapState<Long, Long> map;
        private transient ReducingState<Long> sum;
        private transient AggregatingState<Long, String> countMax;

        @Override
        public void open(OpenContext openContext) {
            list = getRuntimeContext().getListState(new ListStateDescriptor<>("list", Types.LONG));
            map =
                    getRuntimeContext()
                            .getMapState(new MapStateDescriptor<>("map", Types.LONG, Types.LONG));
            sum =
                    getRuntimeContext()
                            .getReducingState(
                                    new ReducingStateDescriptor<>("sum", Long::sum, Types.LONG));
            TypeInformation<Tuple2<Long, Long>> accType = Types.TUPLE(Types.LONG, Types.LONG);
            countMax =
                    getRuntimeContext()
                            .getAggregatingState(
                                    new AggregatingStateDescriptor<>(
                                            "countMax", new CountMax(), accType));
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<String> out) {
            int key = ctx.getCurrentKey();
            if (i < N) {
                list.asyncAdd(i);
                map.asyncPut(i, 2 * i);
                if (i % 10 == 3 && i >= KEYS) {
                    map.asyncRemove(i - KEYS);
                }
                sum.asyncAdd(i);
                countMax.asyncAdd(i);
                return;
            }
            boolean first = i < N + KEYS;
            long[] a = new long[8];
            String[] s = new String[4];
            long probe = key;
            StateFuture<Void> done =
                    map.asyncEntries()
                            .thenCompose(
                                    it ->
                                            it.onNext(
                                                    e -> {
                                                        a[0]++;
                                                        a[1] += e.getKey();
                                                        a[2] += e.getValue();
                                                    }))
                            .thenCompose(v -> map.asyncKeys())
                            .thenCompose(it -> it.onNext(k -> {
                                a[3] += k;
                            }))
                            .thenCompose(v -> map.asyncValues())
                            .thenCompose(it -> it.onNext(x -> {
                                a[4] += x;
                            }))
                            .thenCompose(v -> list.asyncGet())
                            .thenCompose(
                                    it ->
                                            it.onNext(
                                                    x -> {
                                                        a[5]++;
                                                        a[6] += x;
                                                    }))
                            .thenCompose(v -> sum.asyncGet())
                            .thenCompose(
                                    r -> {
                                        s[0] = String.valueOf(r);
                                        return countMax.asyncGet();
                                    })
                            .thenCompose(
                                    c -> {
                                        s[1] = String.valueOf(c);
                                        return map.asyncContains(probe);
                                    })
                            .thenCompose(
                                    c -> {
                                        s[2] = String.valueOf(c);
                                        return map.asyncGet(probe);
                                    })
                            .thenCompose(
                                    g -> {
                                        s[3] = String.valueOf(g);
                                        return map.asyncIsEmpty();
                                    })
                            .thenAccept(
                                    empty ->
                                            out.collect(
                                                    (first ? "full|" : "cleared|")
                                                            + line(key, a, s, empty)));
            if (first) {
                done.thenCompose(v -> list.asyncClear())
                        .thenCompose(v -> map.asyncClear())
                        .thenCompose(v -> sum.asyncClear())
                        .thenCompose(v -> countMax.asyncClear());
            }
        }
    }

    static String line(int key, long[] a, String[] s, boolean empty) {
        return key
                + "|map "
                + a[0]
                + " "
                + a[1]
                + " "
                + a[2]
                + "|keys "
                + a[3]
                + "|values "
                + a[4]
                + "|list "
                + a[5]
                + " "
                + a[6]
                + "|sum "
                + s[0]
                + "|countMax "
                + s[1]
                + "|contains "
                + s[2]
                + "|get "
                + s[3]
                + "|empty "
                + empty;
    }

    /** What {@link AllStates} must print, computed without Flink. */
    private static List<String> expected() {
        List<String> lines = new ArrayList<>();
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
                max = Math.max(max, i);
            }
            long keySum = map.keySet().stream().mapToLong(Long::longValue).sum();
            long valueSum = map.values().stream().mapToLong(Long::longValue).sum();
            long[] a = {map.size(), keySum, valueSum, keySum, valueSum, count, total};
            String[] s = {
                String.valueOf(total),
                count + "/" + max,
                String.valueOf(map.containsKey((long) key)),
                String.valueOf(map.get((long) key))
            };
            lines.add("full|" + line(key, a, s, map.isEmpty()));
            lines.add(
                    "cleared|"
                            + line(
                                    key,
                                    new long[8],
                                    new String[] {"null", "null", "false", "null"},
                                    true));
        }
        return lines;
    }

    @Test
    void everyStateTypeGivesExactResults(@TempDir Path primary) throws Exception {
        assertThat(N / KEYS).isGreaterThanOrEqualTo(10_000);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(config(primary));
        env.setParallelism(PARALLELISM);
        List<String> results =
                CollectFirst.collect(
                        env.fromSequence(0, N + 2L * KEYS - 1)
                                .setParallelism(1) // one ordered stream: markers come last
                                .keyBy(i -> (int) (i < N ? i % KEYS : (i - N) % KEYS), Types.INT)
                                .enableAsyncState()
                                .process(new AllStates())
                                .returns(Types.STRING),
                        4 * KEYS);
        assertThat(results).containsExactlyInAnyOrderElementsOf(expected());
    }

    @Test
    @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
    void eventTimeWindowsUseNamespacesAndTimers(@TempDir Path primary) throws Exception {
        long records = 200_000;
        int keys = 50;
        long windowMs = 1_000;
        Map<String, Long> expected = new HashMap<>();
        for (long i = 0; i < records; i++) {
            expected.merge((i % keys) + "@" + (i / windowMs), i, Long::sum);
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(config(primary));
        env.setParallelism(PARALLELISM);
        CloseableIterator<Tuple3<Integer, Long, Long>> results =
                env.fromSequence(0, records - 1)
                        .setParallelism(1)
                        .assignTimestampsAndWatermarks(
                                WatermarkStrategy.<Long>forMonotonousTimestamps()
                                        .withTimestampAssigner((i, ts) -> i))
                        .setParallelism(1)
                        // (key, window index, value)
                        .map(i -> Tuple3.of((int) (i % keys), i / windowMs, i))
                        .returns(Types.TUPLE(Types.INT, Types.LONG, Types.LONG))
                        .keyBy(t -> t.f0, Types.INT)
                        .enableAsyncState()
                        .window(TumblingEventTimeWindows.of(Duration.ofMillis(windowMs)))
                        .reduce((x, y) -> Tuple3.of(x.f0, x.f1, x.f2 + y.f2))
                        .executeAndCollect("windows");
        Map<String, Long> actual = new HashMap<>();
        try (results) {
            while (results.hasNext()) {
                Tuple3<Integer, Long, Long> t = results.next();
                assertThat(actual.put(t.f0 + "@" + t.f1, t.f2)).as("window fired twice").isNull();
            }
        }
        assertThat(actual).isEqualTo(expected);
    }

    /** Counts per key in a value state with time-to-live (values wrapped by Flink's TTL layer). */
    static final class TtlCount extends KeyedProcessFunction<Integer, Long, Tuple2<Integer, Long>> {
        private static final long serialVersionUID = 1L;
        private transient org.apache.flink.api.common.state.v2.ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            org.apache.flink.api.common.state.v2.ValueStateDescriptor<Long> descriptor =
                    new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>(
                            "ttl-count", Types.LONG);
            descriptor.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofDays(1)).build());
            count = getRuntimeContext().getState(descriptor);
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<Tuple2<Integer, Long>> out) {
            count.asyncValue()
                    .thenCompose(
                            c -> {
                                long next = c == null ? 1 : c + 1;
                                return count.asyncUpdate(next)
                                        .thenAccept(
                                                v ->
                                                        out.collect(
                                                                Tuple2.of(
                                                                        ctx.getCurrentKey(),
                                                                        next)));
                            });
        }
    }

    @Test
    void stateWithTimeToLive(@TempDir Path primary) throws Exception {
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(config(primary));
        env.setParallelism(PARALLELISM);
        List<Tuple2<Integer, Long>> results =
                CollectFirst.collect(
                        env.fromSequence(0, 9_999)
                                .keyBy(i -> (int) (i % 100), Types.INT)
                                .enableAsyncState()
                                .process(new TtlCount())
                                .returns(Types.TUPLE(Types.INT, Types.LONG)),
                        10_000);
        Map<Integer, Long> max = new HashMap<>();
        results.forEach(t -> max.merge(t.f0, t.f1, Math::max));
        assertThat(results).hasSize(10_000);
        assertThat(max).hasSize(100).allSatisfy((k, n) -> assertThat(n).isEqualTo(100L));
    }
}
