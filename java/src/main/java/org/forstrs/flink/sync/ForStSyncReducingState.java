package org.forstrs.flink.sync;

import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.internal.InternalReducingState;

import java.util.Collection;

/** Reducing state: one entry per (key, namespace) holding the reduced value. */
final class ForStSyncReducingState<K, N, V> extends AbstractForStSyncState<K, N, V>
        implements InternalReducingState<K, N, V> {

    private final ReduceFunction<V> reduceFunction;

    ForStSyncReducingState(
            ForStSyncKeyedStateBackend<K> backend,
            int cf,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<V> valueSerializer,
            V defaultValue,
            ReduceFunction<V> reduceFunction) {
        super(backend, cf, namespaceSerializer, valueSerializer, defaultValue);
        this.reduceFunction = reduceFunction;
    }

    @Override
    public V get() throws Exception {
        return getInternal();
    }

    @Override
    public void add(V value) throws Exception {
        byte[] key = currentKey();
        byte[] stored = access.get(cf, key);
        V reduced =
                stored == null
                        ? value
                        : reduceFunction.reduce(deserialize(valueSerializer, stored), value);
        access.put(cf, key, serialize(valueSerializer, reduced));
    }

    @Override
    public V getInternal() throws Exception {
        byte[] bytes = access.get(cf, currentKey());
        return bytes == null ? null : deserialize(valueSerializer, bytes);
    }

    @Override
    public void updateInternal(V value) throws Exception {
        if (value == null) {
            clear();
            return;
        }
        access.put(cf, currentKey(), serialize(valueSerializer, value));
    }

    /** Reduces the sources' values into the target's; the sources are cleared. */
    @Override
    public void mergeNamespaces(N target, Collection<N> sources) {
        mergeValues(target, sources, reduceFunction::reduce);
    }
}
