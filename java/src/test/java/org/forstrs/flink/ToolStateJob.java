package org.forstrs.flink;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

import org.forstrs.tools.JsonText;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The job {@code ForStToolITCase} looks at: numbers {@code 0..n-1} from one source subtask,
 * keyed by {@code "k" + i % KEYS} into an operator with State V2 ({@code count}, list {@code
 * seen}, map {@code by-mod}, reducing {@code sum}, aggregating {@code avg}) and one with State V1
 * (POJO value {@code last}, list {@code v1-seen}, map {@code v1-map}, reducing {@code v1-sum},
 * aggregating {@code v1-avg}, a value with a TTL, {@code ttl-last}, and event-time timers that
 * never fire, as no watermark comes), and SQL over the same numbers as rows {@code (k, v)}: a
 * {@code GROUP BY k} aggregation and a regular join of the rows with those of {@code v % 5 == 0}
 * on {@code k} (State V1 operators, with {@code RowData} keys and values). {@link #expected} is
 * what each DataStream state but {@code ttl-last} (whose values carry the time of their last
 * write) holds after the first {@code n} numbers, {@link #expectedSql} the SQL operators' states
 * and {@link #expectedTimers} the timers, rendered as the tool renders them.
 */
final class ToolStateJob {

    static final int KEYS = 50;
    static final String V2_UID = "v2-state";
    static final String V1_UID = "v1-state";
    /** The V1 operator's timer queue of event-time timers. */
    static final String EVENT_TIMERS = "_timer_state/event_user-timers";
    /** Number i sets an event-time timer for key(i) at TIMER_BASE + i % 7. */
    static final long TIMER_BASE = 1_000_000;
    /** The SQL operators' names start with these; their states (State V1, RowData). */
    static final String AGGREGATE = "GroupAggregate";
    static final String JOIN = "Join";

    private ToolStateJob() {}

    static void build(StreamExecutionEnvironment env, String run, long records) {
        DataStream<Long> numbers =
                PacedSequence.of(env, run, records, 500).setParallelism(1);
        numbers.keyBy(ToolStateJob::key)
                .enableAsyncState()
                .process(new V2State())
                .uid(V2_UID)
                .name("state v2")
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());
        numbers.keyBy(ToolStateJob::key)
                .process(new V1State())
                .uid(V1_UID)
                .name("state v1")
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());
        sql(env, numbers);
    }

    private static void sql(StreamExecutionEnvironment env, DataStream<Long> numbers) {
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);
        tables.getConfig().set(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED, false);
        tables.createTemporaryView(
                "numbers",
                numbers.map(i -> Row.of(key(i), i))
                        .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.STRING, Types.LONG))
                        .name("rows"));
        for (String query :
                List.of(
                        "SELECT k, COUNT(*) AS c, SUM(v) AS s FROM numbers GROUP BY k",
                        "SELECT n.v, f.v FROM numbers AS n JOIN (SELECT k, v FROM numbers"
                                + " WHERE MOD(v, 5) = 0) AS f ON n.k = f.k")) {
            tables.toChangelogStream(tables.sqlQuery(query)).sinkTo(new DiscardingSink<>());
        }
    }

    static String key(long i) {
        return "k" + i % KEYS;
    }

    /**
     * State name to the entries after the first {@code n} numbers, each "key|user key|value" in
     * the tool's JSON (user key "-" outside maps).
     */
    static Map<String, List<String>> expected(long n) {
        Map<String, Long> count = new TreeMap<>();
        Map<String, List<Long>> seen = new TreeMap<>();
        Map<String, Long> byMod = new TreeMap<>();
        Map<String, Long> sum = new TreeMap<>();
        Map<String, long[]> avg = new TreeMap<>();
        Map<String, Long> last = new TreeMap<>();
        Map<String, String> v1Map = new TreeMap<>();
        for (long i = 0; i < n; i++) {
            String k = key(i);
            count.merge(k, 1L, Long::sum);
            seen.computeIfAbsent(k, x -> new ArrayList<>()).add(i);
            byMod.put(k + "|\"m" + i % 3 + "\"", i);
            sum.merge(k, i, Long::sum);
            long[] acc = avg.computeIfAbsent(k, x -> new long[2]);
            acc[0] += i;
            acc[1]++;
            last.put(k, i);
            v1Map.put(k + "|" + i % 4, "\"x" + i + "\"");
        }
        Map<String, List<String>> states = new TreeMap<>();
        states.put("count", lines(count, v -> Long.toString(v)));
        states.put("seen", lines(seen, JsonText::of));
        states.put("v1-seen", lines(seen, JsonText::of));
        for (String prefix : List.of("", "v1-")) {
            states.put(prefix + "sum", lines(sum, v -> Long.toString(v)));
            states.put(prefix + "avg", lines(avg, a -> "[" + a[0] + "," + a[1] + "]"));
        }
        states.put("last", lines(last, i -> "{\"x\":" + i + ",\"y\":\"p" + i + "\"}"));
        List<String> mapLines = new ArrayList<>();
        byMod.forEach((k, v) -> mapLines.add(quoteKey(k) + "|" + v));
        states.put("by-mod", sorted(mapLines));
        List<String> v1Lines = new ArrayList<>();
        v1Map.forEach((k, v) -> v1Lines.add(quoteKey(k) + "|" + v));
        states.put("v1-map", sorted(v1Lines));
        return states;
    }

    /**
     * The SQL operators' states after the first {@code n} numbers: operator name prefix, then
     * state name, to "key|user key|value" lines ({@link #AGGREGATE}'s accumulators are COUNT(*)
     * and SUM(v); a join side's map holds each of its rows with the row's count).
     */
    static Map<String, Map<String, List<String>>> expectedSql(long n) {
        Map<String, long[]> groups = new TreeMap<>();
        List<String> left = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            long[] group = groups.computeIfAbsent(key(i), k -> new long[2]);
            group[0]++;
            group[1] += i;
            left.add(row(key(i)) + "|" + row(key(i), i) + "|1");
        }
        List<String> accumulators = new ArrayList<>();
        groups.forEach((k, g) -> accumulators.add(row(k) + "|-|[" + g[0] + "," + g[1] + "]"));
        List<String> right = new ArrayList<>();
        for (long i = 0; i < n; i += 5) {
            right.add(row(key(i)) + "|" + row(key(i), i) + "|1");
        }
        Map<String, Map<String, List<String>>> operators = new TreeMap<>();
        operators.put(AGGREGATE, Map.of("accState", sorted(accumulators)));
        operators.put(JOIN, Map.of("left-records", sorted(left), "right-records", sorted(right)));
        return operators;
    }

    /** The V1 operator's event-time timers after the first {@code n} numbers: "key|timestamp". */
    static List<String> expectedTimers(long n) {
        TreeSet<String> timers = new TreeSet<>();
        for (long i = 0; i < n; i++) {
            timers.add(JsonText.string(key(i)) + "|" + (TIMER_BASE + i % 7));
        }
        return sorted(new ArrayList<>(timers));
    }

    /** A SQL row (k) or (k, v) as the tool renders it. */
    private static String row(Object... fields) {
        return JsonText.of(List.of(fields));
    }

    private static <V> List<String> lines(
            Map<String, V> values, java.util.function.Function<V, String> render) {
        List<String> out = new ArrayList<>();
        values.forEach((k, v) -> out.add(JsonText.string(k) + "|-|" + render.apply(v)));
        return sorted(out);
    }

    /** "k7|rest" to "\"k7\"|rest". */
    private static String quoteKey(String keyAndRest) {
        int bar = keyAndRest.indexOf('|');
        return JsonText.string(keyAndRest.substring(0, bar)) + keyAndRest.substring(bar);
    }

    static List<String> sorted(List<String> lines) {
        List<String> copy = new ArrayList<>(lines);
        copy.sort(String::compareTo);
        return copy;
    }

    /** A POJO value for the V1 state, decoded by Flink's POJO serializer. */
    public static class Point {
        public long x;
        public String y;

        public Point() {}

        Point(long x) {
            this.x = x;
            this.y = "p" + x;
        }
    }

    /** The mean of the numbers, with (sum, count) as its accumulator. */
    private static final class Average
            implements AggregateFunction<Long, Tuple2<Long, Long>, Double> {
        private static final long serialVersionUID = 1L;
        static final TypeInformation<Tuple2<Long, Long>> TYPE =
                Types.TUPLE(Types.LONG, Types.LONG);

        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Long value, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + value, acc.f1 + 1);
        }

        @Override
        public Double getResult(Tuple2<Long, Long> acc) {
            return acc.f1 == 0 ? null : (double) acc.f0 / acc.f1;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    private static final class V2State extends KeyedProcessFunction<String, Long, Long> {
        private static final long serialVersionUID = 1L;
        private transient org.apache.flink.api.common.state.v2.ValueState<Long> count;
        private transient org.apache.flink.api.common.state.v2.ListState<Long> seen;
        private transient org.apache.flink.api.common.state.v2.MapState<String, Long> byMod;
        private transient org.apache.flink.api.common.state.v2.ReducingState<Long> sum;
        private transient org.apache.flink.api.common.state.v2.AggregatingState<Long, Double> avg;

        @Override
        public void open(OpenContext openContext) {
            count =
                    getRuntimeContext()
                            .getState(
                                    new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>(
                                            "count", Types.LONG));
            seen =
                    getRuntimeContext()
                            .getListState(
                                    new org.apache.flink.api.common.state.v2.ListStateDescriptor<>(
                                            "seen", Types.LONG));
            byMod =
                    getRuntimeContext()
                            .getMapState(
                                    new org.apache.flink.api.common.state.v2.MapStateDescriptor<>(
                                            "by-mod", Types.STRING, Types.LONG));
            sum =
                    getRuntimeContext()
                            .getReducingState(
                                    new org.apache.flink.api.common.state.v2
                                            .ReducingStateDescriptor<>(
                                            "sum", Long::sum, Types.LONG));
            avg =
                    getRuntimeContext()
                            .getAggregatingState(
                                    new org.apache.flink.api.common.state.v2
                                            .AggregatingStateDescriptor<>(
                                            "avg", new Average(), Average.TYPE));
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<Long> out) {
            count.asyncValue().thenCompose(c -> count.asyncUpdate(c == null ? 1 : c + 1));
            seen.asyncAdd(i);
            byMod.asyncPut("m" + i % 3, i);
            sum.asyncAdd(i);
            avg.asyncAdd(i);
        }
    }

    private static final class V1State extends KeyedProcessFunction<String, Long, Long> {
        private static final long serialVersionUID = 1L;
        private transient org.apache.flink.api.common.state.ValueState<Point> last;
        private transient org.apache.flink.api.common.state.ListState<Long> seen;
        private transient org.apache.flink.api.common.state.MapState<Long, String> map;
        private transient org.apache.flink.api.common.state.ReducingState<Long> sum;
        private transient org.apache.flink.api.common.state.AggregatingState<Long, Double> avg;
        private transient org.apache.flink.api.common.state.ValueState<Long> ttlLast;

        @Override
        public void open(OpenContext openContext) {
            last =
                    getRuntimeContext()
                            .getState(new ValueStateDescriptor<>("last", Point.class));
            seen =
                    getRuntimeContext()
                            .getListState(
                                    new org.apache.flink.api.common.state.ListStateDescriptor<>(
                                            "v1-seen", Types.LONG));
            map =
                    getRuntimeContext()
                            .getMapState(
                                    new MapStateDescriptor<>("v1-map", Types.LONG, Types.STRING));
            ValueStateDescriptor<Long> ttl = new ValueStateDescriptor<>("ttl-last", Types.LONG);
            ttl.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofDays(1)).build());
            ttlLast = getRuntimeContext().getState(ttl);
            sum =
                    getRuntimeContext()
                            .getReducingState(
                                    new ReducingStateDescriptor<>(
                                            "v1-sum", Long::sum, Types.LONG));
            avg =
                    getRuntimeContext()
                            .getAggregatingState(
                                    new AggregatingStateDescriptor<>(
                                            "v1-avg", new Average(), Average.TYPE));
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<Long> out) throws Exception {
            last.update(new Point(i));
            seen.add(i);
            map.put(i % 4, "x" + i);
            sum.add(i);
            avg.add(i);
            ttlLast.update(i);
            ctx.timerService().registerEventTimeTimer(TIMER_BASE + i % 7);
        }
    }
}
