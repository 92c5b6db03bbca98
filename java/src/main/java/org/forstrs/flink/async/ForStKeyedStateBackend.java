package org.forstrs.flink.async;

import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.v2.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.ReducingStateDescriptor;
import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.api.common.state.v2.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.asyncprocessing.StateExecutor;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.HeapPriorityQueuesManager;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.SnapshotExecutionType;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategyRunner;
import org.apache.flink.runtime.state.StateBackend.KeyedStateBackendParameters;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.state.v2.RegisteredKeyAndUserKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.v2.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.v2.internal.InternalKeyedState;
import org.apache.flink.runtime.state.v2.ttl.TtlStateFactory;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.IOUtils;
import org.apache.flink.util.StateMigrationException;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.restore.ForStRestoreOperation;
import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.snapshot.ForStSnapshotResources;
import org.forstrs.flink.snapshot.ForStSnapshotStrategy;
import org.forstrs.flink.state.DbDirectory;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.TtlCompactionFilter;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nonnull;
import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.RunnableFuture;
import java.util.function.Supplier;

/**
 * The async keyed state backend of ForSt-RS: one native DB per backend instance, one column family
 * per state (named by the state id), timers on Flink's heap priority queue.
 */
public class ForStKeyedStateBackend<K> implements AsyncKeyedStateBackend<K> {

    private static final Logger LOG = LoggerFactory.getLogger(ForStKeyedStateBackend.class);

    /** Initial capacity of each timer queue per key group. */
    private static final int PQ_INITIAL_CAPACITY = 128;

    private final NativeDb db;
    private final String dbUri;
    private final ExecutionConfig executionConfig;
    private final TypeSerializer<K> keySerializer;
    private final int keyGroupPrefixBytes;
    private final KeyGroupRange keyGroupRange;
    private final TtlTimeProvider ttlTimeProvider;
    private final HeapPriorityQueuesManager priorityQueues;
    private final int executorThreads;
    private final boolean writeBehind;
    private final boolean runAtIssue;

    private final Map<String, InternalKeyedState<K, ?, ?>> statesById = new HashMap<>();
    private final Map<String, StateDescriptor.Type> typesById = new HashMap<>();
    private final Map<String, Integer> columnFamilies = new HashMap<>();

    /** Meta info of every state, restored or registered, in registration order. */
    private final Map<String, RegisteredKeyValueStateBackendMetaInfo<?, ?>> stateMetaInfos;

    /** What checkpoints write of {@link #stateMetaInfos}; null until needed after a change. */
    private List<StateMetaInfoSnapshot> metaInfoSnapshots;

    private final ForStSnapshotStrategy<K> snapshotStrategy;
    private final SnapshotStrategyRunner<KeyedStateHandle, ForStSnapshotResources> snapshotRunner;
    private volatile CheckpointStats lastCheckpointStats;

    /** Streams of running snapshots; closed on dispose (the restore registry closes earlier). */
    private final CloseableRegistry snapshotStreams = new CloseableRegistry();

    private final Object lock = new Object();
    private final List<ForStStateExecutor> executors = new ArrayList<>();

    /**
     * The executor running this backend's batches on the task thread, where writes may go behind
     * and requests run at issue ({@link TaskThreadRequestHandler}); null unless it is the only one
     * (one controller per operator).
     */
    @Nullable private volatile ForStStateExecutor inlineExecutor;
    private boolean disposed;

    private StateRequestHandler stateRequestHandler;

    private ForStKeyedStateBackend(
            NativeDb db,
            String dbUri,
            ExecutionConfig executionConfig,
            TypeSerializer<K> keySerializer,
            int numberOfKeyGroups,
            KeyGroupRange keyGroupRange,
            TtlTimeProvider ttlTimeProvider,
            int executorThreads,
            boolean writeBehind,
            boolean runAtIssue,
            Map<String, RegisteredKeyValueStateBackendMetaInfo<?, ?>> restoredStateMetaInfos,
            Map<String, HeapPriorityQueueSnapshotRestoreWrapper<?>> restoredTimerQueues) {
        this.db = db;
        this.dbUri = dbUri;
        this.executionConfig = executionConfig;
        this.keySerializer = keySerializer;
        this.keyGroupPrefixBytes =
                CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                        numberOfKeyGroups);
        this.keyGroupRange = keyGroupRange;
        this.ttlTimeProvider = ttlTimeProvider;
        this.executorThreads = executorThreads;
        this.writeBehind = writeBehind;
        this.runAtIssue = runAtIssue;
        this.priorityQueues =
                new HeapPriorityQueuesManager(
                        // timers of a canonical savepoint; native ones come via the timer service
                        new HashMap<>(restoredTimerQueues),
                        new HeapPriorityQueueSetFactory(
                                keyGroupRange, numberOfKeyGroups, PQ_INITIAL_CAPACITY),
                        keyGroupRange,
                        numberOfKeyGroups);
        this.stateMetaInfos = new LinkedHashMap<>(restoredStateMetaInfos);
        for (String restoredState : restoredStateMetaInfos.keySet()) {
            // Ids follow from the name, so this finds the restored column family.
            columnFamily(restoredState);
        }
        this.snapshotStrategy =
                new ForStSnapshotStrategy<>(
                        db,
                        keySerializer,
                        this::snapshotStateMetaInfos,
                        keyGroupRange,
                        UUID.randomUUID(),
                        this::recordCheckpointStats);
        this.snapshotRunner =
                new SnapshotStrategyRunner<>(
                        "ForSt-RS snapshot",
                        snapshotStrategy,
                        snapshotStreams,
                        SnapshotExecutionType.ASYNCHRONOUS);
    }

    /**
     * Opens the backend's DB at {@code dbUri} (a leftover of an earlier run at that place is
     * removed first), restored from the parameters' state handles if there are any.
     *
     * @param executorThreads threads per state executor; 0: batches run on the task thread
     * @param writeBehind with batches on the task thread: writes may complete at once and go with
     *     the next batch ({@link TaskThreadRequestHandler})
     * @param runAtIssue with batches on the task thread: a request of a key no other record holds
     *     runs when issued ({@link TaskThreadRequestHandler})
     */
    public static <K> ForStKeyedStateBackend<K> open(
            KeyedStateBackendParameters<K> parameters,
            ExecutionConfig executionConfig,
            String dbUri,
            String[] nativeOptions,
            int executorThreads,
            boolean writeBehind,
            boolean runAtIssue)
            throws Exception {
        ForStRestoreOperation.Restored<K> restored =
                ForStRestoreOperation.openDatabase(parameters, dbUri, nativeOptions);
        try {
            return new ForStKeyedStateBackend<>(
                    restored.db(),
                    dbUri,
                    executionConfig,
                    restored.keySerializer(),
                    parameters.getNumberOfKeyGroups(),
                    parameters.getKeyGroupRange(),
                    parameters.getTtlTimeProvider(),
                    executorThreads,
                    writeBehind,
                    runAtIssue,
                    restored.stateMetaInfos(),
                    restored.timerQueues());
        } catch (Throwable t) {
            restored.db().close();
            throw t;
        }
    }

    /** Where the DB's files are (a URI string). */
    public String getDbUri() {
        return dbUri;
    }

    /** The backend's database, for tests that look at what it stores. */
    @VisibleForTesting
    public NativeDb getNativeDb() {
        return db;
    }

    /** Applies the writes that went behind (task thread): the store then holds every write. */
    private void flushWritesBehind() {
        List<ForStStateExecutor> all;
        synchronized (lock) {
            all = List.copyOf(executors);
        }
        for (ForStStateExecutor executor : all) {
            executor.flushWritesBehind();
        }
    }

    @Override
    public void setup(@Nonnull StateRequestHandler stateRequestHandler) {
        this.stateRequestHandler =
                (writeBehind || runAtIssue)
                                && executorThreads == 0
                                && stateRequestHandler instanceof StateExecutionController
                        ? new TaskThreadRequestHandler(
                                (StateExecutionController<?>) stateRequestHandler,
                                () -> inlineExecutor,
                                writeBehind,
                                runAtIssue)
                        : stateRequestHandler;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <N, S extends State, SV> S getOrCreateKeyedState(
            N defaultNamespace,
            TypeSerializer<N> namespaceSerializer,
            StateDescriptor<SV> stateDesc)
            throws Exception {
        InternalKeyedState<K, ?, ?> state = statesById.get(stateDesc.getStateId());
        if (state == null) {
            if (!stateDesc.isSerializerInitialized()) {
                stateDesc.initializeSerializerUnlessSet(executionConfig);
            }
            state =
                    TtlStateFactory.createStateAndWrapWithTtlIfEnabled(
                            defaultNamespace,
                            namespaceSerializer,
                            stateDesc,
                            this,
                            ttlTimeProvider);
            statesById.put(stateDesc.getStateId(), state);
        }
        return (S) state;
    }

    @Nonnull
    @Override
    @SuppressWarnings({"unchecked", "rawtypes"}) // the interface's bound is a raw type
    public <N, S extends InternalKeyedState, SV> S createStateInternal(
            @Nonnull N defaultNamespace,
            @Nonnull TypeSerializer<N> namespaceSerializer,
            @Nonnull StateDescriptor<SV> stateDesc)
            throws Exception {
        if (stateRequestHandler == null) {
            throw new IllegalStateException(
                    "setup(StateRequestHandler) must be called before states are created");
        }
        if (!stateDesc.isSerializerInitialized()) {
            stateDesc.initializeSerializerUnlessSet(executionConfig);
        }
        String id = stateDesc.getStateId();
        StateDescriptor.Type previous = typesById.putIfAbsent(id, stateDesc.getType());
        if (previous != null && previous != stateDesc.getType()) {
            throw new IllegalStateException(
                    "State '"
                            + id
                            + "' was created as "
                            + previous
                            + ", now requested as "
                            + stateDesc.getType());
        }
        registerStateMetaInfo(stateDesc, namespaceSerializer);
        int cf = columnFamily(id);
        TtlCompactionFilter.configure(db, cf, stateDesc, ttlTimeProvider);
        KeySerde<K, N> keys =
                new KeySerde<>(keyBuilderFactory(), namespaceSerializer, defaultNamespace);
        switch (stateDesc.getType()) {
            case VALUE:
                return (S)
                        new ForStValueState<>(
                                stateRequestHandler, stateDesc.getSerializer(), cf, keys);
            case LIST:
                return (S)
                        new ForStListState<>(
                                stateRequestHandler, stateDesc.getSerializer(), cf, keys);
            case MAP:
                return (S)
                        new ForStMapState<>(
                                stateRequestHandler,
                                ((MapStateDescriptor<?, SV>) stateDesc).getUserKeySerializer(),
                                stateDesc.getSerializer(),
                                cf,
                                keys);
            case REDUCING:
                return (S)
                        new ForStReducingState<>(
                                stateRequestHandler,
                                ((ReducingStateDescriptor<SV>) stateDesc).getReduceFunction(),
                                stateDesc.getSerializer(),
                                cf,
                                keys);
            case AGGREGATING:
                return (S)
                        new ForStAggregatingState<>(
                                stateRequestHandler,
                                ((AggregatingStateDescriptor<?, SV, ?>) stateDesc)
                                        .getAggregateFunction(),
                                stateDesc.getSerializer(),
                                cf,
                                keys);
            default:
                throw new UnsupportedOperationException(
                        "The ForSt-RS state backend does not support "
                                + stateDesc.getType()
                                + " state yet (state '"
                                + id
                                + "')");
        }
    }

    /**
     * Records the state's serializers for checkpoints; for a restored state, checks first that
     * they can read what the checkpoint holds (no migration: the engine never rewrites values).
     */
    private <N, SV> void registerStateMetaInfo(
            StateDescriptor<SV> stateDesc, TypeSerializer<N> namespaceSerializer)
            throws StateMigrationException {
        String id = stateDesc.getStateId();
        TypeSerializer<?> userKeySerializer =
                stateDesc instanceof MapStateDescriptor
                        ? ((MapStateDescriptor<?, SV>) stateDesc).getUserKeySerializer()
                        : null;
        RegisteredKeyValueStateBackendMetaInfo<?, ?> restored = stateMetaInfos.get(id);
        if (restored == null) {
            metaInfoSnapshots = null;
            stateMetaInfos.put(
                    id,
                    userKeySerializer == null
                            ? new RegisteredKeyValueStateBackendMetaInfo<>(
                                    id,
                                    stateDesc.getType(),
                                    namespaceSerializer,
                                    stateDesc.getSerializer())
                            : new RegisteredKeyAndUserKeyValueStateBackendMetaInfo<>(
                                    id,
                                    stateDesc.getType(),
                                    namespaceSerializer,
                                    stateDesc.getSerializer(),
                                    userKeySerializer));
            return;
        }
        StateSerializerCheck.check(restored, stateDesc, namespaceSerializer, userKeySerializer);
    }

    /** On the task thread, like state registration; rebuilt only after a state is added. */
    private List<StateMetaInfoSnapshot> snapshotStateMetaInfos() {
        if (metaInfoSnapshots == null) {
            List<StateMetaInfoSnapshot> snapshots = new ArrayList<>(stateMetaInfos.size());
            for (RegisteredKeyValueStateBackendMetaInfo<?, ?> info : stateMetaInfos.values()) {
                snapshots.add(info.snapshot());
            }
            metaInfoSnapshots = List.copyOf(snapshots);
        }
        return metaInfoSnapshots;
    }

    private void recordCheckpointStats(CheckpointStats stats) {
        lastCheckpointStats = stats;
        stats.log();
    }

    /** What the last completed snapshot of this backend cost; null before the first. */
    public CheckpointStats getLastCheckpointStats() {
        return lastCheckpointStats;
    }

    private int columnFamily(String stateId) {
        Integer cf = columnFamilies.get(stateId);
        if (cf == null) {
            if ("default".equals(stateId)) {
                throw new IllegalArgumentException(
                        "'default' is reserved and cannot name a state");
            }
            cf = db.createColumnFamily(stateId);
            columnFamilies.put(stateId, cf);
        }
        return cf;
    }

    private Supplier<SerializedCompositeKeyBuilder<K>> keyBuilderFactory() {
        TypeSerializer<K> template = keySerializer;
        int prefixBytes = keyGroupPrefixBytes;
        return () -> new SerializedCompositeKeyBuilder<>(template.duplicate(), prefixBytes, 32);
    }

    @Nonnull
    @Override
    public StateExecutor createStateExecutor() {
        synchronized (lock) {
            if (disposed) {
                throw new FlinkRuntimeException(
                        "Cannot create a state executor: the ForSt-RS keyed backend is disposed");
            }
            // A second executor would run batches that do not carry the first one's writes.
            flushWritesBehind();
            ForStStateExecutor executor = new ForStStateExecutor(db, executorThreads);
            executors.add(executor);
            inlineExecutor = executors.size() == 1 && executor.runsInline() ? executor : null;
            return executor;
        }
    }

    @Override
    public KeyGroupRange getKeyGroupRange() {
        return keyGroupRange;
    }

    @Override
    public boolean isSafeToReuseKVState() {
        return true;
    }

    @Override
    public String getBackendTypeIdentifier() {
        return ForStStateBackend.NAME;
    }

    @Nonnull
    @Override
    public RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot(
            long checkpointId,
            long timestamp,
            @Nonnull CheckpointStreamFactory streamFactory,
            @Nonnull CheckpointOptions checkpointOptions)
            throws Exception {
        synchronized (lock) {
            if (disposed) {
                throw new IllegalStateException(
                        "Cannot snapshot: the ForSt-RS keyed backend is disposed (checkpoint "
                                + checkpointId
                                + ")");
            }
        }
        flushWritesBehind();
        return snapshotRunner.snapshot(checkpointId, timestamp, streamFactory, checkpointOptions);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        snapshotStrategy.notifyCheckpointComplete(checkpointId);
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) {
        snapshotStrategy.notifyCheckpointAborted(checkpointId);
    }

    /**
     * Nothing to do: a subsumed checkpoint's files stay tracked until a later checkpoint is
     * confirmed, which only makes fewer files reusable, never a deleted one.
     */
    @Override
    public void notifyCheckpointSubsumed(long checkpointId) {}

    @Nonnull
    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer) {
        return priorityQueues.createOrUpdate(stateName, byteOrderedElementSerializer);
    }

    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer,
                    boolean allowFutureMetadataUpdates) {
        return priorityQueues.createOrUpdate(
                stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
    }

    @Override
    public void dispose() {
        synchronized (lock) {
            if (disposed) {
                return;
            }
            disposed = true;
            IOUtils.closeQuietly(snapshotStreams);
            for (ForStStateExecutor executor : executors) {
                executor.shutdown();
            }
            executors.clear();
            inlineExecutor = null;
            try {
                db.close();
            } catch (Throwable t) {
                LOG.warn("Closing the ForSt-RS database at {} failed", dbUri, t);
            }
            try {
                DbDirectory.remove(dbUri, db.options());
            } catch (Throwable t) {
                LOG.warn("Could not delete the ForSt-RS database at {}", dbUri, t);
            }
            statesById.clear();
        }
    }

    @Override
    public void close() {
        dispose();
    }

    /** Whether the DB is closed (after {@link #dispose()}). */
    boolean isDisposed() {
        synchronized (lock) {
            return disposed;
        }
    }
}
