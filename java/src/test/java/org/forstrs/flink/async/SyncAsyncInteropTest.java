package org.forstrs.flink.async;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupsSavepointStateHandle;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistry;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.state.v2.internal.InternalKeyedState;
import org.apache.flink.streaming.api.operators.StreamOperatorStateHandler;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions;
import org.forstrs.flink.sync.ForStSyncKeyedStateBackend;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.RunnableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The synchronous (State V1) and the async (State V2) keyed backend share one layout: state
 * written by one path, checkpointed, is read back exactly by the other after restore (value,
 * list, map, reducing and aggregating state, and namespaces), in both directions.
 */
class SyncAsyncInteropTest {

    private static final int KEY_GROUPS = 128; // as ForStStatesTest.DirectHandler assigns them
    private static final List<String> KEYS = List.of("alice", "bob", "carol");

    @TempDir Path dir;

    private final JobID jobId = new JobID();
    private MockEnvironment env;
    private ForStStateBackend backend;
    private CheckpointStreamFactory streams;

    /** Sums longs; the accumulator is the sum. */
    static final class Sum implements AggregateFunction<Long, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Long value, Long accumulator) {
            return value + accumulator;
        }

        @Override
        public Long getResult(Long accumulator) {
            return accumulator;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    @BeforeEach
    void setUp() throws Exception {
        env = MockEnvironment.builder().build();
        Configuration settings = new Configuration();
        settings.set(ForStOptions.LOCAL_DIRECTORIES, dir.resolve("local").toString());
        backend = new ForStStateBackend(settings);
        CheckpointStorageAccess storage =
                new FileSystemCheckpointStorage(dir.resolve("checkpoints").toUri())
                        .createCheckpointStorage(jobId);
        env.setCheckpointStorageAccess(storage);
        streams =
                storage.resolveCheckpointStorageLocation(
                        1L, CheckpointStorageLocationReference.getDefault());
    }

    @AfterEach
    void tearDown() throws Exception {
        env.close();
    }

    private KeyedStateBackendParametersImpl<String> parameters(
            Collection<KeyedStateHandle> handles) {
        return new KeyedStateBackendParametersImpl<>(
                env,
                jobId,
                "interop",
                StringSerializer.INSTANCE,
                KEY_GROUPS,
                new KeyGroupRange(0, KEY_GROUPS - 1),
                env.getTaskKvStateRegistry(),
                TtlTimeProvider.DEFAULT,
                new UnregisteredMetricsGroup(),
                handles,
                new CloseableRegistry());
    }

    private static KeyedStateHandle run(RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot)
            throws Exception {
        snapshot.run();
        KeyedStateHandle handle = snapshot.get().getJobManagerOwnedSnapshot();
        assertThat(handle).isNotNull();
        return handle;
    }

    /** What key number {@code k} holds after round {@code round} (1: sync, 2: async). */
    private static String expectation(int k, int round) {
        long base = 100L * (k + 1) * round;
        TreeMap<Long, Long> map = new TreeMap<>();
        for (long u = 0; u < 3; u++) {
            map.put(base + u, u == 1 ? null : base * u);
        }
        List<Long> list = List.of(base, base + 1, base + 2);
        return "value "
                + base
                + " list "
                + list
                + " map "
                + map
                + " reduced "
                + (3 * base + 3)
                + " aggregated "
                + (3 * base + 3)
                + " ns1 "
                + (base + 10)
                + " ns2 "
                + (base + 20);
    }

    private static ValueStateDescriptor<Long> value() {
        return new ValueStateDescriptor<>("value", LongSerializer.INSTANCE);
    }

    private static ListStateDescriptor<Long> list() {
        return new ListStateDescriptor<>("list", LongSerializer.INSTANCE);
    }

    private static MapStateDescriptor<Long, Long> map() {
        return new MapStateDescriptor<>("map", LongSerializer.INSTANCE, LongSerializer.INSTANCE);
    }

    private static ReducingStateDescriptor<Long> reduced() {
        return new ReducingStateDescriptor<>("reduced", Long::sum, LongSerializer.INSTANCE);
    }

    private static AggregatingStateDescriptor<Long, Long, Long> aggregated() {
        return new AggregatingStateDescriptor<>("aggregated", new Sum(), LongSerializer.INSTANCE);
    }

    private static ValueStateDescriptor<Long> namespaced() {
        return new ValueStateDescriptor<>("namespaced", LongSerializer.INSTANCE);
    }

    private static void writeSync(CheckpointableKeyedStateBackend<String> sync, int round)
            throws Exception {
        for (int k = 0; k < KEYS.size(); k++) {
            sync.setCurrentKey(KEYS.get(k));
            long base = 100L * (k + 1) * round;
            VoidNamespace ns = VoidNamespace.INSTANCE;
            VoidNamespaceSerializer nsSerializer = VoidNamespaceSerializer.INSTANCE;
            sync.getPartitionedState(ns, nsSerializer, value()).update(base);
            org.apache.flink.api.common.state.ListState<Long> l =
                    sync.getPartitionedState(ns, nsSerializer, list());
            l.clear();
            l.add(base);
            l.addAll(List.of(base + 1, base + 2));
            org.apache.flink.api.common.state.MapState<Long, Long> m =
                    sync.getPartitionedState(ns, nsSerializer, map());
            m.clear();
            for (long u = 0; u < 3; u++) {
                m.put(base + u, u == 1 ? null : base * u);
            }
            org.apache.flink.api.common.state.ReducingState<Long> r =
                    sync.getPartitionedState(ns, nsSerializer, reduced());
            r.clear();
            org.apache.flink.api.common.state.AggregatingState<Long, Long> a =
                    sync.getPartitionedState(ns, nsSerializer, aggregated());
            a.clear();
            for (long x = 0; x < 3; x++) {
                r.add(base + x);
                a.add(base + x);
            }
            sync.getPartitionedState(1L, LongSerializer.INSTANCE, namespaced()).update(base + 10);
            sync.getPartitionedState(2L, LongSerializer.INSTANCE, namespaced()).update(base + 20);
        }
    }

    private static List<String> readSync(ForStSyncKeyedStateBackend<String> sync)
            throws Exception {
        List<String> seen = new ArrayList<>();
        for (String key : KEYS) {
            sync.setCurrentKey(key);
            VoidNamespace ns = VoidNamespace.INSTANCE;
            VoidNamespaceSerializer nsSerializer = VoidNamespaceSerializer.INSTANCE;
            ValueState<Long> v = sync.getPartitionedState(ns, nsSerializer, value());
            List<Long> l = new ArrayList<>();
            sync.getPartitionedState(ns, nsSerializer, list()).get().forEach(l::add);
            TreeMap<Long, Long> m = new TreeMap<>();
            for (Map.Entry<Long, Long> e :
                    sync.getPartitionedState(ns, nsSerializer, map()).entries()) {
                m.put(e.getKey(), e.getValue());
            }
            Long r = sync.getPartitionedState(ns, nsSerializer, reduced()).get();
            Long a = sync.getPartitionedState(ns, nsSerializer, aggregated()).get();
            Long ns1 = sync.getPartitionedState(1L, LongSerializer.INSTANCE, namespaced()).value();
            Long ns2 = sync.getPartitionedState(2L, LongSerializer.INSTANCE, namespaced()).value();
            seen.add(line(v.value(), l, m, r, a, ns1, ns2));
        }
        return seen;
    }

    private static String line(
            Long value, List<Long> list, Map<Long, Long> map, Long r, Long a, Long ns1, Long ns2) {
        return "value " + value + " list " + list + " map " + map + " reduced " + r
                + " aggregated " + a + " ns1 " + ns1 + " ns2 " + ns2;
    }

    /** The async backend's states through a handler that runs each request as one batch. */
    private static final class AsyncStates {
        final ForStStatesTest.DirectHandler handler;
        final org.apache.flink.api.common.state.v2.ValueState<Long> value;
        final org.apache.flink.api.common.state.v2.ListState<Long> list;
        final org.apache.flink.api.common.state.v2.MapState<Long, Long> map;
        final org.apache.flink.api.common.state.v2.ReducingState<Long> reduced;
        final org.apache.flink.api.common.state.v2.AggregatingState<Long, Long> aggregated;
        final org.apache.flink.api.common.state.v2.ValueState<Long> namespaced;

        @SuppressWarnings("unchecked")
        AsyncStates(ForStKeyedStateBackend<String> async) throws Exception {
            handler =
                    new ForStStatesTest.DirectHandler(
                            (ForStStateExecutor) async.createStateExecutor());
            async.setup(handler);
            handler.switchKey(KEYS.get(0));
            VoidNamespace ns = VoidNamespace.INSTANCE;
            VoidNamespaceSerializer nsSerializer = VoidNamespaceSerializer.INSTANCE;
            value =
                    async.createStateInternal(
                            ns,
                            nsSerializer,
                            new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>(
                                    "value", LongSerializer.INSTANCE));
            list =
                    async.createStateInternal(
                            ns,
                            nsSerializer,
                            new org.apache.flink.api.common.state.v2.ListStateDescriptor<>(
                                    "list", LongSerializer.INSTANCE));
            map =
                    async.createStateInternal(
                            ns,
                            nsSerializer,
                            new org.apache.flink.api.common.state.v2.MapStateDescriptor<>(
                                    "map", LongSerializer.INSTANCE, LongSerializer.INSTANCE));
            reduced =
                    async.createStateInternal(
                            ns,
                            nsSerializer,
                            new org.apache.flink.api.common.state.v2.ReducingStateDescriptor<>(
                                    "reduced", Long::sum, LongSerializer.INSTANCE));
            aggregated =
                    async.createStateInternal(
                            ns,
                            nsSerializer,
                            new org.apache.flink.api.common.state.v2.AggregatingStateDescriptor<>(
                                    "aggregated", new Sum(), LongSerializer.INSTANCE));
            namespaced =
                    async.createStateInternal(
                            1L,
                            LongSerializer.INSTANCE,
                            new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>(
                                    "namespaced", LongSerializer.INSTANCE));
        }

        @SuppressWarnings("unchecked")
        void namespace(long namespace) {
            ((InternalKeyedState<String, Long, Long>) namespaced).setCurrentNamespace(namespace);
        }

        List<String> read() {
            List<String> seen = new ArrayList<>();
            for (String key : KEYS) {
                handler.switchKey(key);
                List<Long> l = new ArrayList<>();
                list.get().forEach(l::add);
                TreeMap<Long, Long> m = new TreeMap<>();
                map.entries().forEach(e -> m.put(e.getKey(), e.getValue()));
                namespace(1L);
                Long ns1 = namespaced.value();
                namespace(2L);
                Long ns2 = namespaced.value();
                seen.add(line(value.value(), l, m, reduced.get(), aggregated.get(), ns1, ns2));
            }
            return seen;
        }

        void write(int round) {
            for (int k = 0; k < KEYS.size(); k++) {
                handler.switchKey(KEYS.get(k));
                long base = 100L * (k + 1) * round;
                value.update(base);
                list.update(List.of(base, base + 1));
                list.add(base + 2);
                map.clear();
                for (long u = 0; u < 3; u++) {
                    map.put(base + u, u == 1 ? null : base * u);
                }
                reduced.clear();
                aggregated.clear();
                for (long x = 0; x < 3; x++) {
                    reduced.add(base + x);
                    aggregated.add(base + x);
                }
                namespace(1L);
                namespaced.update(base + 10);
                namespace(2L);
                namespaced.update(base + 20);
            }
        }
    }

    /**
     * A canonical savepoint (Flink's unified format) of the synchronous backend, with a timer
     * queue, restores into the async backend: the V1 states read back through State V2, the
     * timers are on its queue. (Flink's heap backend cannot write the null map values here.)
     */
    @Test
    void canonicalSavepointRestoresIntoTheAsyncBackend() throws Exception {
        TimerSerializer<String, VoidNamespace> timerSerializer =
                new TimerSerializer<>(StringSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE);
        CheckpointableKeyedStateBackend<String> sync =
                backend.createKeyedStateBackend(parameters(List.of()));
        KeyedStateHandle canonical;
        try {
            writeSync(sync, 1);
            KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<String, VoidNamespace>> timers =
                    sync.create("timers", timerSerializer);
            for (int k = 0; k < KEYS.size(); k++) {
                timers.add(
                        new TimerHeapInternalTimer<>(10L + k, KEYS.get(k), VoidNamespace.INSTANCE));
            }
            canonical =
                    run(
                            StreamOperatorStateHandler.prepareCanonicalSavepoint(
                                            sync, new CloseableRegistry())
                                    .snapshot(
                                            1L,
                                            1L,
                                            streams,
                                            new CheckpointOptions(
                                                    SavepointType.savepoint(
                                                            SavepointFormatType.CANONICAL),
                                                    CheckpointStorageLocationReference
                                                            .getDefault())));
        } finally {
            sync.dispose();
        }
        assertThat(canonical).isInstanceOf(KeyGroupsSavepointStateHandle.class);

        ForStKeyedStateBackend<String> async =
                backend.createAsyncKeyedStateBackend(parameters(List.of(canonical)));
        try {
            List<String> round1 = new ArrayList<>();
            for (int k = 0; k < KEYS.size(); k++) {
                round1.add(expectation(k, 1));
            }
            assertThat(new AsyncStates(async).read()).isEqualTo(round1);
            KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<String, VoidNamespace>> timers =
                    async.create("timers", timerSerializer);
            List<String> restoredTimers = new ArrayList<>();
            while (timers.peek() != null) {
                TimerHeapInternalTimer<String, VoidNamespace> timer = timers.poll();
                restoredTimers.add(timer.getKey() + "@" + timer.getTimestamp());
            }
            assertThat(restoredTimers).containsExactly("alice@10", "bob@11", "carol@12");
        } finally {
            async.dispose();
        }
    }

    @Test
    void stateCrossesBetweenTheSynchronousAndTheAsyncBackend() throws Exception {
        List<String> round1 = new ArrayList<>();
        List<String> round2 = new ArrayList<>();
        for (int k = 0; k < KEYS.size(); k++) {
            round1.add(expectation(k, 1));
            round2.add(expectation(k, 2));
        }

        // 1. The synchronous backend writes and checkpoints.
        ForStSyncKeyedStateBackend<String> sync = backend.createKeyedStateBackend(parameters(List.of()));
        KeyedStateHandle fromSync;
        try {
            writeSync(sync, 1);
            assertThat(readSync(sync)).isEqualTo(round1);
            fromSync = run(sync.snapshot(1L, 1L, streams, CheckpointOptions.forCheckpointWithDefaultLocation()));
        } finally {
            sync.dispose();
        }

        // 2. The async backend restores it, reads it exactly, writes anew and checkpoints.
        ForStKeyedStateBackend<String> async =
                backend.createAsyncKeyedStateBackend(parameters(List.of(fromSync)));
        KeyedStateHandle fromAsync;
        try {
            AsyncStates states = new AsyncStates(async);
            assertThat(states.read()).isEqualTo(round1);
            states.write(2);
            assertThat(states.read()).isEqualTo(round2);
            assertThat(states.handler.errors).isEmpty();
            fromAsync = run(async.snapshot(2L, 2L, streams, CheckpointOptions.forCheckpointWithDefaultLocation()));
        } finally {
            async.dispose();
        }

        // 3. The synchronous backend restores the async backend's checkpoint. Its files restored
        // from checkpoint 1 and still live are referenced by placeholder; like the JobManager,
        // a registry that holds checkpoint 1 resolves them.
        SharedStateRegistry registry = new SharedStateRegistryImpl();
        fromSync.registerSharedStates(registry, 1L);
        fromAsync.registerSharedStates(registry, 2L);
        ForStSyncKeyedStateBackend<String> restored =
                backend.createKeyedStateBackend(parameters(List.of(fromAsync)));
        try {
            assertThat(readSync(restored)).isEqualTo(round2);
        } finally {
            restored.dispose();
        }
    }
}
