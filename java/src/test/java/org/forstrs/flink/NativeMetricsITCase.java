package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.groups.OperatorMetricGroup;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.Collector;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.Serializable;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The native metrics through Flink's metric system: a job with a synchronous (State V1) and an
 * asynchronous (State V2) keyed operator on ForSt-RS, several {@code state.backend.forst.metrics.*}
 * keys on, and an in-JVM reporter that keeps every metric registered. Once each operator has seen
 * a checkpoint complete and read its state after it, the gauges are in each operator's group
 * under Flink's names (and ours), with plausible values; keys switched off, or without an
 * equivalent in the engine, register nothing; gauges still answer after the job is cancelled.
 */
class NativeMetricsITCase {

    private static final String PREFIX = "state.backend.forst.metrics.";
    private static final String SYNC_OPERATOR = "v1-counter";
    private static final String ASYNC_OPERATOR = "v2-counter";
    /**
     * Keys and value size: state of a few hundred KiB, so its SST is larger than the tail a file's
     * open reads at once and reads after a flush go through the block cache.
     */
    private static final int KEYS = 3_000;

    private static final String PADDING = "x".repeat(100);

    /** Records each operator processes after a completed checkpoint before metrics are read. */
    private static final int RECORDS_AFTER_CHECKPOINT = KEYS;

    /** Keeps every metric, also after the job: gauges are read once the backends are gone. */
    private static final InMemoryReporter REPORTER = InMemoryReporter.createWithRetainedMetrics();

    /** Counted down by each operator once it read state after a completed checkpoint. */
    private static final Map<String, CountDownLatch> READY = new ConcurrentHashMap<>();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setConfiguration(reporterConfig())
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(1)
                            .build());

    private static Configuration reporterConfig() {
        return REPORTER.addToConfiguration(new Configuration());
    }

    /** Passes records at a bounded rate, so checkpoints come between them. */
    static final class Throttle extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private transient long seen;

        @Override
        public Long map(Long value) throws InterruptedException {
            if (++seen % 20 == 0) {
                Thread.sleep(1);
            }
            return value;
        }
    }

    /**
     * Opens {@link #READY} of its operator once a checkpoint completed whose snapshot came after a
     * write of every key (so its flushed files hold them all) and the operator then read every key
     * again (from those files, through the block cache).
     */
    private static final class ReadyAfterCheckpoint implements Serializable {
        private static final long serialVersionUID = 1L;
        private final String operator;
        private transient Map<Long, Long> seenAtSnapshot;
        private long seen;
        private long seenAtCheckpoint = -1;
        private boolean signalled;

        ReadyAfterCheckpoint(String operator) {
            this.operator = operator;
        }

        void snapshotted(long checkpointId) {
            if (seenAtSnapshot == null) {
                seenAtSnapshot = new HashMap<>();
            }
            seenAtSnapshot.put(checkpointId, seen);
        }

        void checkpointCompleted(long checkpointId) {
            long atSnapshot =
                    seenAtSnapshot == null ? 0 : seenAtSnapshot.getOrDefault(checkpointId, 0L);
            if (seenAtCheckpoint < 0 && atSnapshot >= KEYS) {
                seenAtCheckpoint = seen;
            }
        }

        void processed() {
            seen++;
            if (!signalled
                    && seenAtCheckpoint >= 0
                    && seen >= seenAtCheckpoint + RECORDS_AFTER_CHECKPOINT) {
                signalled = true;
                READY.get(operator).countDown();
            }
        }
    }

    /** The next value of a key's state: the padding, then the count of its records. */
    static String next(String current) {
        long count = current == null ? 0 : Long.parseLong(current.substring(PADDING.length()));
        return PADDING + (count + 1);
    }

    /** State V1: counts per key in a value state. */
    static final class SyncCount extends KeyedProcessFunction<Long, Long, Long>
            implements CheckpointedFunction, CheckpointListener {
        private static final long serialVersionUID = 1L;
        private final ReadyAfterCheckpoint ready = new ReadyAfterCheckpoint(SYNC_OPERATOR);
        private transient ValueState<String> count;

        @Override
        public void open(OpenContext openContext) {
            count =
                    getRuntimeContext()
                            .getState(new ValueStateDescriptor<>("count", Types.STRING));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out)
                throws Exception {
            count.update(next(count.value()));
            ready.processed();
            out.collect(value);
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {}

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            ready.snapshotted(context.getCheckpointId());
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            ready.checkpointCompleted(checkpointId);
        }
    }

    /** State V2: counts per key in an async value state. */
    static final class AsyncCount extends KeyedProcessFunction<Long, Long, Long>
            implements CheckpointedFunction, CheckpointListener {
        private static final long serialVersionUID = 1L;
        private final ReadyAfterCheckpoint ready = new ReadyAfterCheckpoint(ASYNC_OPERATOR);
        private transient org.apache.flink.api.common.state.v2.ValueState<String> count;

        @Override
        public void open(OpenContext openContext) {
            count =
                    getRuntimeContext()
                            .getState(
                                    new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>(
                                            "count", Types.STRING));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) {
            count.asyncValue()
                    .thenCompose(current -> count.asyncUpdate(next(current)))
                    .thenAccept(done -> ready.processed());
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {}

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            ready.snapshotted(context.getCheckpointId());
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            ready.checkpointCompleted(checkpointId);
        }
    }

    @Test
    void gaugesOfSwitchedOnKeysAreInBothOperatorsGroups(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        READY.put(SYNC_OPERATOR, new CountDownLatch(1));
        READY.put(ASYNC_OPERATOR, new CountDownLatch(1));
        Configuration config = CountingJob.config(primary, checkpoints);
        for (String key :
                List.of(
                        "block-cache-hit",
                        "block-cache-miss",
                        "cur-size-all-mem-tables",
                        "total-sst-files-size",
                        "num-files-at-level",
                        "compaction-pending",
                        "bloom-filter-useful", // no equivalent in the engine
                        "engine-stats")) {
            config.setString(PREFIX + key, "true");
        }
        config.setString(PREFIX + "estimate-num-keys", "false");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(1);
        env.fromSequence(0, Long.MAX_VALUE)
                .map(new Throttle())
                .returns(Types.LONG)
                .keyBy(i -> i % KEYS, Types.LONG)
                .process(new SyncCount())
                .name(SYNC_OPERATOR)
                .returns(Types.LONG)
                .keyBy(i -> i % KEYS, Types.LONG)
                .enableAsyncState()
                .process(new AsyncCount())
                .name(ASYNC_OPERATOR)
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());
        JobClient job = env.executeAsync("native metrics");
        Map<String, Map<String, Metric>> metrics = new HashMap<>();
        try {
            for (String operator : List.of(SYNC_OPERATOR, ASYNC_OPERATOR)) {
                // read state after a completed checkpoint
                Await.until(
                        "a checkpoint after state was read in " + operator,
                        () -> READY.get(operator).getCount() == 0,
                        job);
            }
            for (String operator : List.of(SYNC_OPERATOR, ASYNC_OPERATOR)) {
                metrics.put(operator, operatorMetrics(job.getJobID(), operator));
                assertMetrics(operator, metrics.get(operator));
            }
        } finally {
            job.cancel().get();
        }
        awaitTermination(job);
        for (String operator : List.of(SYNC_OPERATOR, ASYNC_OPERATOR)) {
            // the backend is disposed and its database closed: the last values, no native call
            assertThat(value(metrics.get(operator), "forstrs.flushes")).as(operator).isPositive();
        }
    }

    /** The metrics of the one subtask of {@code operator}. */
    private static Map<String, Metric> operatorMetrics(JobID job, String operator) {
        List<OperatorMetricGroup> groups = REPORTER.findOperatorMetricGroups(job, operator);
        assertThat(groups).as(operator).hasSize(1);
        return REPORTER.getMetricsByGroup(groups.get(0));
    }

    private static void assertMetrics(String operator, Map<String, Metric> metrics) {
        List<String> levels =
                IntStream.range(0, 7).mapToObj(l -> "rocksdb.num-files-at-level" + l).toList();
        assertThat(metrics.keySet())
                .as(operator)
                .contains(
                        "rocksdb.block_cache_hit",
                        "rocksdb.block_cache_miss",
                        "rocksdb.cur-size-all-mem-tables",
                        "rocksdb.total-sst-files-size",
                        "rocksdb.compaction-pending",
                        "forstrs.flushes",
                        "forstrs.compactions",
                        "forstrs.stalled-writers",
                        "forstrs.range-tombstones",
                        "forstrs.ttl-removed-entries")
                .containsAll(levels)
                .doesNotContain(
                        "rocksdb.estimate-num-keys", // switched off
                        "rocksdb.bloom_filter_useful", // no equivalent
                        "rocksdb.block-cache-usage"); // not switched on
        assertThat(value(metrics, "forstrs.flushes")).as(operator + " flushes").isPositive();
        assertThat(value(metrics, "forstrs.last-checkpoint-async-nanos"))
                .as(operator + " last checkpoint's asynchronous phase")
                .isPositive();
        assertThat(value(metrics, "rocksdb.total-sst-files-size"))
                .as(operator + " SST bytes")
                .isPositive();
        long files = levels.stream().mapToLong(level -> value(metrics, level)).sum();
        assertThat(files).as(operator + " files").isPositive();
        long lookups =
                value(metrics, "rocksdb.block_cache_hit")
                        + value(metrics, "rocksdb.block_cache_miss");
        assertThat(lookups)
                .as(operator + " block cache lookups after reads of flushed keys")
                .isPositive();
        assertThat(value(metrics, "forstrs.user-bytes-written"))
                .as(operator + " bytes written")
                .isPositive();
        // flushed SSTs went to the storage: bytes, requests and their time
        assertThat(value(metrics, "forstrs.storage-bytes-written"))
                .as(operator + " bytes written to the storage")
                .isGreaterThanOrEqualTo(value(metrics, "rocksdb.total-sst-files-size"));
        assertThat(value(metrics, "forstrs.storage-writes")).as(operator).isPositive();
        assertThat(value(metrics, "forstrs.storage-other-requests")).as(operator).isPositive();
        if (operator.equals(ASYNC_OPERATOR)) {
            // every AEC batch is one executor batch of one or more requests
            long batches = value(metrics, "forstrs.batches");
            assertThat(batches).as(operator + " batches").isPositive();
            assertThat(value(metrics, "forstrs.batch-requests"))
                    .as(operator + " batch requests")
                    .isGreaterThanOrEqualTo(batches);
        }
    }

    private static long value(Map<String, Metric> metrics, String name) {
        Metric metric = metrics.get(name);
        assertThat(metric).as(name).isInstanceOf(Gauge.class);
        return ((Number) ((Gauge<?>) metric).getValue()).longValue();
    }

    private static void awaitTermination(JobClient job) throws Exception {
        assertThat(Await.terminal(job)).isEqualTo(JobStatus.CANCELED);
    }
}
