package org.forstrs.flink.timers;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.KeyExtractorFunction;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.PriorityComparator;
import org.apache.flink.runtime.state.PriorityQueueSetFactory;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.KeyGroupPartitionedPriorityQueue;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.StateMigrationException;

import org.forstrs.flink.sync.PrefixScan;
import org.forstrs.flink.sync.SyncDbAccess;

import javax.annotation.Nonnull;
import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * Timer queues in the store (Flink's {@code ForStDB} timer service): one column family per queue,
 * named like the queue, partitioned by key group ({@link KeyGroupPartitionedPriorityQueue} over
 * one {@link CachingKeyGroupQueue} per key group of the backend's range). The column families are
 * keyed state like any other, so checkpoints, restores and rescales (key-group clipping) carry
 * the timers without the timer service writing them; a restored queue loads its caches from the
 * store on first use.
 *
 * <p>Used from the task thread only.
 */
public final class StoreTimerQueues implements PriorityQueueSetFactory {

    private static final byte[] EVERYTHING = new byte[0];

    private final SyncDbAccess access;
    private final ToIntFunction<String> columnFamilies;
    private final KeyGroupRange keyGroupRange;
    private final int numberOfKeyGroups;
    private final int keyGroupPrefixBytes;
    private final int cacheSize;
    private final StoreQueueCounters counters = new StoreQueueCounters();
    private final PendingTimerWrites writes;

    /** Queues by name, with what was last asked for the queue (restored ones until re-created). */
    private final Map<String, Registered<?>> queues = new LinkedHashMap<>();

    private static final class Registered<T> {
        RegisteredPriorityQueueStateBackendMetaInfo<T> metaInfo;
        @Nullable StoreQueueContext<T> context;
        @Nullable KeyGroupedInternalPriorityQueue<T> queue;

        Registered(RegisteredPriorityQueueStateBackendMetaInfo<T> metaInfo) {
            this.metaInfo = metaInfo;
        }
    }

    /**
     * @param columnFamilies opens (or creates) the column family of a name, returning its id
     * @param cacheSize elements cached in memory per key group and queue
     */
    public StoreTimerQueues(
            SyncDbAccess access,
            ToIntFunction<String> columnFamilies,
            KeyGroupRange keyGroupRange,
            int numberOfKeyGroups,
            int keyGroupPrefixBytes,
            int cacheSize) {
        if (cacheSize < 1) {
            throw new IllegalArgumentException("The timer cache size must be positive: " + cacheSize);
        }
        this.access = access;
        this.columnFamilies = columnFamilies;
        this.keyGroupRange = keyGroupRange;
        this.numberOfKeyGroups = numberOfKeyGroups;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.cacheSize = cacheSize;
        this.writes = new PendingTimerWrites(access);
    }

    /** A queue of a restored checkpoint: its meta info stays in snapshots until it is re-created. */
    public void restored(RegisteredPriorityQueueStateBackendMetaInfo<?> metaInfo) {
        queues.put(metaInfo.getName(), new Registered<>(metaInfo));
    }

    @Nonnull
    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer) {
        return create(stateName, byteOrderedElementSerializer, false);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> serializer,
                    boolean allowFutureMetadataUpdates) {
        Registered<T> registered = (Registered<T>) queues.get(stateName);
        if (registered != null) {
            checkCompatible(stateName, registered.metaInfo, serializer);
        }
        RegisteredPriorityQueueStateBackendMetaInfo<T> metaInfo =
                new RegisteredPriorityQueueStateBackendMetaInfo<>(stateName, serializer);
        if (allowFutureMetadataUpdates) {
            metaInfo = metaInfo.withSerializerUpgradesAllowed();
        }
        if (registered == null) {
            registered = new Registered<>(metaInfo);
            queues.put(stateName, registered);
        }
        registered.metaInfo = metaInfo;
        if (registered.queue == null) {
            StoreQueueContext<T> context =
                    new StoreQueueContext<>(
                            access,
                            columnFamilies.applyAsInt(stateName),
                            keyGroupPrefixBytes,
                            cacheSize,
                            serializer.duplicate(),
                            counters,
                            writes);
            registered.context = context;
            KeyGroupPartitionedPriorityQueue.PartitionQueueSetFactory<T, CachingKeyGroupQueue<T>>
                    partitions =
                            (keyGroup, keyGroups, keyExtractor, comparator) ->
                                    new CachingKeyGroupQueue<>(context, keyGroup);
            registered.queue =
                    new KeyGroupPartitionedPriorityQueue<T, CachingKeyGroupQueue<T>>(
                            KeyExtractorFunction.<T>forKeyedObjects(),
                            PriorityComparator.<T>forPriorityComparableObjects(),
                            partitions,
                            keyGroupRange,
                            numberOfKeyGroups);
        } else {
            // Same column family and elements: the stored bytes stay readable (checked above).
            registered.context.setSerializer(serializer.duplicate());
        }
        return registered.queue;
    }

    /**
     * Stored elements cannot be migrated (they are keys), so a new serializer must read them as
     * they are, as in Flink's RocksDB backend.
     */
    private static <T> void checkCompatible(
            String stateName,
            RegisteredPriorityQueueStateBackendMetaInfo<T> previous,
            TypeSerializer<T> serializer) {
        if (previous.getElementSerializer() == serializer) {
            return;
        }
        if (previous.updateElementSerializer(serializer).isIncompatible()) {
            throw new FlinkRuntimeException(
                    new StateMigrationException(
                            "Timer queue '"
                                    + stateName
                                    + "': the new element serializer ("
                                    + serializer
                                    + ") is incompatible with the previous one"));
        }
    }

    /** The meta info of every queue, for snapshots (restored ones included). */
    public List<RegisteredPriorityQueueStateBackendMetaInfo<?>> metaInfos() {
        List<RegisteredPriorityQueueStateBackendMetaInfo<?>> infos = new ArrayList<>();
        for (Registered<?> registered : queues.values()) {
            infos.add(registered.metaInfo);
        }
        return infos;
    }

    /** Whether {@code stateName} is one of these queues (created or restored). */
    public boolean contains(String stateName) {
        return queues.containsKey(stateName);
    }

    /**
     * Applies the queues' pending writes to the store: before a snapshot or savepoint, which must
     * see every timer added or removed so far.
     */
    public void flush() {
        writes.flush();
    }

    /** What the queues hold in memory. */
    public StoreQueueCounters counters() {
        return counters;
    }

    /**
     * The elements of every created queue in the store, counted with a scan of each queue's
     * column family (a test and diagnostics aid: it reads them all).
     */
    public long storedElements() {
        writes.flush();
        long stored = 0;
        for (Registered<?> registered : queues.values()) {
            if (registered.context == null) {
                continue;
            }
            PrefixScan scan = new PrefixScan(access, registered.context.cf(), EVERYTHING);
            while (scan.hasNext()) {
                scan.next();
                stored++;
            }
        }
        return stored;
    }
}
