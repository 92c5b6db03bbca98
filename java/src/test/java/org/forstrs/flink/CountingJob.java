package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
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
import org.apache.flink.streaming.api.datastream.DataStream;
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

/**
 * An exactly-once counting job for checkpoint, failure and rescale tests: numbers {@code 0..N-1}
 * from a {@link PacedSequence} go through a {@link FailAfterCheckpoint} map, are counted per key
 * ({@code i % keys}) in async value state, and each key's final count is emitted once, by an event-time timer that fires
 * only at the end of the input. Final counts are exact only if every record was counted exactly
 * once across failures and restores; a key emitted twice or with a wrong count shows a bug.
 *
 * <p>Results and progress go to static maps keyed by a run id (the MiniCluster runs in this JVM).
 */
final class CountingJob {

    private static final Map<String, Queue<Tuple2<Long, Long>>> RESULTS =
            new ConcurrentHashMap<>();

    /** The name of the operator that holds the keyed state. */
    static final String COUNT_OPERATOR = "count per key";

    private CountingJob() {}

    /** Cluster settings: ForSt-RS, checkpoints every 100 ms into {@code checkpoints}. */
    static Configuration config(Path primary, Path checkpoints) {
        return config(primary.toUri().toString(), checkpoints.toUri().toString());
    }

    /** {@link #config(Path, Path)} with directories given as URIs (of any file system). */
    static Configuration config(String primary, String checkpoints) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", primary);
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints);
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
     * Adds the job to {@code env}; its progress, failures and resumed attempts are those of
     * {@link PacedSequence} and {@link FailAfterCheckpoint} for {@code runId}.
     *
     * @param recordsPerCheckpoint records the input emits between two completed checkpoints
     * @param failingAttempts attempts 0..failingAttempts-1 of map subtask 0 each fail once, after
     *     {@code minRecords} records and a checkpoint that covered some of them
     */
    static void build(
            StreamExecutionEnvironment env,
            String runId,
            long records,
            int keys,
            int recordsPerCheckpoint,
            int failingAttempts,
            long minRecords) {
        RESULTS.putIfAbsent(runId, new ConcurrentLinkedQueue<>());
        counts(env, runId, records, keys, recordsPerCheckpoint, failingAttempts, minRecords)
                .sinkTo(new CollectingSink(runId));
    }

    /** The job of {@link #build} up to its output: (key, final count) once per key. */
    static DataStream<Tuple2<Long, Long>> counts(
            StreamExecutionEnvironment env,
            String runId,
            long records,
            int keys,
            int recordsPerCheckpoint,
            int failingAttempts,
            long minRecords) {
        return PacedSequence.of(env, runId, records, recordsPerCheckpoint)
                .map(
                        new FailAfterCheckpoint(
                                runId,
                                records / env.getParallelism(),
                                failingAttempts,
                                minRecords))
                .returns(Types.LONG)
                .keyBy(new KeyOf(keys))
                .enableAsyncState()
                .process(new CountPerKey())
                .name(COUNT_OPERATOR)
                .returns(Types.TUPLE(Types.LONG, Types.LONG));
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
