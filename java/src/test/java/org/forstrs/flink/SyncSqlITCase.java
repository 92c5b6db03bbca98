package org.forstrs.flink;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.asyncprocessing.operators.AbstractAsyncStateStreamOperator;
import org.apache.flink.runtime.asyncprocessing.operators.AbstractAsyncStateUdfStreamOperator;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.AbstractUdfStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A SQL job with the stateful operators most jobs use, on ForSt-RS: GROUP BY aggregates, a
 * regular join, deduplication with ROW_NUMBER (keep the last row per key by event time, keep the
 * first per key by processing time) and an event-time tumbling window aggregate. It runs once with
 * {@code table.exec.async-state.enabled: false} (every keyed operator on the synchronous keyed
 * backend) and once with {@code true} (operators with an async variant on the async keyed backend,
 * the others on the synchronous one, in the same job). Checkpoints run during both runs. Each
 * query's changelog is applied in a sink and the final table must equal a computation in plain
 * Java.
 */
class SyncSqlITCase {

    private static final int PARALLELISM = 2;
    private static final long ROWS = 60_000;
    /** 3,000 rows per input subtask between two completed checkpoints: 10 checkpoints' worth. */
    private static final int ROWS_PER_CHECKPOINT = 6_000;
    private static final int KEYS = 200;
    private static final long SEED = 0x5EED_5C1L;

    /** Event time of row r: 2 ms apart, in order (so no row is late for the window). */
    private static final long MS_PER_ROW = 2;

    private static final long WINDOW_MS = 2_000;

    private static final Map<String, String> QUERIES = new LinkedHashMap<>();

    static {
        QUERIES.put("groupBy", "SELECT k, COUNT(*), SUM(v), MAX(v) FROM orders GROUP BY k");
        QUERIES.put(
                "join",
                "SELECT o.r, o.k, o.v * d.w FROM orders AS o JOIN dims AS d ON o.k = d.dk");
        QUERIES.put(
                "lastByEventTime",
                "SELECT k, r, v FROM (SELECT k, r, v, ROW_NUMBER() OVER"
                        + " (PARTITION BY k ORDER BY ts DESC) AS rn FROM orders) WHERE rn = 1");
        QUERIES.put(
                "firstByProcTime",
                "SELECT k, r, v FROM (SELECT k, r, v, ROW_NUMBER() OVER"
                        + " (PARTITION BY k ORDER BY pt ASC) AS rn FROM orders) WHERE rn = 1");
        QUERIES.put(
                "tumble",
                "SELECT k, window_start, COUNT(*), SUM(v) FROM TABLE(TUMBLE(TABLE orders,"
                        + " DESCRIPTOR(ts), INTERVAL '"
                        + WINDOW_MS / 1000
                        + "' SECOND)) GROUP BY k, window_start, window_end");
    }

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

    /**
     * The key of row r: even keys in the first half of the rows, odd keys in the second. The
     * input's two subtasks read one half each, in order, and the planner's operators up to the
     * first exchange run in the same chains, so each key's rows reach their operators in row
     * order: "first by processing time" is the key's first row.
     */
    static int keyOf(long row) {
        return 2 * (int) Math.floorMod(mix(row), (long) KEYS / 2) + (row < ROWS / 2 ? 0 : 1);
    }

    static long valueOf(long row) {
        return Math.floorMod(mix(row + ROWS), 1_000_000L);
    }

    static long weightOf(int k) {
        return 1 + Math.floorMod(mix(k + 2 * ROWS), 1_000L);
    }

    /** Every query's final table computed in plain Java, as rows of field values. */
    static Map<String, List<List<Object>>> expectedTables() {
        Map<Integer, long[]> groups = new HashMap<>(); // count, sum, max
        Map<Integer, Long> last = new HashMap<>();
        Map<Integer, Long> first = new HashMap<>();
        Map<List<Object>, long[]> windows = new HashMap<>(); // count, sum
        List<List<Object>> join = new ArrayList<>();
        for (long r = 0; r < ROWS; r++) {
            int k = keyOf(r);
            long v = valueOf(r);
            long[] g = groups.computeIfAbsent(k, key -> new long[] {0, 0, Long.MIN_VALUE});
            g[0]++;
            g[1] += v;
            g[2] = Math.max(g[2], v);
            join.add(List.of(r, k, v * weightOf(k)));
            last.put(k, r);
            first.putIfAbsent(k, r);
            long start = r * MS_PER_ROW / WINDOW_MS * WINDOW_MS;
            long[] w =
                    windows.computeIfAbsent(
                            List.of(
                                    k,
                                    LocalDateTime.ofEpochSecond(
                                            start / 1000, 0, ZoneOffset.UTC)),
                            key -> new long[2]);
            w[0]++;
            w[1] += v;
        }
        Map<String, List<List<Object>>> tables = new HashMap<>();
        List<List<Object>> groupBy = new ArrayList<>();
        groups.forEach((k, g) -> groupBy.add(List.of(k, g[0], g[1], g[2])));
        tables.put("groupBy", groupBy);
        tables.put("join", join);
        List<List<Object>> lastRows = new ArrayList<>();
        last.forEach((k, r) -> lastRows.add(List.of(k, r, valueOf(r))));
        tables.put("lastByEventTime", lastRows);
        List<List<Object>> firstRows = new ArrayList<>();
        first.forEach((k, r) -> firstRows.add(List.of(k, r, valueOf(r))));
        tables.put("firstByProcTime", firstRows);
        List<List<Object>> tumble = new ArrayList<>();
        windows.forEach((kw, w) -> tumble.add(List.of(kw.get(0), kw.get(1), w[0], w[1])));
        tables.put("tumble", tumble);
        return tables;
    }

    private static StreamExecutionEnvironment environment(Path dir) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", dir.resolve("primary").toUri().toString());
        config.setString("state.backend.forst.local-dir", dir.resolve("local").toString());
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dir.resolve("cp").toUri().toString());
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(200));
        // Nothing may fail here: a failure (a declined checkpoint too) fails the test at once.
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        return env;
    }

    /** Completed checkpoints seen by the input subtasks, per run. */
    private static final Map<String, AtomicInteger> CHECKPOINTS = new ConcurrentHashMap<>();

    /** Passes rows on and counts the completed checkpoints its subtasks are told of, per run. */
    static final class CountCheckpoints implements MapFunction<Row, Row>, CheckpointListener {
        private static final long serialVersionUID = 1L;
        private final String run;

        CountCheckpoints(String run) {
            this.run = run;
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            CHECKPOINTS.get(run).incrementAndGet();
        }

        @Override
        public Row map(Row row) {
            return row;
        }
    }

    /** Adds every query of {@link #QUERIES} to {@code env}, each with a {@link InJvmRowSink}. */
    private static void addQueries(StreamExecutionEnvironment env, String run, boolean asyncState) {
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED, asyncState);
        tEnv.getConfig().setLocalTimeZone(ZoneOffset.UTC);
        TypeInformation<Row> orderType =
                Types.ROW_NAMED(
                        new String[] {"r", "k", "v", "t"},
                        Types.LONG,
                        Types.INT,
                        Types.LONG,
                        Types.LONG);
        // Paced by checkpoints: the operators hold state at every checkpoint of the input.
        DataStream<Row> orders =
                PacedSequence.of(
                                env,
                                run,
                                ROWS,
                                ROWS_PER_CHECKPOINT,
                                r -> Row.of(r, keyOf(r), valueOf(r), r * MS_PER_ROW),
                                orderType)
                        .map(new CountCheckpoints(run))
                        .returns(orderType);
        DataStream<Row> dims =
                env.fromSequence(0, KEYS - 1)
                        .map(k -> Row.of(k.intValue(), weightOf(k.intValue())))
                        .returns(
                                Types.ROW_NAMED(
                                        new String[] {"dk", "w"}, Types.INT, Types.LONG));
        tEnv.createTemporaryView(
                "orders",
                tEnv.fromDataStream(
                        orders,
                        Schema.newBuilder()
                                .columnByExpression("ts", "TO_TIMESTAMP_LTZ(t, 3)")
                                .columnByExpression("pt", "PROCTIME()")
                                .watermark("ts", "ts - INTERVAL '1' SECOND")
                                .build()));
        tEnv.createTemporaryView("dims", tEnv.fromDataStream(dims));
        QUERIES.forEach(
                (name, sql) -> {
                    Table table = tEnv.sqlQuery(sql);
                    tEnv.toChangelogStream(table)
                            .sinkTo(new InJvmRowSink(run + "/" + name, id -> TABLES.get(id)))
                            .setParallelism(1)
                            .name("check " + name);
                });
    }

    /**
     * The keyed operators of the job's stream graph: the class of the operator, or of its
     * function where it runs one, with " async" for async state operators.
     */
    private static List<String> keyedOperators(StreamExecutionEnvironment env) {
        List<String> keyed = new ArrayList<>();
        for (StreamNode node : env.getStreamGraph(false).getStreamNodes()) {
            if (node.getStateKeySerializer() == null) {
                continue;
            }
            Class<?> operatorClass;
            String name;
            if (node.getOperatorFactory() instanceof SimpleOperatorFactory) {
                StreamOperator<?> operator = node.getOperator();
                operatorClass = operator.getClass();
                if (operator instanceof AbstractAsyncStateUdfStreamOperator) {
                    name =
                            ((AbstractAsyncStateUdfStreamOperator<?, ?>) operator)
                                    .getUserFunction()
                                    .getClass()
                                    .getSimpleName();
                } else if (operator instanceof AbstractUdfStreamOperator) {
                    name =
                            ((AbstractUdfStreamOperator<?, ?>) operator)
                                    .getUserFunction()
                                    .getClass()
                                    .getSimpleName();
                } else {
                    name = operatorClass.getSimpleName();
                }
            } else {
                operatorClass =
                        node.getOperatorFactory()
                                .getStreamOperatorClass(SyncSqlITCase.class.getClassLoader());
                name = operatorClass.getSimpleName();
            }
            boolean async = AbstractAsyncStateStreamOperator.class.isAssignableFrom(operatorClass);
            keyed.add(name + (async ? " async" : ""));
        }
        return keyed;
    }

    private static final Map<String, MaterializedTable> TABLES = new ConcurrentHashMap<>();

    /** Runs the job; returns its keyed operators, after checking every query's final table. */
    private static List<String> runExact(Path dir, boolean asyncState) throws Exception {
        String run = "sql-" + asyncState;
        CHECKPOINTS.put(run, new AtomicInteger());
        QUERIES.keySet().forEach(name -> TABLES.put(run + "/" + name, new MaterializedTable()));
        StreamExecutionEnvironment env = environment(dir.resolve(run));
        addQueries(env, run, asyncState);
        List<String> keyed = keyedOperators(env);
        long started = System.nanoTime();
        env.execute("sql on forst-rs, async state " + asyncState);
        System.out.printf(
                "%s: %.1f s, %d checkpoints, keyed operators %s%n",
                run, (System.nanoTime() - started) / 1e9, CHECKPOINTS.get(run).get(), keyed);

        // the paced input waited for checkpoints between its rows, on both subtasks
        assertThat(CHECKPOINTS.get(run).get()).isGreaterThanOrEqualTo(2 * PARALLELISM);
        Map<String, List<List<Object>>> expected = expectedTables();
        for (String name : QUERIES.keySet()) {
            MaterializedTable table = TABLES.remove(run + "/" + name);
            Map<List<Object>, Integer> expectedRows = new HashMap<>();
            expected.get(name).forEach(row -> expectedRows.merge(row, 1, Integer::sum));
            assertThat(table.violations()).as("%s: retractions of absent rows", name).isEmpty();
            assertThat(table.rows()).as("%s: final table", name).isEqualTo(expectedRows);
            System.out.printf(
                    "  %s: %d changelog rows, %d final rows%n",
                    name, table.changes(), expectedRows.size());
        }
        return keyed;
    }

    @Test
    void everyKeyedOperatorOnTheSynchronousBackend(@TempDir Path dir) throws Exception {
        assertThat(runExact(dir, false))
                .containsExactlyInAnyOrder(
                        "GroupAggFunction",
                        "StreamingJoinOperator",
                        "RowTimeDeduplicateFunction",
                        "ProcTimeDeduplicateKeepFirstRowFunction",
                        "WindowAggOperator");
    }

    /**
     * Flink 2.3 plans async state operators for the GROUP BY, the join and the event-time
     * deduplication; the processing-time deduplication has no async variant and the window
     * aggregate is planned without one here, so those two run on the synchronous backend in the
     * same job.
     */
    @Test
    void asyncAndSynchronousOperatorsInOneJob(@TempDir Path dir) throws Exception {
        assertThat(runExact(dir, true))
                .containsExactlyInAnyOrder(
                        "AsyncStateGroupAggFunction async",
                        "AsyncStateStreamingJoinOperator async",
                        "AsyncStateRowTimeDeduplicateFunction async",
                        "ProcTimeDeduplicateKeepFirstRowFunction",
                        "WindowAggOperator");
    }
}
