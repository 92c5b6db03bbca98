package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.Collector;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One pipeline with a keyed operator on async state (State V2, the async keyed backend) feeding a
 * keyed operator on synchronous state (State V1 value and map state and event-time timers, the
 * synchronous keyed backend), both on ForSt-RS in one job, through injected failures: every
 * recovery restores both backends from the same checkpoint, and the final output is exact.
 *
 * <p>The async operator numbers the records of each fine key (1, 2, 3, ... in arrival order); the
 * synchronous operator sums those numbers per fine key inside a coarse key. The order of a fine
 * key's records varies from run to run, but the sum of their numbers is n(n+1)/2 for n records,
 * and only if every record was numbered exactly once: a record lost or replayed into state shows.
 */
class MixedAsyncSyncITCase {

    private static final int PARALLELISM = 2;
    private static final long RECORDS = 100_000;
    private static final int FINE_KEYS = 97;
    private static final int COARSE_KEYS = 13;
    private static final int FAILING_ATTEMPTS = 4;
    /** 2,500 records per subtask between two checkpoints: 20 checkpoints' worth of input. */
    private static final int RECORDS_PER_CHECKPOINT = 5_000;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    private static final Map<String, Queue<String>> RESULTS = new ConcurrentHashMap<>();

    /** Async state: numbers each fine key's records in arrival order; emits (coarse, fine, n). */
    static final class NumberPerKey
            extends KeyedProcessFunction<Long, Long, Tuple3<Long, Long, Long>> {
        private static final long serialVersionUID = 1L;
        private transient org.apache.flink.api.common.state.v2.ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            count =
                    getRuntimeContext()
                            .getState(
                                    new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>(
                                            "count", Types.LONG));
        }

        @Override
        public void processElement(
                Long value, Context ctx, Collector<Tuple3<Long, Long, Long>> out) {
            long fine = ctx.getCurrentKey();
            count.asyncValue()
                    .thenCompose(
                            current -> {
                                long next = current == null ? 1 : current + 1;
                                out.collect(Tuple3.of(fine % COARSE_KEYS, fine, next));
                                return count.asyncUpdate(next);
                            });
        }
    }

    /**
     * Synchronous state: per coarse key, the record count (value state) and the sum of the numbers
     * per fine key (map state); emits them once, from an event-time timer at the end of input.
     */
    static final class SumPerFineKey
            extends KeyedProcessFunction<Long, Tuple3<Long, Long, Long>, String> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> records;
        private transient MapState<Long, Long> sums;

        @Override
        public void open(OpenContext openContext) {
            records = getRuntimeContext().getState(new ValueStateDescriptor<>("records", Types.LONG));
            sums =
                    getRuntimeContext()
                            .getMapState(new MapStateDescriptor<>("sums", Types.LONG, Types.LONG));
        }

        @Override
        public void processElement(
                Tuple3<Long, Long, Long> numbered, Context ctx, Collector<String> out)
                throws Exception {
            // Fires once, at the end-of-input watermark (registrations of one time merge).
            ctx.timerService().registerEventTimeTimer(Long.MAX_VALUE);
            Long n = records.value();
            records.update(n == null ? 1 : n + 1);
            Long sum = sums.get(numbered.f1);
            sums.put(numbered.f1, (sum == null ? 0 : sum) + numbered.f2);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out)
                throws Exception {
            TreeMap<Long, Long> sorted = new TreeMap<>();
            for (Map.Entry<Long, Long> e : sums.entries()) {
                sorted.put(e.getKey(), e.getValue());
            }
            out.collect(line(ctx.getCurrentKey(), records.value(), sorted));
        }
    }

    static String line(long coarse, long records, TreeMap<Long, Long> sums) {
        return coarse + " " + records + " " + sums;
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

    /** The job's output computed without Flink: one line per coarse key. */
    static List<String> expected() {
        Map<Long, Long> perFine = new HashMap<>();
        for (long i = 0; i < RECORDS; i++) {
            perFine.merge(i % FINE_KEYS, 1L, Long::sum);
        }
        Map<Long, TreeMap<Long, Long>> sums = new TreeMap<>();
        Map<Long, Long> records = new HashMap<>();
        perFine.forEach(
                (fine, n) -> {
                    long coarse = fine % COARSE_KEYS;
                    sums.computeIfAbsent(coarse, c -> new TreeMap<>()).put(fine, n * (n + 1) / 2);
                    records.merge(coarse, n, Long::sum);
                });
        List<String> lines = new ArrayList<>();
        sums.forEach((coarse, s) -> lines.add(line(coarse, records.get(coarse), s)));
        return lines;
    }

    /**
     * Adds the pipeline to {@code env} (parallelism {@link #PARALLELISM}): subtask 0 of the map
     * fails in each of its first {@link #FAILING_ATTEMPTS} attempts after a checkpoint.
     */
    static void build(StreamExecutionEnvironment env, String run) {
        RESULTS.put(run, new ConcurrentLinkedQueue<>());
        env.setParallelism(PARALLELISM);
        PacedSequence.of(env, run, RECORDS, RECORDS_PER_CHECKPOINT)
                .map(
                        new FailAfterCheckpoint(
                                run, RECORDS / PARALLELISM, FAILING_ATTEMPTS, 2_000))
                .returns(Types.LONG)
                .keyBy(i -> i % FINE_KEYS, Types.LONG)
                .enableAsyncState()
                .process(new NumberPerKey())
                .returns(Types.TUPLE(Types.LONG, Types.LONG, Types.LONG))
                .keyBy(numbered -> numbered.f0, Types.LONG)
                .process(new SumPerFineKey())
                .returns(Types.STRING)
                .sinkTo(new CollectingSink(run));
    }

    /**
     * What a finished run must show: every failing attempt failed, every restart of subtask 0
     * resumed from a checkpoint past the start of its split, and the output is exact.
     */
    static void assertExactAfterFailures(String run) {
        // The input is paced by checkpoints, so it outlasts every failing attempt: all fail.
        assertThat(FailAfterCheckpoint.failures(run)).isEqualTo(FAILING_ATTEMPTS);
        // Every failure followed a completed checkpoint that included records of the attempt,
        // so every restart of subtask 0 resumed past the start of its split.
        assertThat(FailAfterCheckpoint.resumedAttempts(run)).isGreaterThanOrEqualTo(FAILING_ATTEMPTS);
        assertThat(RESULTS.get(run)).containsExactlyInAnyOrderElementsOf(expected());
    }

    @Test
    void asyncAndSyncOperatorsInOneJobAreExactAfterFailures(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        String run = "mixed-" + UUID.randomUUID();
        // ForSt-RS, checkpoints every 100 ms, fixed-delay restarts (CountingJob's settings)
        Configuration config = CountingJob.config(primary, checkpoints);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        build(env, run);

        env.execute("async and sync keyed state in one job, with failures");

        assertExactAfterFailures(run);
    }
}
