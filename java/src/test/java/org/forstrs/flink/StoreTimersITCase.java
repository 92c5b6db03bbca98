package org.forstrs.flink;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.base.array.LongPrimitiveArraySerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.source.legacy.RichSourceFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.forstrs.flink.config.ForStOptions;
import org.forstrs.flink.sync.ForStSyncKeyedStateBackend;
import org.forstrs.flink.timers.StoreQueueCounters;
import org.forstrs.flink.timers.StoreTimerQueues;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * 2,000,000 event-time timers in the store ({@code timer-service.factory: ForStDB}), each firing
 * exactly once across a checkpoint, an injected failure and a rescale: all timers are registered
 * at parallelism 2 and a checkpoint completes; the watermark then fires about half of them,
 * subtask 0 fails once while firing and the job restores from the latest checkpoint; the job stops
 * with a native savepoint and continues at parallelism 3, which fires the rest. Each key counts
 * and sums its fired timers in keyed state (rolled back with the timers on restore), checks they
 * fire in increasing timestamp order, and at the end the totals are compared with an independent
 * computation. The queues' counters show that memory held only the cached heads.
 */
class StoreTimersITCase {

    private static final int KEYS = 20_000;
    private static final long TIMERS = 2_000_000;
    private static final long PER_KEY = TIMERS / KEYS;
    private static final long BASE_TS = 1_000;
    /** The first job fires timers up to here: about half. */
    private static final long FIRST_WATERMARK = BASE_TS + PER_KEY / 2;
    private static final long FAIL_AFTER_FIRED = 300_000;
    private static final int CACHE = 128;

    /** The watermark the source may emit (set by the test). */
    private static final AtomicLong ALLOWED_WATERMARK = new AtomicLong(Long.MIN_VALUE);

    private static final AtomicLong REGISTERED = new AtomicLong();
    private static final AtomicLong FIRED = new AtomicLong();
    private static final AtomicInteger FAILURES = new AtomicInteger();
    /** The first checkpoint whose barrier the source sent after every record. */
    private static final AtomicLong FIRST_FULL_CHECKPOINT = new AtomicLong(Long.MAX_VALUE);
    private static final AtomicInteger FULL_CHECKPOINTS_COMPLETED = new AtomicInteger();
    /** Subtasks of the first job that finished the first watermark after the failure. */
    private static final Map<Integer, Boolean> FIRST_WATERMARK_DONE = new ConcurrentHashMap<>();
    /** Per subtask of the first attempt: timers in its store when the first watermark came. */
    private static final Map<Integer, Long> STORED = new ConcurrentHashMap<>();
    private static final AtomicLong MAX_CACHED = new AtomicLong();
    private static final AtomicLong MAX_CACHED_PER_KEY_GROUP = new AtomicLong();
    /** Per key at the end: {fired, sum of timestamps, out-of-order or repeated firings}. */
    private static final Map<Long, long[]> RESULTS = new ConcurrentHashMap<>();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(3)
                            .build());

    @Test
    void twoMillionTimersFireExactlyOnceAcrossFailureAndRescale(
            @TempDir Path primary, @TempDir Path checkpoints, @TempDir Path savepoints)
            throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        config.set(ForStOptions.TIMER_SERVICE_FACTORY, ForStOptions.TimerServiceType.ForStDB);
        config.set(ForStOptions.TIMER_SERVICE_CACHE_SIZE, CACHE);

        JobClient first = submit(config, null, 2, true);
        await(
                "a checkpoint with all timers registered",
                first,
                () -> FULL_CHECKPOINTS_COMPLETED.get() > 0);
        assertThat(REGISTERED.get()).isEqualTo(TIMERS);
        ALLOWED_WATERMARK.set(FIRST_WATERMARK);
        await("the first watermark fired after a failure", first,
                () -> FIRST_WATERMARK_DONE.size() == 2);
        assertThat(FAILURES.get()).isEqualTo(1);
        String savepoint =
                first.stopWithSavepoint(
                                false, savepoints.toUri().toString(), SavepointFormatType.NATIVE)
                        .get();
        first.getJobExecutionResult().get();

        ALLOWED_WATERMARK.set(Long.MAX_VALUE);
        submit(config, Paths.get(URI.create(savepoint)), 3, false)
                .getJobExecutionResult()
                .get();

        Map<Long, long[]> expected = new HashMap<>();
        for (long i = 0; i < TIMERS; i++) {
            long[] e = expected.computeIfAbsent(i % KEYS, k -> new long[3]);
            e[0]++;
            e[1] += timestamp(i);
        }
        assertThat(RESULTS).hasSize(KEYS);
        for (Map.Entry<Long, long[]> e : expected.entrySet()) {
            assertThat(RESULTS.get(e.getKey())).as("key %s", e.getKey()).containsExactly(e.getValue());
        }
        // More firings than timers: the failure replayed some, and the results still match.
        assertThat(FIRED.get()).isGreaterThan(TIMERS);
        assertThat(STORED.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(TIMERS);
        assertThat(MAX_CACHED_PER_KEY_GROUP.get()).isBetween(1L, (long) CACHE);
        // at most 64 key groups per subtask at parallelism 2 (128 key groups)
        assertThat(MAX_CACHED.get()).isBetween(1L, 64L * CACHE).isLessThan(TIMERS / 100);
    }

    private static long timestamp(long record) {
        return BASE_TS + record / KEYS;
    }

    // The legacy source function lets the test hold the watermark and keep the job running.
    @SuppressWarnings("deprecation")
    private static JobClient submit(Configuration base, Path restoreFrom, int parallelism,
            boolean failOnce) throws Exception {
        Configuration config = new Configuration(base);
        if (restoreFrom != null) {
            config.set(StateRecoveryOptions.SAVEPOINT_PATH, restoreFrom.toUri().toString());
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(parallelism);
        env.addSource(new GatedSource(), "records", Types.LONG)
                .setParallelism(1)
                .keyBy(record -> record % KEYS, Types.LONG)
                .transform("timers", Types.VOID, new TimerOperator(failOnce))
                .setParallelism(parallelism);
        return env.executeAsync("store timers at parallelism " + parallelism);
    }

    /** Waits on a counter the job moves (no deadline, see {@link Await}). */
    private static void await(String what, JobClient job, BooleanSupplier done) throws Exception {
        Await.until(what, done::getAsBoolean, job);
    }

    /**
     * Emits records {@code 0..TIMERS-1} (record i: key i % KEYS, timestamp BASE_TS + i / KEYS)
     * with no watermark, then each watermark the test allows (again after a restore: the
     * restored operators start without one); ends after emitting MAX.
     */
    @SuppressWarnings("deprecation")
    private static final class GatedSource extends RichSourceFunction<Long>
            implements CheckpointedFunction {
        private static final long serialVersionUID = 1L;
        private transient ListState<Long> offsetState;
        private transient long offset;
        private volatile boolean running = true;

        @Override
        public void run(SourceContext<Long> ctx) {
            while (running && offset < TIMERS) {
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collectWithTimestamp(offset, timestamp(offset));
                    offset++;
                }
            }
            long watermark = Long.MIN_VALUE;
            // Until the test allows the final watermark or cancels the job (no deadline: a hang
            // is bounded by the tests' hang guard, not decided by the machine's speed).
            while (running) {
                long allowed = ALLOWED_WATERMARK.get();
                if (allowed > watermark) {
                    synchronized (ctx.getCheckpointLock()) {
                        ctx.emitWatermark(new Watermark(allowed));
                        watermark = allowed;
                    }
                }
                if (watermark == Long.MAX_VALUE) {
                    return;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
        }

        @Override
        public void cancel() {
            running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            offsetState.update(List.of(offset));
            if (offset == TIMERS) {
                FIRST_FULL_CHECKPOINT.accumulateAndGet(context.getCheckpointId(), Math::min);
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            offsetState =
                    context.getOperatorStateStore()
                            .getListState(new ListStateDescriptor<>("offset", Types.LONG));
            offset = 0;
            for (Long value : offsetState.get()) {
                offset = value;
            }
        }
    }

    /** Registers one event-time timer per record; counts fired timers per key in keyed state. */
    private static final class TimerOperator extends AbstractStreamOperator<Void>
            implements OneInputStreamOperator<Long, Void>, Triggerable<Long, VoidNamespace> {
        private static final long serialVersionUID = 1L;
        private static final ValueStateDescriptor<long[]> FIRED_STATE =
                new ValueStateDescriptor<>("fired", LongPrimitiveArraySerializer.INSTANCE);
        private final boolean failOnce;
        private transient InternalTimerService<VoidNamespace> timers;
        private transient ValueState<long[]> fired;
        private transient boolean measured;

        TimerOperator(boolean failOnce) {
            this.failOnce = failOnce;
        }

        @Override
        public void open() throws Exception {
            super.open();
            timers = getInternalTimerService("timers", VoidNamespaceSerializer.INSTANCE, this);
            fired = getPartitionedState(FIRED_STATE);
        }

        @Override
        public void processElement(StreamRecord<Long> element) {
            timers.registerEventTimeTimer(VoidNamespace.INSTANCE, element.getTimestamp());
            REGISTERED.incrementAndGet();
        }

        @Override
        public void processWatermark(Watermark mark) throws Exception {
            if (failOnce && !measured && attempt() == 0) {
                STORED.putIfAbsent(subtask(), storeTimers().storedElements());
                measured = true;
            }
            super.processWatermark(mark);
            recordCounters();
            if (failOnce && attempt() > 0 && mark.getTimestamp() >= FIRST_WATERMARK) {
                FIRST_WATERMARK_DONE.put(subtask(), true);
            }
        }

        @Override
        public void onEventTime(InternalTimer<Long, VoidNamespace> timer) throws Exception {
            long[] state = fired.value();
            if (state == null) {
                state = new long[3];
            }
            if (state[0] > 0 && timer.getTimestamp() <= state[2]) {
                state[2] = Long.MIN_VALUE; // fired twice or out of order: never matches
            }
            state[0]++;
            state[1] += timer.getTimestamp();
            if (state[2] != Long.MIN_VALUE) {
                state[2] = timer.getTimestamp();
            }
            fired.update(state);
            long total = FIRED.incrementAndGet();
            if (total % 50_000 == 0) {
                recordCounters();
            }
            if (failOnce
                    && attempt() == 0
                    && subtask() == 0
                    && total >= FAIL_AFTER_FIRED
                    && STORED.size() == 2
                    && FAILURES.compareAndSet(0, 1)) {
                throw new IllegalStateException("injected failure after " + total + " timers");
            }
        }

        @Override
        public void onProcessingTime(InternalTimer<Long, VoidNamespace> timer) {}

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            super.notifyCheckpointComplete(checkpointId);
            if (checkpointId >= FIRST_FULL_CHECKPOINT.get()) {
                FULL_CHECKPOINTS_COMPLETED.incrementAndGet();
            }
        }

        @Override
        public void finish() throws Exception {
            super.finish();
            recordCounters();
            getKeyedStateBackend()
                    .applyToAllKeys(
                            VoidNamespace.INSTANCE,
                            VoidNamespaceSerializer.INSTANCE,
                            FIRED_STATE,
                            (key, state) -> RESULTS.put((Long) key, finalCounts(state.value())));
        }

        /** {fired, sum, 0 if in order}: the last timestamp is replaced by the order verdict. */
        private static long[] finalCounts(long[] state) {
            return new long[] {state[0], state[1], state[2] == Long.MIN_VALUE ? 1 : 0};
        }

        private void recordCounters() {
            StoreQueueCounters counters = storeTimers().counters();
            MAX_CACHED.accumulateAndGet(counters.cachedElements(), Math::max);
            MAX_CACHED_PER_KEY_GROUP.accumulateAndGet(counters.maxCachedPerKeyGroup(), Math::max);
        }

        private StoreTimerQueues storeTimers() {
            return ((ForStSyncKeyedStateBackend<?>) getKeyedStateBackend()).getStoreTimers();
        }

        private int subtask() {
            return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }

        private int attempt() {
            return getRuntimeContext().getTaskInfo().getAttemptNumber();
        }
    }
}
