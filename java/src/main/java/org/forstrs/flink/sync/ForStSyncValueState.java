package org.forstrs.flink.sync;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.internal.InternalValueState;

import java.io.IOException;

/** Value state: one entry per (key, namespace), the value serialized as it is. */
final class ForStSyncValueState<K, N, V> extends AbstractForStSyncState<K, N, V>
        implements InternalValueState<K, N, V> {

    ForStSyncValueState(
            ForStSyncKeyedStateBackend<K> backend,
            int cf,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<V> valueSerializer,
            V defaultValue) {
        super(backend, cf, namespaceSerializer, valueSerializer, defaultValue);
    }

    @Override
    public V value() throws IOException {
        byte[] bytes = access.get(cf, currentKey());
        return bytes == null ? defaultValue() : deserialize(valueSerializer, bytes);
    }

    @Override
    public void update(V value) throws IOException {
        if (value == null) {
            clear();
            return;
        }
        access.put(cf, currentKey(), serialize(valueSerializer, value));
    }
}
