package org.forstrs.flink.sync;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.queryablestate.client.state.serialization.KvStateSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.internal.InternalKvState;
import org.apache.flink.runtime.state.ttl.TtlAwareSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.StateMigrationException;

import org.forstrs.flink.state.ValueSerde;

import java.io.IOException;
import java.util.Collection;

/**
 * What every synchronous state shares: its column family, serializers and current namespace,
 * and the key of the backend's current key in a namespace, in Flink's layout (key-group prefix,
 * key, namespace), the same bytes the async path writes.
 *
 * @param <V> the type the state's serializer handles (for list and map state the whole list or
 *     map)
 */
abstract class AbstractForStSyncState<K, N, V> implements InternalKvState<K, N, V> {

    final ForStSyncKeyedStateBackend<K> backend;
    final SyncDbAccess access;
    final int cf;
    TypeSerializer<N> namespaceSerializer;
    TypeSerializer<V> valueSerializer;
    V defaultValue;
    N currentNamespace;

    AbstractForStSyncState(
            ForStSyncKeyedStateBackend<K> backend,
            int cf,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<V> valueSerializer,
            V defaultValue) {
        this.backend = backend;
        this.access = backend.access();
        this.cf = cf;
        this.namespaceSerializer = namespaceSerializer;
        this.valueSerializer = valueSerializer;
        this.defaultValue = defaultValue;
    }

    /** After the state is registered again (new serializers, same column family). */
    void updateSerializers(
            TypeSerializer<N> namespaceSerializer, TypeSerializer<V> valueSerializer, V defaultValue) {
        this.namespaceSerializer = namespaceSerializer;
        this.valueSerializer = valueSerializer;
        this.defaultValue = defaultValue;
        serializersUpdated();
    }

    /** Lets a state re-derive what it keeps from the value serializer (element serializers). */
    void serializersUpdated() {}

    @Override
    public TypeSerializer<K> getKeySerializer() {
        return backend.getKeySerializer();
    }

    @Override
    public TypeSerializer<N> getNamespaceSerializer() {
        return namespaceSerializer;
    }

    @Override
    public TypeSerializer<V> getValueSerializer() {
        return valueSerializer;
    }

    @Override
    public void setCurrentNamespace(N namespace) {
        this.currentNamespace = namespace;
    }

    @Override
    public void clear() {
        access.delete(cf, currentKey());
    }

    /** Key-group prefix, current key and current namespace. */
    byte[] currentKey() {
        return keyIn(currentNamespace);
    }

    byte[] keyIn(N namespace) {
        return backend.keyBuilder().buildCompositeKeyNamespace(namespace, namespaceSerializer);
    }

    V defaultValue() {
        return defaultValue == null ? null : valueSerializer.copy(defaultValue);
    }

    static <T> byte[] serialize(TypeSerializer<T> serializer, T value) throws IOException {
        return ValueSerde.serialize(serializer, value);
    }

    static <T> T deserialize(TypeSerializer<T> serializer, byte[] bytes) throws IOException {
        return ValueSerde.deserialize(serializer, bytes);
    }

    /**
     * The key of a queryable-state request: its key and namespace in Flink's layout, built with
     * the caller's serializers (this may run on another thread than the task).
     */
    byte[] queriedKey(
            byte[] serializedKeyAndNamespace,
            TypeSerializer<K> safeKeySerializer,
            TypeSerializer<N> safeNamespaceSerializer)
            throws IOException {
        Tuple2<K, N> keyAndNamespace =
                KvStateSerializer.deserializeKeyAndNamespace(
                        serializedKeyAndNamespace, safeKeySerializer, safeNamespaceSerializer);
        int keyGroup =
                KeyGroupRangeAssignment.assignToKeyGroup(
                        keyAndNamespace.f0, backend.getNumberOfKeyGroups());
        SerializedCompositeKeyBuilder<K> builder =
                new SerializedCompositeKeyBuilder<>(
                        safeKeySerializer, backend.keyGroupPrefixBytes(), 32);
        builder.setKeyAndKeyGroup(keyAndNamespace.f0, keyGroup);
        return builder.buildCompositeKeyNamespace(keyAndNamespace.f1, safeNamespaceSerializer);
    }

    /** The stored bytes as they are (value, reducing, aggregating and list state). */
    @Override
    public byte[] getSerializedValue(
            byte[] serializedKeyAndNamespace,
            TypeSerializer<K> safeKeySerializer,
            TypeSerializer<N> safeNamespaceSerializer,
            TypeSerializer<V> safeValueSerializer)
            throws Exception {
        return access.get(
                cf, queriedKey(serializedKeyAndNamespace, safeKeySerializer, safeNamespaceSerializer));
    }

    /** Like Flink's RocksDB backend: the whole-state visitor is a heap backend feature. */
    @Override
    public StateIncrementalVisitor<K, N, V> getStateIncrementalVisitor(
            int recommendedMaxNumberOfReturnedRecords) {
        throw new UnsupportedOperationException(
                "The ForSt-RS synchronous keyed backend has no incremental state visitor");
    }

    /**
     * Rewrites one stored value from the prior serializer's format into the new one (state
     * migration). Both serializers are TTL-aware wrappers, so TTL can be switched on or off.
     */
    @SuppressWarnings("unchecked")
    void migrateSerializedValue(
            DataInputDeserializer in,
            DataOutputSerializer out,
            TypeSerializer<V> prior,
            TypeSerializer<V> next,
            TtlTimeProvider ttlTimeProvider)
            throws StateMigrationException {
        TtlAwareSerializer<V, ?> priorTtlAware = (TtlAwareSerializer<V, ?>) prior;
        TtlAwareSerializer<V, ?> nextTtlAware = (TtlAwareSerializer<V, ?>) next;
        try {
            nextTtlAware.migrateValueFromPriorSerializer(
                    priorTtlAware, () -> priorTtlAware.deserialize(in), out, ttlTimeProvider);
        } catch (Exception e) {
            throw new StateMigrationException("Could not migrate a value of the state", e);
        }
    }

    /** Combines two stored values of the state (reduce or accumulator merge). */
    interface Combiner<V> {
        V combine(V a, V b) throws Exception;
    }

    /**
     * Moves the values of the {@code sources} namespaces into the {@code target}'s, combined with
     * {@code combiner}: the sources are cleared (merging windows of reducing and aggregating state).
     */
    void mergeValues(N target, Collection<N> sources, Combiner<V> combiner) {
        if (sources == null || sources.isEmpty()) {
            return;
        }
        try {
            V merged = null;
            for (N source : sources) {
                if (source == null) {
                    continue;
                }
                byte[] sourceKey = keyIn(source);
                byte[] bytes = access.get(cf, sourceKey);
                if (bytes != null) {
                    access.delete(cf, sourceKey);
                    V value = deserialize(valueSerializer, bytes);
                    merged = merged == null ? value : combiner.combine(merged, value);
                }
            }
            if (merged != null) {
                byte[] targetKey = keyIn(target);
                byte[] bytes = access.get(cf, targetKey);
                if (bytes != null) {
                    merged = combiner.combine(merged, deserialize(valueSerializer, bytes));
                }
                access.put(cf, targetKey, serialize(valueSerializer, merged));
            }
        } catch (Exception e) {
            throw new FlinkRuntimeException(
                    "Merging namespaces of " + getClass().getSimpleName() + " failed", e);
        }
    }
}
