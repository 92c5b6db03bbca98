package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An exactly-once counting job for checkpoint, failure and rescale tests: numbers {@code 0..N-1}
 * go through a throttled map that can fail, are counted per key ({@code i % keys}) in async
 * value state, and each key's final count is emitted once, by an event-time timer that fires
 * only at the end of the input. Final counts are exact only if every record was counted exactly
 * once across failures and restores; a key emitted twice or with a wrong count shows a bug.
 *
 * <p>Results and progress go to static maps keyed by a run id (the MiniCluster runs in this JVM).
 */
final class CountingJob {

    private static final Map<String, Queue<Tuple2<Long, Long>>> RESULTS =
            new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> PROGRESS = new ConcurrentHashMap<>();
    private static final Map<String, AtomicInteger> FAILURES = new ConcurrentHashMap<>();
    private static final Map<String, AtomicInteger> RESUMED = new ConcurrentHashMap<>();

    private CountingJob() {}

    /** Cluster settings: ForSt-RS, checkpoints every 100 ms into {@code checkpoints}. */
    static Configuration config(Path primary, Path checkpoints) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", primary.toUri().toString());
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(100));
        config.set(
                CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        config.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 20);
        config.set(
                RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(50));
        return config;
    }

    /**
     * Adds the job to {@code env}.
     *
     * @param recordsPerMs throttle per map subtask
     * @param failingAttempts attempts 0..failingAttempts-1 of map subtask 0 each fail once after
     *     a random number of records in [minRecords, maxRecords)
     */
    static void build(
            StreamExecutionEnvironment env,
            String runId,
            long records,
            int keys,
            int recordsPerMs,
            int failingAttempts,
            int minRecords,
            int maxRecords) {
        RESULTS.putIfAbsent(runId, new ConcurrentLinkedQueue<>());
        PROGRESS.putIfAbsent(runId, new AtomicLong());
        FAILURES.putIfAbsent(runId, new AtomicInteger());
        RESUMED.putIfAbsent(runId, new AtomicInteger());
        env.fromSequence(0, records - 1)
                .map(
                        new ThrottledFailingMap(
                                runId,
                                records / env.getParallelism(),
                                recordsPerMs,
                                failingAttempts,
                                minRecords,
                                maxRecords))
                .returns(Types.LONG)
                .keyBy(new KeyOf(keys))
                .enableAsyncState()
                .process(new CountPerKey())
                .returns(Types.TUPLE(Types.LONG, Types.LONG))
                .sinkTo(new CollectingSink(runId));
    }

    /** What the job must emit: key to count. */
    static Map<Long, Long> expected(long records, int keys) {
        Map<Long, Long> expected = new HashMap<>();
        for (long i = 0; i < records; i++) {
            expected.merge(i % keys, 1L, Long::sum);
        }
        return expected;
    }

    /** Every (key, count) the run emitted, in arrival order. */
    static List<Tuple2<Long, Long>> results(String runId) {
        return List.copyOf(RESULTS.getOrDefault(runId, new ConcurrentLinkedQueue<>()));
    }

    /** Records the map passed on so far, across attempts (counts replays again). */
    static long progress(String runId) {
        return PROGRESS.get(runId).get();
    }

    /** Failures injected so far. */
    static int failures(String runId) {
        return FAILURES.get(runId).get();
    }

    private static final class KeyOf
            implements KeySelector<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final int keys;

        private KeyOf(int keys) {
            this.keys = keys;
        }

        @Override
        public Long getKey(Long value) {
            return value % keys;
        }
    }

    /**
     * Attempts of map subtasks whose first record was not the start of a source split: their
     * source resumed from a checkpoint or savepoint.
     */
    static int resumedAttempts(String runId) {
        return RESUMED.get(runId).get();
    }

    /** Passes records on at a bounded rate; subtask 0 fails once in each early attempt. */
    private static final class ThrottledFailingMap extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final String runId;
        private final long splitSize;
        private final int recordsPerMs;
        private final int failingAttempts;
        private final int minRecords;
        private final int maxRecords;
        private transient long seen;
        private transient long failAt;

        ThrottledFailingMap(
                String runId,
                long splitSize,
                int recordsPerMs,
                int failingAttempts,
                int minRecords,
                int maxRecords) {
            this.runId = runId;
            this.splitSize = splitSize;
            this.recordsPerMs = recordsPerMs;
            this.failingAttempts = failingAttempts;
            this.minRecords = minRecords;
            this.maxRecords = maxRecords;
        }

        @Override
        public void open(OpenContext openContext) {
            boolean fails =
                    getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0
                            && getRuntimeContext().getTaskInfo().getAttemptNumber()
                                    < failingAttempts;
            failAt =
                    fails
                            ? ThreadLocalRandom.current().nextInt(minRecords, maxRecords)
                            : Long.MAX_VALUE;
        }

        @Override
        public Long map(Long value) throws Exception {
            if (++seen == 1 && value % splitSize != 0) {
                RESUMED.get(runId).incrementAndGet();
            }
            if (seen == failAt) {
                FAILURES.get(runId).incrementAndGet();
                throw new InjectedFailure(seen);
            }
            if (seen % recordsPerMs == 0) {
                Thread.sleep(1);
            }
            PROGRESS.get(runId).incrementAndGet();
            return value;
        }
    }

    /** The failure the test injects (recognizable in logs). */
    static final class InjectedFailure extends Exception {
        private static final long serialVersionUID = 1L;

        InjectedFailure(long record) {
            super("Injected failure at record " + record + " of this attempt");
        }
    }

    /** Counts records per key; at the end of the input emits (key, count) once. */
    private static final class CountPerKey
            extends KeyedProcessFunction<Long, Long, Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Tuple2<Long, Long>> out) {
            // The end-of-input watermark (Long.MAX_VALUE) fires this; duplicates are merged.
            ctx.timerService().registerEventTimeTimer(Long.MAX_VALUE);
            count.asyncValue()
                    .thenCompose(current -> count.asyncUpdate(current == null ? 1 : current + 1));
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<Tuple2<Long, Long>> out) {
            long key = ctx.getCurrentKey();
            count.asyncValue().thenAccept(current -> out.collect(Tuple2.of(key, current)));
        }
    }

    /** Appends every record to the run's result queue. */
    private static final class CollectingSink implements Sink<Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private final String runId;

        CollectingSink(String runId) {
            this.runId = runId;
        }

        @Override
        public SinkWriter<Tuple2<Long, Long>> createWriter(WriterInitContext context) {
            Queue<Tuple2<Long, Long>> results = RESULTS.get(runId);
            return new SinkWriter<>() {
                @Override
                public void write(Tuple2<Long, Long> element, Context context) {
                    results.add(element);
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }
}
