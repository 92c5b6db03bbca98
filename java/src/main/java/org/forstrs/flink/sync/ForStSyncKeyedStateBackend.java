package org.forstrs.flink.sync;

import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.checkpoint.SnapshotType;
import org.apache.flink.runtime.query.TaskKvStateRegistry;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.HeapPriorityQueuesManager;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.RegisteredStateMetaInfoBase;
import org.apache.flink.runtime.state.SavepointResources;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.SnapshotExecutionType;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategyRunner;
import org.apache.flink.runtime.state.StateBackend.KeyedStateBackendParameters;
import org.apache.flink.runtime.state.StateSnapshotTransformer.StateSnapshotTransformFactory;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueStateSnapshot;
import org.apache.flink.runtime.state.InternalKeyContext;
import org.apache.flink.runtime.state.InternalKeyContextImpl;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;
import org.apache.flink.runtime.state.metrics.SizeTrackingStateConfig;
import org.apache.flink.runtime.state.ttl.TtlAwareSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.StateMigrationException;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions.TimerServiceType;
import org.forstrs.flink.restore.ForStRestoreOperation;
import org.forstrs.flink.snapshot.CanonicalSnapshotResources;
import org.forstrs.flink.snapshot.CanonicalState;
import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.snapshot.ForStSnapshotResources;
import org.forstrs.flink.snapshot.ForStSnapshotStrategy;
import org.forstrs.flink.snapshot.HeapQueueEntries;
import org.forstrs.flink.state.DbDirectory;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.TtlCompactionFilter;
import org.forstrs.flink.timers.StoreTimerQueues;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nonnull;
import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.UUID;
import java.util.concurrent.RunnableFuture;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * The synchronous (State V1) keyed state backend of ForSt-RS, for operators that do not use async
 * state: every state access is one native call on the task thread. It keeps one native DB, one
 * column family per state name, and Flink's key layout (key-group prefix, key, namespace, user
 * key) with the async backend's value layouts, so both paths read each other's state and share
 * the checkpoint format ({@link ForStSnapshotStrategy}). Timers live in the store, one column
 * family per timer queue ({@link StoreTimerQueues}, checkpointed with the keyed state), or with
 * {@code timer-service.factory: HEAP} on Flink's heap priority queue, written into checkpoints by
 * the timer service (legacy synchronous snapshots). Canonical savepoints are Flink's unified
 * format ({@link #savepoint()}).
 */
public class ForStSyncKeyedStateBackend<K> extends AbstractKeyedStateBackend<K> {

    private static final Logger LOG = LoggerFactory.getLogger(ForStSyncKeyedStateBackend.class);

    /** Initial capacity of each timer queue per key group. */
    private static final int PQ_INITIAL_CAPACITY = 128;

    private static final byte[] EVERYTHING = new byte[0];

    private final NativeDb db;
    private final String dbUri;
    private final SyncDbAccess access;
    private final int keyGroupPrefixBytes;
    private final SerializedCompositeKeyBuilder<K> keyBuilder;
    private final HeapPriorityQueuesManager priorityQueues;

    /** The timer queues in the store; null: timers on the heap ({@link #priorityQueues}). */
    @Nullable private final StoreTimerQueues storeTimers;

    /** Registered and restored states by name, in registration order. */
    private final Map<String, StateInfo> states = new LinkedHashMap<>();

    private final Map<String, AbstractForStSyncState<K, ?, ?>> createdStates = new HashMap<>();

    /**
     * Heap timer queues of the restored checkpoint not created again yet: their element
     * serializer must stay compatible (the timers themselves come back through the timer
     * service).
     */
    private final Map<String, RegisteredPriorityQueueStateBackendMetaInfo<?>> restoredQueues =
            new HashMap<>();

    /** What checkpoints write of {@link #states}; null until needed after a change. */
    private List<StateMetaInfoSnapshot> metaInfoSnapshots;

    private final ForStSnapshotStrategy<K> snapshotStrategy;
    private volatile CheckpointStats lastCheckpointStats;
    private boolean disposed;

    /** A state's column family and meta info (serializers). */
    private record StateInfo(int cf, RegisteredKeyValueStateBackendMetaInfo<?, ?> metaInfo) {}

    ForStSyncKeyedStateBackend(
            NativeDb db,
            String dbUri,
            TaskKvStateRegistry kvStateRegistry,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            ExecutionConfig executionConfig,
            TtlTimeProvider ttlTimeProvider,
            LatencyTrackingStateConfig latencyTrackingStateConfig,
            SizeTrackingStateConfig sizeTrackingStateConfig,
            CloseableRegistry cancelStreamRegistry,
            InternalKeyContext<K> keyContext,
            Map<String, StateMetaInfoSnapshot> restoredStates,
            Map<String, HeapPriorityQueueSnapshotRestoreWrapper<?>> restoredTimerQueues,
            TimerServiceType timerService,
            int timerCacheSize) {
        super(
                kvStateRegistry,
                keySerializer,
                userCodeClassLoader,
                executionConfig,
                ttlTimeProvider,
                latencyTrackingStateConfig,
                sizeTrackingStateConfig,
                cancelStreamRegistry,
                keyContext);
        this.db = db;
        this.dbUri = dbUri;
        this.access = new SyncDbAccess(db);
        this.keyGroupPrefixBytes =
                CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                        keyContext.getNumberOfKeyGroups());
        this.keyBuilder =
                new SerializedCompositeKeyBuilder<>(keySerializer, keyGroupPrefixBytes, 32);
        this.priorityQueues =
                new HeapPriorityQueuesManager(
                        new HashMap<>(restoredTimerQueues),
                        new HeapPriorityQueueSetFactory(
                                keyContext.getKeyGroupRange(),
                                keyContext.getNumberOfKeyGroups(),
                                PQ_INITIAL_CAPACITY),
                        keyContext.getKeyGroupRange(),
                        keyContext.getNumberOfKeyGroups());
        this.storeTimers =
                timerService == TimerServiceType.HEAP
                        ? null
                        : new StoreTimerQueues(
                                access,
                                this::columnFamily,
                                keyContext.getKeyGroupRange(),
                                keyContext.getNumberOfKeyGroups(),
                                keyGroupPrefixBytes,
                                timerCacheSize);
        for (Map.Entry<String, StateMetaInfoSnapshot> restored : restoredStates.entrySet()) {
            if (restored.getValue().getBackendStateType()
                    == StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE) {
                if (restoredTimerQueues.containsKey(restored.getKey())) {
                    continue; // timers of a canonical savepoint, already on the heap
                }
                RegisteredPriorityQueueStateBackendMetaInfo<?> queue =
                        new RegisteredPriorityQueueStateBackendMetaInfo<>(restored.getValue());
                if (storeTimers != null) {
                    storeTimers.restored(queue);
                } else if (access.prefixExists(columnFamily(restored.getKey()), EVERYTHING)) {
                    // Heap queues would never read these timers: refuse rather than lose them.
                    throw new IllegalStateException(
                            "The restored state keeps the timers of '"
                                    + restored.getKey()
                                    + "' in the store (state.backend.forst.timer-service.factory:"
                                    + " ForStDB); restoring them with HEAP is not supported");
                } else {
                    restoredQueues.put(restored.getKey(), queue);
                }
                continue;
            }
            RegisteredStateMetaInfoBase info =
                    RegisteredKeyValueStateBackendMetaInfo.fromMetaInfoSnapshot(
                            restored.getValue());
            states.put(
                    restored.getKey(),
                    new StateInfo(
                            columnFamily(restored.getKey()),
                            (RegisteredKeyValueStateBackendMetaInfo<?, ?>) info));
        }
        this.snapshotStrategy =
                new ForStSnapshotStrategy<>(
                        db,
                        keySerializer,
                        this::snapshotStateMetaInfos,
                        keyContext.getKeyGroupRange(),
                        UUID.randomUUID(),
                        stats -> {
                            lastCheckpointStats = stats;
                            stats.log();
                        });
    }

    /**
     * Opens the backend's DB at {@code dbUri} (restored from the parameters' state handles if
     * there are any) and the backend over it.
     */
    public static <K> ForStSyncKeyedStateBackend<K> open(
            KeyedStateBackendParameters<K> parameters,
            String dbUri,
            String[] nativeOptions,
            LatencyTrackingStateConfig latencyTrackingStateConfig,
            SizeTrackingStateConfig sizeTrackingStateConfig,
            TimerServiceType timerService,
            int timerCacheSize)
            throws Exception {
        ForStRestoreOperation.Restored<K> restored =
                ForStRestoreOperation.openDatabase(
                        parameters, dbUri, nativeOptions, timerService == TimerServiceType.ForStDB);
        try {
            return new ForStSyncKeyedStateBackend<>(
                    restored.db(),
                    dbUri,
                    parameters.getKvStateRegistry(),
                    restored.keySerializer(),
                    parameters.getEnv().getUserCodeClassLoader().asClassLoader(),
                    parameters.getEnv().getExecutionConfig(),
                    parameters.getTtlTimeProvider(),
                    latencyTrackingStateConfig,
                    sizeTrackingStateConfig,
                    // the parameters' registry is for the restore only: Flink closes it after it
                    new CloseableRegistry(),
                    new InternalKeyContextImpl<>(
                            parameters.getKeyGroupRange(), parameters.getNumberOfKeyGroups()),
                    restored.stateMetaInfoSnapshots(),
                    restored.timerQueues(),
                    timerService,
                    timerCacheSize);
        } catch (Throwable t) {
            restored.db().close();
            DbDirectory.remove(dbUri, nativeOptions);
            throw t;
        }
    }

    SyncDbAccess access() {
        return access;
    }

    SerializedCompositeKeyBuilder<K> keyBuilder() {
        return keyBuilder;
    }

    int keyGroupPrefixBytes() {
        return keyGroupPrefixBytes;
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

    /** The timer queues in the store; null when timers are on the heap. */
    @Nullable
    public StoreTimerQueues getStoreTimers() {
        return storeTimers;
    }

    /** What the last completed snapshot of this backend cost; null before the first. */
    public CheckpointStats getLastCheckpointStats() {
        return lastCheckpointStats;
    }

    @Override
    public void setCurrentKey(K newKey) {
        super.setCurrentKey(newKey);
        keyBuilder.setKeyAndKeyGroup(getCurrentKey(), getCurrentKeyGroupIndex());
    }

    @Override
    public void setCurrentKeyAndKeyGroup(K newKey, int newKeyGroupIndex) {
        super.setCurrentKeyAndKeyGroup(newKey, newKeyGroupIndex);
        keyBuilder.setKeyAndKeyGroup(getCurrentKey(), getCurrentKeyGroupIndex());
    }

    private int columnFamily(String stateName) {
        if ("default".equals(stateName)) {
            throw new IllegalArgumentException("'default' is reserved and cannot name a state");
        }
        // Ids follow from the name: this finds a restored family or the async path's one.
        return db.createColumnFamily(stateName);
    }

    // ---- state registration ----

    @Nonnull
    @Override
    public <N, SV, SEV, S extends State, IS extends S> IS createOrUpdateInternalState(
            @Nonnull TypeSerializer<N> namespaceSerializer,
            @Nonnull StateDescriptor<S, SV> stateDesc,
            @Nonnull StateSnapshotTransformFactory<SEV> snapshotTransformFactory)
            throws Exception {
        return createOrUpdateInternalState(
                namespaceSerializer, stateDesc, snapshotTransformFactory, false);
    }

    @Nonnull
    @Override
    @SuppressWarnings("unchecked")
    public <N, SV, SEV, S extends State, IS extends S> IS createOrUpdateInternalState(
            @Nonnull TypeSerializer<N> namespaceSerializer,
            @Nonnull StateDescriptor<S, SV> stateDesc,
            @Nonnull StateSnapshotTransformFactory<SEV> snapshotTransformFactory,
            boolean allowFutureMetadataUpdates)
            throws Exception {
        checkNotDisposed();
        String name = stateDesc.getName();
        if (storeTimers != null && storeTimers.contains(name)) {
            throw new FlinkRuntimeException("State '" + name + "': a timer queue has that name");
        }
        StateInfo info = states.get(name);
        RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo;
        int cf;
        if (info == null) {
            cf = columnFamily(name);
            metaInfo =
                    new RegisteredKeyValueStateBackendMetaInfo<>(
                            stateDesc.getType(),
                            name,
                            namespaceSerializer,
                            stateDesc.getSerializer());
        } else {
            cf = info.cf();
            metaInfo = (RegisteredKeyValueStateBackendMetaInfo<N, SV>) info.metaInfo();
            updateMetaInfo(cf, metaInfo, stateDesc, namespaceSerializer);
        }
        if (allowFutureMetadataUpdates) {
            metaInfo = metaInfo.withSerializerUpgradesAllowed();
        } else {
            // As Flink's RocksDB backend: not while the serializer may still change.
            TtlCompactionFilter.configure(
                    db, cf, stateDesc, metaInfo.getStateSerializer(), ttlTimeProvider);
        }
        states.put(name, new StateInfo(cf, metaInfo));
        metaInfoSnapshots = null;

        AbstractForStSyncState<K, N, SV> state =
                (AbstractForStSyncState<K, N, SV>) createdStates.get(name);
        SV defaultValue = stateDesc.getDefaultValue();
        if (state == null) {
            state = createState(cf, stateDesc, metaInfo.getNamespaceSerializer(), metaInfo);
            createdStates.put(name, state);
        } else {
            state.updateSerializers(
                    metaInfo.getNamespaceSerializer(), metaInfo.getStateSerializer(), defaultValue);
        }
        return (IS) state;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private <N, SV, S extends State> AbstractForStSyncState<K, N, SV> createState(
            int cf,
            StateDescriptor<S, SV> stateDesc,
            TypeSerializer<N> namespaceSerializer,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo) {
        TypeSerializer<SV> serializer = metaInfo.getStateSerializer();
        SV defaultValue = stateDesc.getDefaultValue();
        switch (stateDesc.getType()) {
            case VALUE:
                return new ForStSyncValueState<>(
                        this, cf, namespaceSerializer, serializer, defaultValue);
            case LIST:
                return (AbstractForStSyncState)
                        new ForStSyncListState<>(
                                this,
                                cf,
                                namespaceSerializer,
                                (TypeSerializer) serializer,
                                (List) defaultValue);
            case MAP:
                return (AbstractForStSyncState)
                        new ForStSyncMapState<>(
                                this,
                                cf,
                                namespaceSerializer,
                                (TypeSerializer) serializer,
                                (Map) defaultValue);
            case REDUCING:
                return new ForStSyncReducingState<>(
                        this,
                        cf,
                        namespaceSerializer,
                        serializer,
                        defaultValue,
                        ((ReducingStateDescriptor<SV>) stateDesc).getReduceFunction());
            case AGGREGATING:
                return new ForStSyncAggregatingState<>(
                        this,
                        cf,
                        namespaceSerializer,
                        serializer,
                        defaultValue,
                        ((AggregatingStateDescriptor<?, SV, ?>) stateDesc).getAggregateFunction());
            default:
                throw new FlinkRuntimeException(
                        "The ForSt-RS state backend does not support "
                                + stateDesc.getType()
                                + " state (state '"
                                + stateDesc.getName()
                                + "')");
        }
    }

    /**
     * A state registered again (after restore, or with new serializers): the namespace
     * serializer must read the old bytes as they are; a value serializer that needs migration
     * rewrites every entry of the state; an incompatible one is refused.
     */
    private <N, SV, S extends State> void updateMetaInfo(
            int cf,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo,
            StateDescriptor<S, SV> stateDesc,
            TypeSerializer<N> namespaceSerializer)
            throws Exception {
        TypeSerializer<N> previousNamespaceSerializer = metaInfo.getNamespaceSerializer();
        TypeSerializerSchemaCompatibility<N> namespaceCompatibility =
                metaInfo.updateNamespaceSerializer(namespaceSerializer);
        if (namespaceCompatibility.isCompatibleAfterMigration()
                || namespaceCompatibility.isIncompatible()) {
            throw new StateMigrationException(
                    "State '"
                            + stateDesc.getName()
                            + "': the new namespace serializer ("
                            + namespaceSerializer
                            + ") must be compatible with the old one ("
                            + previousNamespaceSerializer
                            + ").");
        }
        metaInfo.checkStateMetaInfo(stateDesc);
        TypeSerializer<SV> previousStateSerializer = metaInfo.getStateSerializer();
        TypeSerializerSchemaCompatibility<SV> compatibility =
                metaInfo.updateStateSerializer(stateDesc.getSerializer());
        if (compatibility.isCompatibleAfterMigration()) {
            migrate(cf, stateDesc, metaInfo);
        } else if (compatibility.isIncompatible()) {
            throw new StateMigrationException(
                    "State '"
                            + stateDesc.getName()
                            + "': the new state serializer ("
                            + stateDesc.getSerializer()
                            + ") must not be incompatible with the old one ("
                            + previousStateSerializer
                            + ").");
        }
    }

    /**
     * Rewrites every value of the state from the previous serializer's format into the new one.
     * Keys are not touched, so for map state the user key serializer must be compatible as is.
     */
    @SuppressWarnings("unchecked")
    private <N, SV, S extends State> void migrate(
            int cf,
            StateDescriptor<S, SV> stateDesc,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo)
            throws Exception {
        if (stateDesc.getType() == StateDescriptor.Type.MAP) {
            TypeSerializerSnapshot<SV> previous = metaInfo.getPreviousStateSerializerSnapshot();
            TypeSerializer<SV> next = metaInfo.getStateSerializer();
            if (!(previous instanceof MapSerializerSnapshot) || !(next instanceof MapSerializer)) {
                throw new StateMigrationException(
                        "State '" + stateDesc.getName() + "': map state without map serializers");
            }
            if (!userKeysCompatibleAsIs(
                    (MapSerializerSnapshot<?, ?>) previous, (MapSerializer<?, ?>) next)) {
                throw new StateMigrationException(
                        "State '"
                                + stateDesc.getName()
                                + "': the map's key serializer changed its format; only map"
                                + " values can be migrated");
            }
        }
        LOG.info(
                "Migrating state '{}' of {}: its serializer's format changed",
                stateDesc.getName(),
                dbUri);
        AbstractForStSyncState<K, N, SV> state =
                createState(cf, stateDesc, metaInfo.getNamespaceSerializer(), metaInfo);
        TypeSerializer<SV> prior =
                (TypeSerializer<SV>)
                        TtlAwareSerializer.wrapTtlAwareSerializer(
                                metaInfo.getPreviousStateSerializer());
        TypeSerializer<SV> next =
                (TypeSerializer<SV>)
                        TtlAwareSerializer.wrapTtlAwareSerializer(metaInfo.getStateSerializer());
        DataInputDeserializer in = new DataInputDeserializer();
        DataOutputSerializer out = new DataOutputSerializer(512);
        PrefixScan scan = new PrefixScan(access, cf, EVERYTHING);
        long migrated = 0;
        while (scan.hasNext()) {
            PrefixScan.Entry entry = scan.next();
            in.setBuffer(entry.value());
            out.clear();
            state.migrateSerializedValue(in, out, prior, next, ttlTimeProvider);
            access.put(cf, entry.key(), out.getCopyOfBuffer());
            migrated++;
        }
        LOG.info("Migrated {} entries of state '{}'", migrated, stateDesc.getName());
    }

    @SuppressWarnings("unchecked")
    private static <UK> boolean userKeysCompatibleAsIs(
            MapSerializerSnapshot<?, ?> previous, MapSerializer<?, ?> next) {
        TypeSerializerSnapshot<UK> previousKeys =
                (TypeSerializerSnapshot<UK>) previous.getKeySerializerSnapshot();
        TypeSerializer<UK> nextKeys = (TypeSerializer<UK>) next.getKeySerializer();
        return nextKeys.snapshotConfiguration()
                .resolveSchemaCompatibility(previousKeys)
                .isCompatibleAsIs();
    }

    private List<StateMetaInfoSnapshot> snapshotStateMetaInfos() {
        if (metaInfoSnapshots == null) {
            List<StateMetaInfoSnapshot> snapshots = new ArrayList<>(states.size());
            for (StateInfo info : states.values()) {
                snapshots.add(info.metaInfo().snapshot());
            }
            if (storeTimers != null) {
                // Their timers are in their column families, like keyed state.
                for (RegisteredPriorityQueueStateBackendMetaInfo<?> queue :
                        storeTimers.metaInfos()) {
                    snapshots.add(queue.snapshot());
                }
            }
            // Heap queues: only their serializers, the timers are written by the timer service.
            for (HeapPriorityQueueSnapshotRestoreWrapper<?> queue :
                    priorityQueues.getRegisteredPQStates().values()) {
                snapshots.add(queue.getMetaInfo().snapshot());
            }
            for (RegisteredPriorityQueueStateBackendMetaInfo<?> queue : restoredQueues.values()) {
                snapshots.add(queue.snapshot());
            }
            metaInfoSnapshots = List.copyOf(snapshots);
        }
        return metaInfoSnapshots;
    }

    // ---- key iteration ----

    @Override
    public <N> Stream<K> getKeys(String state, N namespace) {
        StateInfo info = states.get(state);
        if (info == null) {
            return Stream.empty();
        }
        @SuppressWarnings("unchecked")
        TypeSerializer<N> namespaceSerializer =
                (TypeSerializer<N>) info.metaInfo().getNamespaceSerializer();
        return stream(
                new KeysIterator<>(
                        new PrefixScan(access, info.cf(), EVERYTHING),
                        keyGroupPrefixBytes,
                        getKeySerializer().duplicate(),
                        namespaceSerializer.duplicate(),
                        namespace));
    }

    @Override
    public <N> Stream<K> getKeys(List<String> states, N namespace) {
        Stream<K> keys = Stream.empty();
        for (String state : states) {
            keys = Stream.concat(keys, getKeys(state, namespace));
        }
        return keys.distinct();
    }

    @Override
    public <N> Stream<Tuple2<K, N>> getKeysAndNamespaces(String state) {
        StateInfo info = states.get(state);
        if (info == null) {
            return Stream.empty();
        }
        @SuppressWarnings("unchecked")
        TypeSerializer<N> namespaceSerializer =
                (TypeSerializer<N>) info.metaInfo().getNamespaceSerializer();
        return stream(
                new KeysAndNamespacesIterator<>(
                        new PrefixScan(access, info.cf(), EVERYTHING),
                        keyGroupPrefixBytes,
                        getKeySerializer().duplicate(),
                        namespaceSerializer.duplicate()));
    }

    private static <T> Stream<T> stream(Iterator<T> iterator) {
        return StreamSupport.stream(
                Spliterators.spliteratorUnknownSize(iterator, Spliterator.ORDERED), false);
    }

    @Override
    public int numKeyValueStateEntries() {
        int count = 0;
        for (StateInfo info : states.values()) {
            PrefixScan scan = new PrefixScan(access, info.cf(), EVERYTHING);
            while (scan.hasNext()) {
                scan.next();
                count++;
            }
        }
        return count;
    }

    // ---- timers ----

    @Nonnull
    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer) {
        return create(stateName, byteOrderedElementSerializer, false);
    }

    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer,
                    boolean allowFutureMetadataUpdates) {
        checkNotDisposed();
        if (states.containsKey(stateName)) {
            throw new FlinkRuntimeException(
                    "Timer queue '" + stateName + "': a keyed state has that name");
        }
        metaInfoSnapshots = null;
        if (storeTimers != null) {
            return storeTimers.create(
                    stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
        }
        checkRestoredQueue(stateName, byteOrderedElementSerializer);
        return priorityQueues.createOrUpdate(
                stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
    }

    /** A queue of the restored checkpoint must be created with a compatible serializer. */
    @SuppressWarnings("unchecked")
    private <T> void checkRestoredQueue(String stateName, TypeSerializer<T> serializer) {
        RegisteredPriorityQueueStateBackendMetaInfo<T> restored =
                (RegisteredPriorityQueueStateBackendMetaInfo<T>) restoredQueues.remove(stateName);
        if (restored != null && restored.updateElementSerializer(serializer).isIncompatible()) {
            throw new FlinkRuntimeException(
                    new StateMigrationException(
                            "Timer queue '"
                                    + stateName
                                    + "': the new element serializer ("
                                    + serializer
                                    + ") is incompatible with the restored one"));
        }
    }

    /**
     * Timers in the store are in the DB's files like keyed state. Heap timers are not, so the
     * timer service writes them into every checkpoint and native savepoint (as with Flink's
     * RocksDB backend and heap timers); a canonical savepoint has timers of either kind among its
     * states ({@link #savepoint()}).
     */
    @Override
    public boolean requiresLegacySynchronousTimerSnapshots(SnapshotType checkpointType) {
        boolean canonical =
                checkpointType.isSavepoint()
                        && ((SavepointType) checkpointType).getFormatType()
                                == SavepointFormatType.CANONICAL;
        return storeTimers == null && !canonical;
    }

    // ---- snapshots ----

    @Nonnull
    @Override
    public RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot(
            long checkpointId,
            long timestamp,
            @Nonnull CheckpointStreamFactory streamFactory,
            @Nonnull CheckpointOptions checkpointOptions)
            throws Exception {
        checkNotDisposed();
        flushTimerWrites();
        return new SnapshotStrategyRunner<KeyedStateHandle, ForStSnapshotResources>(
                        "ForSt-RS sync snapshot",
                        snapshotStrategy,
                        // closing the backend cancels running snapshots, as in Flink's backends
                        cancelStreamRegistry,
                        SnapshotExecutionType.ASYNCHRONOUS)
                .snapshot(checkpointId, timestamp, streamFactory, checkpointOptions);
    }

    /**
     * A canonical savepoint (Flink's unified key-group format): every state's column family
     * scanned in key order, and the heap timers. It runs synchronously, so it sees the state of
     * this moment without pinning a version of the DB.
     */
    @Nonnull
    @Override
    public SavepointResources<K> savepoint() {
        checkNotDisposed();
        flushTimerWrites();
        List<CanonicalState> canonical = new ArrayList<>();
        for (StateInfo info : states.values()) {
            int cf = info.cf();
            canonical.add(
                    new CanonicalState(
                            info.metaInfo().snapshot(),
                            () -> new PrefixScan(access, cf, EVERYTHING)));
        }
        for (HeapPriorityQueueSnapshotRestoreWrapper<?> queue :
                priorityQueues.getRegisteredPQStates().values()) {
            canonical.add(heapTimers(queue));
        }
        for (RegisteredPriorityQueueStateBackendMetaInfo<?> queue : restoredQueues.values()) {
            canonical.add(new CanonicalState(queue.snapshot(), Collections::emptyIterator));
        }
        if (storeTimers != null) {
            // Stored timers are laid out as RocksDB's: key-group prefix + element, empty value.
            for (RegisteredPriorityQueueStateBackendMetaInfo<?> queue : storeTimers.metaInfos()) {
                int cf = columnFamily(queue.getName());
                canonical.add(
                        new CanonicalState(
                                queue.snapshot(), () -> new PrefixScan(access, cf, EVERYTHING)));
            }
        }
        return new SavepointResources<>(
                new CanonicalSnapshotResources<>(
                        canonical,
                        keyGroupRange,
                        keySerializer,
                        keyGroupPrefixBytes,
                        keyGroupCompressionDecorator),
                SnapshotExecutionType.SYNCHRONOUS);
    }

    private <T extends HeapPriorityQueueElement> CanonicalState heapTimers(
            HeapPriorityQueueSnapshotRestoreWrapper<T> queue) {
        HeapPriorityQueueStateSnapshot<T> snapshot = queue.stateSnapshot();
        return new CanonicalState(
                queue.getMetaInfo().snapshot(),
                () -> new HeapQueueEntries<>(snapshot, keyGroupRange, keyGroupPrefixBytes));
    }

    /** Snapshots must see every timer added or removed so far. */
    private void flushTimerWrites() {
        if (storeTimers != null) {
            storeTimers.flush();
        }
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
     * Values are deserialized afresh on every read, but heap timers (and the cached head of a
     * timer queue in the store) are kept by reference, so objects are not safe to reuse.
     */
    @Override
    public boolean isSafeToReuseKVState() {
        return false;
    }

    @Override
    public String getBackendTypeIdentifier() {
        return ForStStateBackend.NAME;
    }

    private void checkNotDisposed() {
        if (disposed) {
            throw new IllegalStateException("The ForSt-RS keyed backend at " + dbUri + " is disposed");
        }
    }

    @Override
    public void dispose() {
        if (disposed) {
            return;
        }
        disposed = true;
        super.dispose();
        createdStates.clear();
        states.clear();
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
    }

    /** Whether the DB is closed (after {@link #dispose()}). */
    public boolean isDisposed() {
        return disposed;
    }

    static boolean startsWith(byte[] bytes, int offset, byte[] prefix) {
        return bytes.length - offset >= prefix.length
                && Arrays.equals(bytes, offset, offset + prefix.length, prefix, 0, prefix.length);
    }
}
