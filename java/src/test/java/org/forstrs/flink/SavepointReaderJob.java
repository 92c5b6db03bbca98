package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The job {@code StateProcessorApiITCase} reads back with Flink's State Processor API and the
 * savepoint SQL connector: numbers {@code 0..n-1} from one source subtask, keyed by {@code "k" + i
 * % KEYS} into an operator with State V2 ({@code count}, list {@code seen}, map {@code by-mod};
 * async state) and one with State V1 (POJO value {@code last}, list {@code v1-seen}, map {@code
 * v1-map}). The readers here use V1 descriptors of the same names for both operators and render
 * each entry as {@code "state|key|user key|value"} (user key {@code -} outside maps); {@link
 * #expected} is what they must return after the first {@code n} numbers.
 */
final class SavepointReaderJob {

    static final int KEYS = 20;
    static final String V2_UID = "spa-v2";
    static final String V1_UID = "spa-v1";

    private SavepointReaderJob() {}

    /**
     * Adds the job to {@code env}; without {@code withAsyncState} only the V1 operator (a job
     * Flink can take canonical savepoints of: it refuses them for async state operators).
     */
    static void build(
            StreamExecutionEnvironment env, String run, long records, boolean withAsyncState) {
        DataStream<Long> numbers = PacedSequence.of(env, run, records, 200).setParallelism(1);
        if (withAsyncState) {
            numbers.keyBy(SavepointReaderJob::key)
                    .enableAsyncState()
                    .process(new V2State())
                    .uid(V2_UID)
                    .name("state v2")
                    .returns(Types.LONG)
                    .sinkTo(new DiscardingSink<>());
        }
        numbers.keyBy(SavepointReaderJob::key)
                .process(new V1State())
                .uid(V1_UID)
                .name("state v1")
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());
    }

    static String key(long i) {
        return "k" + i % KEYS;
    }

    /** The entries of the V2 operator's states after the first {@code n} numbers, sorted. */
    static List<String> expectedV2(long n) {
        List<String> lines = new ArrayList<>();
        forEachKey(
                n,
                (k, numbers) -> {
                    lines.add("count|" + k + "|-|" + numbers.size());
                    lines.add("seen|" + k + "|-|" + numbers);
                    Map<String, Long> byMod = new TreeMap<>();
                    numbers.forEach(i -> byMod.put("m" + i % 3, i));
                    byMod.forEach((m, i) -> lines.add("by-mod|" + k + "|" + m + "|" + i));
                });
        return sorted(lines);
    }

    /** The entries of the V1 operator's states after the first {@code n} numbers, sorted. */
    static List<String> expectedV1(long n) {
        List<String> lines = new ArrayList<>();
        forEachKey(
                n,
                (k, numbers) -> {
                    long last = numbers.get(numbers.size() - 1);
                    lines.add("last|" + k + "|-|" + new Point(last));
                    lines.add("v1-seen|" + k + "|-|" + numbers);
                    Map<Long, String> map = new TreeMap<>();
                    numbers.forEach(i -> map.put(i % 4, "x" + i));
                    map.forEach((m, x) -> lines.add("v1-map|" + k + "|" + m + "|" + x));
                });
        return sorted(lines);
    }

    /** Each key with the numbers it received, in order. */
    private static void forEachKey(
            long n, java.util.function.BiConsumer<String, List<Long>> action) {
        Map<String, List<Long>> byKey = new TreeMap<>();
        for (long i = 0; i < n; i++) {
            byKey.computeIfAbsent(key(i), k -> new ArrayList<>()).add(i);
        }
        byKey.forEach(action);
    }

    static List<String> sorted(List<String> lines) {
        List<String> copy = new ArrayList<>(lines);
        copy.sort(String::compareTo);
        return copy;
    }

    /** A POJO value for the V1 state, (de)serialized by Flink's POJO serializer. */
    public static class Point {
        public long x;
        public String y;

        public Point() {}

        Point(long x) {
            this.x = x;
            this.y = "p" + x;
        }

        @Override
        public String toString() {
            return "Point(" + x + "," + y + ")";
        }
    }

    private static final class V2State extends KeyedProcessFunction<String, Long, Long> {
        private static final long serialVersionUID = 1L;
        private transient org.apache.flink.api.common.state.v2.ValueState<Long> count;
        private transient org.apache.flink.api.common.state.v2.ListState<Long> seen;
        private transient org.apache.flink.api.common.state.v2.MapState<String, Long> byMod;

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
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<Long> out) {
            count.asyncValue().thenCompose(c -> count.asyncUpdate(c == null ? 1 : c + 1));
            seen.asyncAdd(i);
            byMod.asyncPut("m" + i % 3, i);
        }
    }

    private static final class V1State extends KeyedProcessFunction<String, Long, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Point> last;
        private transient ListState<Long> seen;
        private transient MapState<Long, String> map;

        @Override
        public void open(OpenContext openContext) {
            last = getRuntimeContext().getState(lastDescriptor());
            seen = getRuntimeContext().getListState(seenDescriptor());
            map = getRuntimeContext().getMapState(mapDescriptor());
        }

        @Override
        public void processElement(Long i, Context ctx, Collector<Long> out) throws Exception {
            last.update(new Point(i));
            seen.add(i);
            map.put(i % 4, "x" + i);
        }
    }

    /** The V1 operator's descriptors, which its reader uses too. */
    private static ValueStateDescriptor<Point> lastDescriptor() {
        return new ValueStateDescriptor<>("last", Point.class);
    }

    private static ListStateDescriptor<Long> seenDescriptor() {
        return new ListStateDescriptor<>("v1-seen", Types.LONG);
    }

    private static MapStateDescriptor<Long, String> mapDescriptor() {
        return new MapStateDescriptor<>("v1-map", Types.LONG, Types.STRING);
    }

    /**
     * Reads the V2 operator's states through State V1 descriptors of the same names and types
     * (the State Processor API reads keyed state through the synchronous keyed backend).
     */
    static final class V2Reader extends KeyedStateReaderFunction<String, String> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;
        private transient ListState<Long> seen;
        private transient MapState<String, Long> byMod;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            seen = getRuntimeContext().getListState(new ListStateDescriptor<>("seen", Types.LONG));
            byMod =
                    getRuntimeContext()
                            .getMapState(
                                    new MapStateDescriptor<>("by-mod", Types.STRING, Types.LONG));
        }

        @Override
        public void readKey(String key, Context ctx, Collector<String> out) throws Exception {
            if (count.value() != null) {
                out.collect("count|" + key + "|-|" + count.value());
            }
            emitList("seen", key, seen, out);
            for (Map.Entry<String, Long> e : byMod.entries()) {
                out.collect("by-mod|" + key + "|" + e.getKey() + "|" + e.getValue());
            }
        }
    }

    /** Reads the V1 operator's states with the job's own descriptors. */
    static final class V1Reader extends KeyedStateReaderFunction<String, String> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Point> last;
        private transient ListState<Long> seen;
        private transient MapState<Long, String> map;

        @Override
        public void open(OpenContext openContext) {
            last = getRuntimeContext().getState(lastDescriptor());
            seen = getRuntimeContext().getListState(seenDescriptor());
            map = getRuntimeContext().getMapState(mapDescriptor());
        }

        @Override
        public void readKey(String key, Context ctx, Collector<String> out) throws Exception {
            if (last.value() != null) {
                out.collect("last|" + key + "|-|" + last.value());
            }
            emitList("v1-seen", key, seen, out);
            for (Map.Entry<Long, String> e : map.entries()) {
                out.collect("v1-map|" + key + "|" + e.getKey() + "|" + e.getValue());
            }
        }
    }

    private static void emitList(
            String name, String key, ListState<Long> list, Collector<String> out)
            throws Exception {
        List<Long> elements = new ArrayList<>();
        Iterable<Long> stored = list.get();
        if (stored != null) {
            stored.forEach(elements::add);
        }
        if (!elements.isEmpty()) {
            out.collect(name + "|" + key + "|-|" + elements);
        }
    }
}
