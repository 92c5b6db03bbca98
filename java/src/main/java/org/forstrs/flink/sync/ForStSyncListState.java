package org.forstrs.flink.sync;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.internal.InternalListState;
import org.apache.flink.runtime.state.ttl.TtlAwareSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.Preconditions;
import org.apache.flink.util.StateMigrationException;

import org.forstrs.flink.state.ValueSerde;

import java.io.IOException;
import java.util.Collection;
import java.util.List;

/**
 * List state in Flink's layout: one entry per (key, namespace), the elements joined by {@code
 * ','}. Adds are engine merges (appends) that read nothing.
 */
final class ForStSyncListState<K, N, V> extends AbstractForStSyncState<K, N, List<V>>
        implements InternalListState<K, N, V> {

    private TypeSerializer<V> elementSerializer;

    ForStSyncListState(
            ForStSyncKeyedStateBackend<K> backend,
            int cf,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<List<V>> valueSerializer,
            List<V> defaultValue) {
        super(backend, cf, namespaceSerializer, valueSerializer, defaultValue);
        serializersUpdated();
    }

    @Override
    void serializersUpdated() {
        elementSerializer = ((ListSerializer<V>) valueSerializer).getElementSerializer();
    }

    @Override
    public Iterable<V> get() throws IOException {
        return getInternal();
    }

    @Override
    public List<V> getInternal() throws IOException {
        byte[] bytes = access.get(cf, currentKey());
        return bytes == null ? null : ValueSerde.deserializeList(elementSerializer, bytes);
    }

    @Override
    public void add(V value) throws IOException {
        Preconditions.checkNotNull(value, "You cannot add null to a ListState.");
        access.merge(cf, currentKey(), serialize(elementSerializer, value));
    }

    @Override
    public void addAll(List<V> values) throws IOException {
        Preconditions.checkNotNull(values, "List of values to add cannot be null.");
        if (!values.isEmpty()) {
            access.merge(
                    cf, currentKey(), ValueSerde.serializeList(elementSerializer, values));
        }
    }

    @Override
    public void update(List<V> values) throws IOException {
        updateInternal(values);
    }

    @Override
    public void updateInternal(List<V> values) throws IOException {
        Preconditions.checkNotNull(values, "List of values to add cannot be null.");
        if (values.isEmpty()) {
            clear();
        } else {
            access.put(cf, currentKey(), ValueSerde.serializeList(elementSerializer, values));
        }
    }

    /** Appends the sources' elements to the target's list (their bytes as they are). */
    @Override
    public void mergeNamespaces(N target, Collection<N> sources) {
        if (sources == null || sources.isEmpty()) {
            return;
        }
        try {
            byte[] targetKey = keyIn(target);
            for (N source : sources) {
                if (source == null) {
                    continue;
                }
                byte[] sourceKey = keyIn(source);
                byte[] bytes = access.get(cf, sourceKey);
                if (bytes != null) {
                    access.delete(cf, sourceKey);
                    access.merge(cf, targetKey, bytes);
                }
            }
        } catch (RuntimeException e) {
            throw new FlinkRuntimeException("Merging namespaces of list state failed", e);
        }
    }

    /** Element by element: each element is migrated, the delimiters are kept. */
    @Override
    @SuppressWarnings("unchecked")
    void migrateSerializedValue(
            DataInputDeserializer in,
            DataOutputSerializer out,
            TypeSerializer<List<V>> prior,
            TypeSerializer<List<V>> next,
            TtlTimeProvider ttlTimeProvider)
            throws StateMigrationException {
        TtlAwareSerializer<V, ?> priorElements =
                ((TtlAwareSerializer.TtlAwareListSerializer<V>) prior).getElementSerializer();
        TtlAwareSerializer<V, ?> nextElements =
                ((TtlAwareSerializer.TtlAwareListSerializer<V>) next).getElementSerializer();
        try {
            while (in.available() > 0) {
                nextElements.migrateValueFromPriorSerializer(
                        priorElements, () -> priorElements.deserialize(in), out, ttlTimeProvider);
                if (in.available() > 0) {
                    byte delimiter = in.readByte();
                    if (delimiter != ValueSerde.LIST_DELIMITER) {
                        throw new IOException(
                                "Corrupt list state: expected ',' between elements, found byte "
                                        + delimiter);
                    }
                    out.writeByte(ValueSerde.LIST_DELIMITER);
                }
            }
        } catch (Exception e) {
            throw new StateMigrationException("Could not migrate a list of the state", e);
        }
    }
}
