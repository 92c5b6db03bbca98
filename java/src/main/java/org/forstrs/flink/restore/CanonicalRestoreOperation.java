package org.forstrs.flink.restore;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyExtractorFunction;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.StateSerializerProvider;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSet;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.restore.FullSnapshotRestoreOperation;
import org.apache.flink.runtime.state.restore.KeyGroup;
import org.apache.flink.runtime.state.restore.KeyGroupEntry;
import org.apache.flink.runtime.state.restore.SavepointRestoreResult;
import org.apache.flink.runtime.state.restore.ThrowingIterator;

import org.forstrs.flink.state.BatchEncoder;
import org.forstrs.flink.state.NativeDb;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Restores a keyed backend from Flink's unified (canonical) savepoint format, written by any of
 * Flink's keyed backends or ours, at any parallelism: Flink's {@link FullSnapshotRestoreOperation}
 * reads the key groups of our range; key-value entries go into the state's column family in
 * batched writes (their bytes are already our layout, which is Flink's RocksDB layout), timers
 * into their column families for the store-backed timer service or else into heap timer queues,
 * as Flink's RocksDB backend does with heap timers.
 */
public final class CanonicalRestoreOperation<K> {

    /** Initial capacity of each restored timer queue per key group. */
    private static final int QUEUE_INITIAL_CAPACITY = 128;

    /** A write batch is applied once its encoded size reaches this. */
    private static final int BATCH_BYTES = 4 << 20;

    private final Collection<KeyedStateHandle> handles;
    private final StateSerializerProvider<K> keySerializer;
    private final ClassLoader userCodeClassLoader;
    private final KeyGroupRange keyGroupRange;
    private final int numberOfKeyGroups;
    private final int keyGroupPrefixBytes;
    private final HeapPriorityQueueSetFactory queueFactory;

    /**
     * Timers go into a column family per queue, laid out as the savepoint has them (key-group
     * prefix + element, empty value), where the store-backed timer service reads them; otherwise
     * onto heap queues.
     */
    private final boolean timersInStore;
    private final Map<String, StateMetaInfoSnapshot> metaInfos = new LinkedHashMap<>();
    private final Map<String, HeapPriorityQueueSnapshotRestoreWrapper<?>> timerQueues =
            new LinkedHashMap<>();
    private final DataInputDeserializer elementInput = new DataInputDeserializer();
    private final BatchEncoder batch = new BatchEncoder(1 << 20);
    private ByteBuffer response = ByteBuffer.allocateDirect(4096);
    private int batchBytes;

    /** Whether the handles are in the unified savepoint format (rather than native). */
    public static boolean isCanonical(Collection<KeyedStateHandle> handles) {
        return handles.stream()
                .filter(Objects::nonNull)
                .anyMatch(handle -> handle instanceof KeyGroupsStateHandle);
    }

    CanonicalRestoreOperation(
            Collection<KeyedStateHandle> handles,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            KeyGroupRange keyGroupRange,
            int numberOfKeyGroups,
            boolean timersInStore) {
        this.handles = handles;
        this.timersInStore = timersInStore;
        this.keySerializer = StateSerializerProvider.fromNewRegisteredSerializer(keySerializer);
        this.userCodeClassLoader = userCodeClassLoader;
        this.keyGroupRange = keyGroupRange;
        this.numberOfKeyGroups = numberOfKeyGroups;
        this.keyGroupPrefixBytes =
                CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                        numberOfKeyGroups);
        this.queueFactory =
                new HeapPriorityQueueSetFactory(
                        keyGroupRange, numberOfKeyGroups, QUEUE_INITIAL_CAPACITY);
    }

    /** Fills the new, empty {@code db}; the caller closes it if this throws. */
    ForStRestoreOperation.Restored<K> restoreInto(NativeDb db) throws Exception {
        FullSnapshotRestoreOperation<K> savepoint =
                new FullSnapshotRestoreOperation<>(
                        keyGroupRange, userCodeClassLoader, handles, keySerializer);
        try (ThrowingIterator<SavepointRestoreResult> results = savepoint.restore()) {
            while (results.hasNext()) {
                restoreHandle(db, results.next());
            }
        }
        return new ForStRestoreOperation.Restored<>(
                db, keySerializer.currentSchemaSerializer(), metaInfos, timerQueues);
    }

    private void restoreHandle(NativeDb db, SavepointRestoreResult result) throws Exception {
        List<StateMetaInfoSnapshot> states = result.getStateMetaInfoSnapshots();
        Map<Integer, Integer> columnFamilies = new HashMap<>();
        Map<Integer, HeapPriorityQueueSnapshotRestoreWrapper<?>> queues = new HashMap<>();
        for (int id = 0; id < states.size(); id++) {
            StateMetaInfoSnapshot state = states.get(id);
            metaInfos.putIfAbsent(state.getName(), state);
            if (state.getBackendStateType()
                    == StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE
                    && !timersInStore) {
                queues.put(
                        id,
                        timerQueues.computeIfAbsent(
                                state.getName(),
                                name ->
                                        newQueue(
                                                new RegisteredPriorityQueueStateBackendMetaInfo<>(
                                                        state))));
            } else {
                columnFamilies.put(id, db.createColumnFamily(state.getName()));
            }
        }
        batch.begin();
        batchBytes = 0;
        try (ThrowingIterator<KeyGroup> keyGroups = result.getRestoredKeyGroups()) {
            while (keyGroups.hasNext()) {
                try (ThrowingIterator<KeyGroupEntry> entries =
                        keyGroups.next().getKeyGroupEntries()) {
                    while (entries.hasNext()) {
                        KeyGroupEntry entry = entries.next();
                        Integer cf = columnFamilies.get(entry.getKvStateId());
                        if (cf != null) {
                            put(db, cf, entry.getKey(), entry.getValue());
                        } else if (queues.containsKey(entry.getKvStateId())) {
                            addTimer(queues.get(entry.getKvStateId()), entry.getKey());
                        } else {
                            throw new IllegalStateException(
                                    "The savepoint has an entry of unknown state id "
                                            + entry.getKvStateId());
                        }
                    }
                }
            }
        }
        apply(db);
    }

    private void put(NativeDb db, int cf, byte[] key, byte[] value) {
        batch.op(BatchEncoder.PUT, cf, key, value);
        batchBytes += key.length + value.length + 13;
        if (batchBytes >= BATCH_BYTES) {
            apply(db);
            batch.begin();
            batchBytes = 0;
        }
    }

    /** Applies the pending writes as one atomic batch. */
    private void apply(NativeDb db) {
        if (batch.count() == 0) {
            return;
        }
        int length = batch.finish();
        while (true) {
            long written = db.executeBatch(batch.buffer(), length, response);
            if (written >= 0) {
                return;
            }
            // Too small: nothing was applied; retry with the size the engine asked for.
            response = ByteBuffer.allocateDirect((int) Math.min(-written, Integer.MAX_VALUE - 8));
        }
    }

    @SuppressWarnings("unchecked")
    private <T extends HeapPriorityQueueElement> void addTimer(
            HeapPriorityQueueSnapshotRestoreWrapper<T> queue, byte[] key) throws IOException {
        elementInput.setBuffer(key);
        elementInput.skipBytesToRead(keyGroupPrefixBytes);
        queue.getPriorityQueue()
                .add(queue.getMetaInfo().getElementSerializer().deserialize(elementInput));
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            HeapPriorityQueueSnapshotRestoreWrapper<T> newQueue(
                    RegisteredPriorityQueueStateBackendMetaInfo metaInfo) {
        HeapPriorityQueueSet<T> queue =
                queueFactory.create(metaInfo.getName(), metaInfo.getElementSerializer());
        return new HeapPriorityQueueSnapshotRestoreWrapper<>(
                queue,
                metaInfo,
                KeyExtractorFunction.forKeyedObjects(),
                keyGroupRange,
                numberOfKeyGroups);
    }
}
