package org.forstrs.flink.timers;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.util.FlinkRuntimeException;

import org.forstrs.flink.sync.SyncDbAccess;

import java.io.IOException;

/**
 * What the key-group queues of one store-backed timer queue share: its column family, the
 * element serializer, one serialization buffer (all calls come from the task thread), and with
 * the backend's other timer queues the pending writes and the counters.
 */
final class StoreQueueContext<T> {

    private final SyncDbAccess access;
    private final int cf;
    private final int keyGroupPrefixBytes;
    private final int cacheSize;
    private final StoreQueueCounters counters;
    private final PendingTimerWrites writes;
    private final DataOutputSerializer out = new DataOutputSerializer(128);
    private final DataInputDeserializer in = new DataInputDeserializer();
    private TypeSerializer<T> serializer;

    StoreQueueContext(
            SyncDbAccess access,
            int cf,
            int keyGroupPrefixBytes,
            int cacheSize,
            TypeSerializer<T> serializer,
            StoreQueueCounters counters,
            PendingTimerWrites writes) {
        this.access = access;
        this.cf = cf;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.cacheSize = cacheSize;
        this.serializer = serializer;
        this.counters = counters;
        this.writes = writes;
    }

    int cf() {
        return cf;
    }

    int cacheSize() {
        return cacheSize;
    }

    /** Stores {@code key} as an element (applied with the next flush of the pending writes). */
    void put(byte[] key) {
        writes.put(cf, key);
    }

    /** Removes the element {@code key} from the store (applied with the next flush). */
    void delete(byte[] key) {
        writes.delete(cf, key);
    }

    /** The store as the queue sees it: every pending write applied. Call before reading it. */
    SyncDbAccess flushedAccess() {
        writes.flush();
        return access;
    }

    StoreQueueCounters counters() {
        return counters;
    }

    void setSerializer(TypeSerializer<T> serializer) {
        this.serializer = serializer;
    }

    /** The key-group prefix of {@code keyGroup}, as the keyed state writes it. */
    byte[] keyGroupPrefix(int keyGroup) {
        try {
            out.clear();
            CompositeKeySerializationUtils.writeKeyGroup(keyGroup, keyGroupPrefixBytes, out);
            return out.getCopyOfBuffer();
        } catch (IOException e) {
            throw new FlinkRuntimeException("Cannot write key group " + keyGroup, e);
        }
    }

    /** The store key of {@code element}: key-group prefix, then the serialized element. */
    byte[] key(int keyGroup, T element) {
        try {
            out.clear();
            CompositeKeySerializationUtils.writeKeyGroup(keyGroup, keyGroupPrefixBytes, out);
            serializer.serialize(element, out);
            return out.getCopyOfBuffer();
        } catch (IOException e) {
            throw new FlinkRuntimeException("Cannot serialize timer " + element, e);
        }
    }

    /** The element of a store key. */
    T element(byte[] key) {
        try {
            in.setBuffer(key, keyGroupPrefixBytes, key.length - keyGroupPrefixBytes);
            return serializer.deserialize(in);
        } catch (IOException e) {
            throw new FlinkRuntimeException("Cannot deserialize a timer of the store", e);
        }
    }
}
