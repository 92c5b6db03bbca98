package org.forstrs.flink.sync;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.AbstractStateBackend;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupsSavepointStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.testutils.statemigration.TestType;
import org.apache.flink.streaming.api.operators.StreamOperatorStateHandler;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.concurrent.FutureUtils;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.forstrs.flink.config.ForStOptions.TimerServiceType.ForStDB;
import static org.forstrs.flink.config.ForStOptions.TimerServiceType.HEAP;

/**
 * Canonical savepoints between ForSt-RS's synchronous backend and Flink's heap backend, with a
 * rescale each way: every State V1 type (map values that are null included) and a timer queue
 * written on ours at one subtask restore on two heap subtasks, and their savepoints restore on
 * one of ours again, entry for entry. Also how timers move between ours with heap timers and ours
 * with store timers.
 */
class CanonicalSavepointRoundTripTest {

    private static final int MAX_PARALLELISM = 128;
    private static final int KEYS = 300;
    private static final KeyGroupRange ALL = new KeyGroupRange(0, MAX_PARALLELISM - 1);
    private static final KeyGroupRange LOWER = new KeyGroupRange(0, 63);
    private static final KeyGroupRange UPPER = new KeyGroupRange(64, MAX_PARALLELISM - 1);
    private static final TimerSerializer<Integer, VoidNamespace> TIMERS =
            new TimerSerializer<>(IntSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE);

    private static final ValueStateDescriptor<Long> VALUE =
            new ValueStateDescriptor<>("value", Types.LONG);
    private static final ListStateDescriptor<Long> LIST =
            new ListStateDescriptor<>("list", Types.LONG);
    private static final MapStateDescriptor<Integer, String> MAP =
            new MapStateDescriptor<>("map", Types.INT, Types.STRING);
    private static final ReducingStateDescriptor<Long> REDUCING =
            new ReducingStateDescriptor<>("reducing", Long::sum, Types.LONG);
    private static final AggregatingStateDescriptor<Long, Long, Long> AGGREGATING =
            new AggregatingStateDescriptor<>("aggregating", new Max(), Types.LONG);

    @TempDir Path dir;

    private final List<CheckpointableKeyedStateBackend<Integer>> opened = new ArrayList<>();
    private final List<MockEnvironment> environments = new ArrayList<>();

    @AfterEach
    void dispose() throws Exception {
        for (CheckpointableKeyedStateBackend<Integer> backend : opened) {
            backend.dispose();
        }
        for (MockEnvironment env : environments) {
            env.close();
        }
    }

    @Test
    void oursToHeapAtTwoAndBackToOursAtOne() throws Exception {
        CheckpointableKeyedStateBackend<Integer> first = open(ours(), ALL, List.of());
        assertThat(first).isInstanceOf(ForStSyncKeyedStateBackend.class);
        fill(first);
        KeyedStateHandle fromOurs = canonicalSavepoint(first);
        assertThat(fromOurs).isInstanceOf(KeyGroupsSavepointStateHandle.class);

        CheckpointableKeyedStateBackend<Integer> lower =
                open(new HashMapStateBackend(), LOWER, List.of(part(fromOurs, LOWER)));
        CheckpointableKeyedStateBackend<Integer> upper =
                open(new HashMapStateBackend(), UPPER, List.of(part(fromOurs, UPPER)));
        assertHolds(lower, LOWER);
        assertHolds(upper, UPPER);

        KeyedStateHandle fromLower = canonicalSavepoint(lower);
        KeyedStateHandle fromUpper = canonicalSavepoint(upper);
        CheckpointableKeyedStateBackend<Integer> last =
                open(ours(), ALL, List.of(fromLower, fromUpper));
        assertThat(last).isInstanceOf(ForStSyncKeyedStateBackend.class);
        assertHolds(last, ALL);
    }

    @Test
    void heapToOursAtTwo() throws Exception {
        CheckpointableKeyedStateBackend<Integer> heap =
                open(new HashMapStateBackend(), ALL, List.of());
        fill(heap);
        KeyedStateHandle fromHeap = canonicalSavepoint(heap);

        CheckpointableKeyedStateBackend<Integer> lower =
                open(ours(), LOWER, List.of(part(fromHeap, LOWER)));
        CheckpointableKeyedStateBackend<Integer> upper =
                open(ours(), UPPER, List.of(part(fromHeap, UPPER)));
        assertHolds(lower, LOWER);
        assertHolds(upper, UPPER);
    }

    /**
     * State restored from a canonical savepoint migrates like natively restored state: a value
     * and a list state written with one serializer are read with one that needs migration.
     */
    @Test
    void stateMigratesAfterACanonicalRestore() throws Exception {
        CheckpointableKeyedStateBackend<Integer> heap =
                open(new HashMapStateBackend(), ALL, List.of());
        for (int key = 0; key < KEYS; key++) {
            heap.setCurrentKey(key);
            state(heap, new ValueStateDescriptor<>("typed", new TestType.V1TestTypeSerializer()))
                    .update(new TestType("v" + key, key));
            ListState<TestType> list =
                    state(
                            heap,
                            new ListStateDescriptor<>(
                                    "typed-list", new TestType.V1TestTypeSerializer()));
            list.add(new TestType("a" + key, key));
            list.add(new TestType("b" + key, -key));
        }
        KeyedStateHandle fromHeap = canonicalSavepoint(heap);

        CheckpointableKeyedStateBackend<Integer> restored = open(ours(), ALL, List.of(fromHeap));
        for (int key = 0; key < KEYS; key++) {
            restored.setCurrentKey(key);
            assertThat(
                            state(
                                            restored,
                                            new ValueStateDescriptor<>(
                                                    "typed", new TestType.V2TestTypeSerializer()))
                                    .value())
                    .isEqualTo(new TestType("v" + key, key));
            assertThat(
                            state(
                                            restored,
                                            new ListStateDescriptor<>(
                                                    "typed-list",
                                                    new TestType.V2TestTypeSerializer()))
                                    .get())
                    .containsExactly(new TestType("a" + key, key), new TestType("b" + key, -key));
        }
    }

    /**
     * Timers move between the heap and the store through canonical savepoints, where they are
     * states like any other: ours with heap timers, then with store timers on two subtasks, then
     * with heap timers again.
     */
    @Test
    void timersMoveBetweenHeapAndStoreThroughCanonicalSavepoints() throws Exception {
        CheckpointableKeyedStateBackend<Integer> onHeap = open(ours(HEAP), ALL, List.of());
        fill(onHeap);
        assertThat(((ForStSyncKeyedStateBackend<Integer>) onHeap).getStoreTimers()).isNull();
        KeyedStateHandle fromHeap = canonicalSavepoint(onHeap);

        CheckpointableKeyedStateBackend<Integer> lower =
                open(ours(ForStDB), LOWER, List.of(part(fromHeap, LOWER)));
        CheckpointableKeyedStateBackend<Integer> upper =
                open(ours(ForStDB), UPPER, List.of(part(fromHeap, UPPER)));
        assertHolds(lower, LOWER);
        assertHolds(upper, UPPER);
        long storedLower = storedTimers(lower);
        long storedUpper = storedTimers(upper);
        assertThat(storedLower).isPositive();
        assertThat(storedLower + storedUpper).isEqualTo(2L * KEYS);

        CheckpointableKeyedStateBackend<Integer> last =
                open(
                        ours(HEAP),
                        ALL,
                        List.of(canonicalSavepoint(lower), canonicalSavepoint(upper)));
        assertHolds(last, ALL);
    }

    /**
     * A checkpoint keeps store timers in the DB's files only (the timer service writes none), so
     * a restore with heap timers, which would never read them, fails with a clear error.
     */
    @Test
    void aCheckpointWithStoreTimersIsNotRestoredWithHeapTimers() throws Exception {
        CheckpointableKeyedStateBackend<Integer> inStore = open(ours(ForStDB), ALL, List.of());
        fill(inStore);
        assertThat(
                        ((ForStSyncKeyedStateBackend<Integer>) inStore)
                                .requiresLegacySynchronousTimerSnapshots(CheckpointType.CHECKPOINT))
                .isFalse();
        KeyedStateHandle checkpoint =
                FutureUtils.runIfNotDoneAndGet(
                                inStore.snapshot(
                                        2L,
                                        2L,
                                        new MemCheckpointStreamFactory(64 << 20),
                                        CheckpointOptions.forCheckpointWithDefaultLocation()))
                        .getJobManagerOwnedSnapshot();

        assertThatThrownBy(() -> open(ours(HEAP), ALL, List.of(checkpoint)))
                .hasStackTraceContaining("timer-service.factory")
                .hasStackTraceContaining("restoring them with HEAP is not supported");
        assertHolds(open(ours(ForStDB), ALL, List.of(checkpoint)), ALL);
    }

    private static long storedTimers(CheckpointableKeyedStateBackend<Integer> backend) {
        return ((ForStSyncKeyedStateBackend<Integer>) backend).getStoreTimers().storedElements();
    }

    private ForStStateBackend ours() {
        return ours(ForStDB);
    }

    private ForStStateBackend ours(ForStOptions.TimerServiceType timers) {
        Configuration settings = new Configuration();
        settings.set(ForStOptions.LOCAL_DIRECTORIES, dir.resolve("local").toString());
        settings.set(ForStOptions.TIMER_SERVICE_FACTORY, timers);
        return new ForStStateBackend(settings);
    }

    private CheckpointableKeyedStateBackend<Integer> open(
            AbstractStateBackend backend, KeyGroupRange range, List<KeyedStateHandle> handles)
            throws Exception {
        MockEnvironment env = MockEnvironment.builder().build();
        environments.add(env);
        JobID job = new JobID();
        env.setCheckpointStorageAccess(
                new JobManagerCheckpointStorage().createCheckpointStorage(job));
        CheckpointableKeyedStateBackend<Integer> keyed =
                backend.createKeyedStateBackend(
                        new KeyedStateBackendParametersImpl<>(
                                env,
                                job,
                                "round-trip",
                                IntSerializer.INSTANCE,
                                MAX_PARALLELISM,
                                range,
                                env.getTaskKvStateRegistry(),
                                TtlTimeProvider.DEFAULT,
                                new UnregisteredMetricsGroup(),
                                handles,
                                new CloseableRegistry()));
        opened.add(keyed);
        return keyed;
    }

    private static KeyedStateHandle part(KeyedStateHandle handle, KeyGroupRange range) {
        return ((KeyGroupsStateHandle) handle).getIntersection(range);
    }

    private static KeyedStateHandle canonicalSavepoint(
            CheckpointableKeyedStateBackend<Integer> backend) throws Exception {
        CheckpointOptions options =
                new CheckpointOptions(
                        SavepointType.savepoint(SavepointFormatType.CANONICAL),
                        CheckpointStorageLocationReference.getDefault());
        return FutureUtils.runIfNotDoneAndGet(
                        StreamOperatorStateHandler.prepareCanonicalSavepoint(
                                        backend, new CloseableRegistry())
                                .snapshot(
                                        1L,
                                        1L,
                                        new MemCheckpointStreamFactory(64 << 20),
                                        options))
                .getJobManagerOwnedSnapshot();
    }

    /** Every key: all five state types and two timers. */
    private static void fill(CheckpointableKeyedStateBackend<Integer> backend) throws Exception {
        KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Integer, VoidNamespace>> timers =
                backend.create("timers", TIMERS);
        for (int key = 0; key < KEYS; key++) {
            backend.setCurrentKey(key);
            state(backend, VALUE).update(key * 10L);
            ListState<Long> list = state(backend, LIST);
            list.add((long) key);
            list.add(key + 1L);
            MapState<Integer, String> map = state(backend, MAP);
            map.put(key, "v" + key);
            map.put(-key - 1, null);
            ReducingState<Long> reducing = state(backend, REDUCING);
            reducing.add((long) key);
            reducing.add(2L);
            AggregatingState<Long, Long> aggregating = state(backend, AGGREGATING);
            aggregating.add((long) key);
            aggregating.add(7L);
            timers.add(new TimerHeapInternalTimer<>(1_000L + key, key, VoidNamespace.INSTANCE));
            timers.add(new TimerHeapInternalTimer<>(5_000L + key, key, VoidNamespace.INSTANCE));
        }
    }

    /** The backend holds exactly what {@link #fill} wrote for the keys of {@code range}. */
    @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
    private static void assertHolds(
            CheckpointableKeyedStateBackend<Integer> backend, KeyGroupRange range)
            throws Exception {
        Set<String> expectedTimers = new HashSet<>();
        int keysInRange = 0;
        for (int key = 0; key < KEYS; key++) {
            if (!range.contains(KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISM))) {
                continue;
            }
            keysInRange++;
            backend.setCurrentKey(key);
            assertThat(state(backend, VALUE).value()).isEqualTo(key * 10L);
            assertThat(state(backend, LIST).get()).containsExactly((long) key, key + 1L);
            Map<Integer, String> map = new HashMap<>();
            for (Map.Entry<Integer, String> entry : state(backend, MAP).entries()) {
                map.put(entry.getKey(), entry.getValue());
            }
            Map<Integer, String> expectedMap = new HashMap<>();
            expectedMap.put(key, "v" + key);
            expectedMap.put(-key - 1, null);
            assertThat(map).isEqualTo(expectedMap);
            assertThat(state(backend, REDUCING).get()).isEqualTo(key + 2L);
            assertThat(state(backend, AGGREGATING).get()).isEqualTo(Math.max(key, 7L));
            expectedTimers.add(key + "@" + (1_000L + key));
            expectedTimers.add(key + "@" + (5_000L + key));
        }
        assertThat(keysInRange).isPositive();
        assertThat(backend.getKeys(VALUE.getName(), VoidNamespace.INSTANCE).count())
                .isEqualTo(keysInRange);

        KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Integer, VoidNamespace>> timers =
                backend.create("timers", TIMERS);
        List<String> restoredTimers = new ArrayList<>();
        try (CloseableIterator<TimerHeapInternalTimer<Integer, VoidNamespace>> it =
                timers.iterator()) {
            it.forEachRemaining(t -> restoredTimers.add(t.getKey() + "@" + t.getTimestamp()));
        }
        assertThat(restoredTimers).containsExactlyInAnyOrderElementsOf(expectedTimers);
        assertThat(timers.peek().getTimestamp()).isEqualTo(firstTimer(range));
    }

    private static long firstTimer(KeyGroupRange range) {
        return 1_000L + firstKey(range);
    }

    private static int firstKey(KeyGroupRange range) {
        for (int key = 0; key < KEYS; key++) {
            if (range.contains(KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISM))) {
                return key;
            }
        }
        throw new AssertionError("no key in " + range);
    }

    private static <S extends State> S state(
            CheckpointableKeyedStateBackend<Integer> backend, StateDescriptor<S, ?> descriptor)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
    }

    private static final class Max implements AggregateFunction<Long, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return Long.MIN_VALUE;
        }

        @Override
        public Long add(Long value, Long accumulator) {
            return Math.max(accumulator, value);
        }

        @Override
        public Long getResult(Long accumulator) {
            return accumulator;
        }

        @Override
        public Long merge(Long a, Long b) {
            return Math.max(a, b);
        }
    }
}
