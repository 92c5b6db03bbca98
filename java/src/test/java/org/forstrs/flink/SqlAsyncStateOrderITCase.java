package org.forstrs.flink;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.asyncprocessing.operators.AbstractAsyncStateStreamOperator;
import org.apache.flink.runtime.asyncprocessing.operators.AbstractAsyncStateUdfStreamOperator;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.runtime.operators.aggregate.async.AsyncStateGroupAggFunction;
import org.apache.flink.table.runtime.operators.join.stream.asyncprocessing.AsyncStateStreamingJoinOperator;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SQL with async state operators ({@code table.exec.async-state.enabled}) on the ForSt-RS backend
 * with its default executor settings: a GROUP BY with COUNT, SUM, MAX, MIN straight over the input,
 * and the same aggregates over a regular join, repeated on fresh jobs. Each run's changelog must be
 * exact: every retraction equals the row last emitted for its key, counts go up by one per input
 * row, and the final table equals an independent computation in plain Java.
 */
class SqlAsyncStateOrderITCase {

    private static final int PARALLELISM = 2;
    private static final long ROWS = 300_000;
    private static final int KEYS = 1_000;
    private static final int RUNS = 10;
    private static final long SEED = 0x5EED_0DE5L;

    /** Query tags in the first column of the result. */
    private static final int DIRECT = 0;

    private static final int JOINED = 1;

    /**
     * Per query tag and key: COUNT(*), SUM(x), MAX(y), MIN(y), SUM(z). Five accumulators make the
     * accumulator row wide enough that its serialization takes a while.
     */
    private static final String QUERY =
            "SELECT "
                    + DIRECT
                    + " AS q, k, COUNT(*), SUM(v), MAX(v), MIN(v), SUM(v % 1000)"
                    + " FROM orders GROUP BY k"
                    + " UNION ALL SELECT "
                    + JOINED
                    + " AS q, o.k, COUNT(*), SUM(o.v * d.w), MAX(o.v + d.w), MIN(o.v + d.w),"
                    + " SUM(d.w) FROM orders AS o JOIN dims AS d ON o.k = d.dk GROUP BY o.k";

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    /** A 64-bit mix of (SEED, i): deterministic pseudo-random input computable without Flink. */
    static long mix(long i) {
        long z = SEED + (i + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static int keyOf(long row) {
        return (int) Math.floorMod(mix(row), (long) KEYS);
    }

    static long valueOf(long row) {
        return Math.floorMod(mix(row + ROWS), 1_000_000L);
    }

    /** The dimension row of key {@code k}: weight in [1, 1000]. */
    static long weightOf(int k) {
        return 1 + Math.floorMod(mix(k + 2 * ROWS), 1_000L);
    }

    /** Expected final (count, sum, max) per query tag and key. */
    static Map<List<Long>, List<Long>> expectedTable() {
        Map<List<Long>, List<Long>> table = new HashMap<>();
        for (long row = 0; row < ROWS; row++) {
            int k = keyOf(row);
            long v = valueOf(row);
            long w = weightOf(k);
            accumulate(table, DIRECT, k, v, v, v % 1000);
            accumulate(table, JOINED, k, v * w, v + w, w);
        }
        return table;
    }

    private static void accumulate(
            Map<List<Long>, List<Long>> table, int q, int k, long x, long y, long z) {
        table.merge(
                List.of((long) q, (long) k),
                List.of(1L, x, y, y, z),
                (a, b) ->
                        List.of(
                                a.get(0) + b.get(0),
                                a.get(1) + b.get(1),
                                Math.max(a.get(2), b.get(2)),
                                Math.min(a.get(3), b.get(3)),
                                a.get(4) + b.get(4)));
    }

    private static StreamExecutionEnvironment environment(Path primary) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", primary.toUri().toString());
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        return env;
    }

    /** The query's changelog as a stream; the inputs are bounded, so the job ends. */
    private static DataStream<Row> changelog(StreamExecutionEnvironment env, boolean asyncState) {
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED, asyncState);
        DataStream<Tuple2<Integer, Long>> orders =
                env.fromSequence(0, ROWS - 1)
                        .map(row -> Tuple2.of(keyOf(row), valueOf(row)))
                        .returns(Types.TUPLE(Types.INT, Types.LONG));
        DataStream<Tuple2<Integer, Long>> dims =
                env.fromSequence(0, KEYS - 1)
                        .map(k -> Tuple2.of(k.intValue(), weightOf(k.intValue())))
                        .returns(Types.TUPLE(Types.INT, Types.LONG));
        tEnv.createTemporaryView("orders", tEnv.fromDataStream(orders).as("k", "v"));
        tEnv.createTemporaryView("dims", tEnv.fromDataStream(dims).as("dk", "w"));
        return tEnv.toChangelogStream(tEnv.sqlQuery(QUERY));
    }

    /**
     * The keyed operators of the plan: the class of the operator, or of its function for async
     * state operators that run a user function (the group aggregation), and whether it is an async
     * state operator.
     */
    private static List<String> keyedOperators(boolean asyncState, Path primary) {
        StreamExecutionEnvironment env = environment(primary);
        changelog(env, asyncState);
        List<String> keyed = new ArrayList<>();
        for (StreamNode node : env.getStreamGraph(false).getStreamNodes()) {
            if (node.getStateKeySerializer() == null) {
                continue;
            }
            assertThat(node.getOperatorFactory())
                    .as("keyed operator %s", node.getOperatorName())
                    .isInstanceOf(SimpleOperatorFactory.class);
            StreamOperator<?> operator = node.getOperator();
            String name =
                    operator instanceof AbstractAsyncStateUdfStreamOperator
                            ? ((AbstractAsyncStateUdfStreamOperator<?, ?>) operator)
                                    .getUserFunction()
                                    .getClass()
                                    .getSimpleName()
                            : operator.getClass().getSimpleName();
            keyed.add(
                    name + (operator instanceof AbstractAsyncStateStreamOperator ? " async" : ""));
        }
        return keyed;
    }

    @Test
    void planUsesTheAsyncStateOperators(@TempDir Path primary) {
        // the two GROUP BYs and the join, nothing else keeps keyed state
        assertThat(keyedOperators(true, primary))
                .containsExactlyInAnyOrder(
                        AsyncStateGroupAggFunction.class.getSimpleName() + " async",
                        AsyncStateGroupAggFunction.class.getSimpleName() + " async",
                        AsyncStateStreamingJoinOperator.class.getSimpleName() + " async");
        // the check tells them apart: without the option the same plan has synchronous ones
        assertThat(keyedOperators(false, primary))
                .hasSize(3)
                .allSatisfy(name -> assertThat(name).doesNotContain("Async"));
    }

    /**
     * Applies one run's changelog to a table and checks it on the way: an insert has count 1 and no
     * row before it, a retraction equals the row last emitted for its key, an update follows its
     * retraction and has the count one higher. Plain Java, fed by {@link InJvmRowSink} at
     * parallelism 1, so every key's rows arrive in the order the aggregation emitted them.
     */
    static final class ChangelogCheck implements Consumer<Row> {
        private final Map<List<Long>, List<Long>> table = new HashMap<>();
        private final Map<List<Long>, List<Long>> lastEmitted = new HashMap<>();
        private final List<String> examples = new ArrayList<>();
        private long violations;
        private long rows;

        private void violation(String what) {
            violations++;
            if (examples.size() < 10) {
                examples.add(what);
            }
        }

        @Override
        public synchronized void accept(Row row) {
            rows++;
            List<Long> key =
                    List.of(
                            ((Number) row.getField(0)).longValue(),
                            ((Number) row.getField(1)).longValue());
            List<Long> value = new ArrayList<>(row.getArity() - 2);
            for (int f = 2; f < row.getArity(); f++) {
                value.add((Long) row.getField(f));
            }
            List<Long> last = lastEmitted.get(key);
            switch (row.getKind()) {
                case INSERT:
                    if (last != null || !Objects.equals(value.get(0), 1L)) {
                        violation("+I " + key + value + " after " + last);
                    }
                    table.put(key, value);
                    lastEmitted.put(key, value);
                    break;
                case UPDATE_BEFORE:
                    List<Long> current = table.remove(key);
                    if (!value.equals(current)) {
                        violation("-U " + key + value + " retracts " + current);
                    }
                    break;
                case UPDATE_AFTER:
                    boolean unretracted = table.containsKey(key);
                    if (unretracted
                            || last == null
                            || !Objects.equals(value.get(0), last.get(0) + 1)) {
                        violation(
                                "+U "
                                        + key
                                        + value
                                        + " after "
                                        + last
                                        + (unretracted ? " without -U" : ""));
                    }
                    table.put(key, value);
                    lastEmitted.put(key, value);
                    break;
                default:
                    violation(row.getKind().shortString() + " " + key + value);
                    table.remove(key);
            }
        }

        /** Violations found, including a final table that differs from {@code expected}. */
        synchronized long finish(Map<List<Long>, List<Long>> expected) {
            if (!table.equals(expected)) {
                long wrong =
                        expected.entrySet().stream()
                                .filter(e -> !e.getValue().equals(table.get(e.getKey())))
                                .count();
                long extra = table.keySet().stream().filter(k -> !expected.containsKey(k)).count();
                violation(
                        String.format(
                                "final table: %d rows, %d expected, %d wrong or missing, %d extra",
                                table.size(), expected.size(), wrong, extra));
            }
            return violations;
        }

        synchronized String summary() {
            return rows + " changelog rows, " + violations + " violations " + examples;
        }
    }

    /** Checks of the runs in progress, by run id (the MiniCluster runs in this JVM). */
    private static final Map<String, ChangelogCheck> CHECKS = new ConcurrentHashMap<>();

    @Test
    void everyRunIsExact(@TempDir Path primary) throws Exception {
        Map<List<Long>, List<Long>> expected = expectedTable();
        assertThat(expected).hasSize(2 * KEYS);
        List<String> failedRuns = new ArrayList<>();
        for (int run = 0; run < RUNS; run++) {
            String runId = "run-" + run;
            ChangelogCheck check = new ChangelogCheck();
            CHECKS.put(runId, check);
            long started = System.nanoTime();
            try {
                StreamExecutionEnvironment env = environment(primary.resolve(runId));
                changelog(env, true)
                        .sinkTo(new InJvmRowSink(runId, id -> CHECKS.get(id)))
                        .setParallelism(1);
                env.execute("sql async state order, " + runId);
            } finally {
                CHECKS.remove(runId);
            }
            long violations = check.finish(expected);
            String summary =
                    String.format(
                            "%s: %.1f s, %s",
                            runId, (System.nanoTime() - started) / 1e9, check.summary());
            System.out.println(summary);
            if (violations > 0) {
                failedRuns.add(summary);
            }
        }
        assertThat(failedRuns).as("runs with a wrong changelog (of %d)", RUNS).isEmpty();
    }
}
