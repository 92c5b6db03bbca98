package org.forstrs.flink.sync;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.internal.InternalAggregatingState;

import java.util.Collection;

/** Aggregating state: one entry per (key, namespace) holding the accumulator. */
final class ForStSyncAggregatingState<K, N, IN, ACC, OUT>
        extends AbstractForStSyncState<K, N, ACC>
        implements InternalAggregatingState<K, N, IN, ACC, OUT> {

    private final AggregateFunction<IN, ACC, OUT> aggregateFunction;

    ForStSyncAggregatingState(
            ForStSyncKeyedStateBackend<K> backend,
            int cf,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<ACC> accumulatorSerializer,
            ACC defaultValue,
            AggregateFunction<IN, ACC, OUT> aggregateFunction) {
        super(backend, cf, namespaceSerializer, accumulatorSerializer, defaultValue);
        this.aggregateFunction = aggregateFunction;
    }

    @Override
    public OUT get() throws Exception {
        ACC accumulator = getInternal();
        return accumulator == null ? null : aggregateFunction.getResult(accumulator);
    }

    @Override
    public void add(IN value) throws Exception {
        byte[] key = currentKey();
        byte[] stored = access.get(cf, key);
        ACC accumulator =
                stored == null
                        ? aggregateFunction.createAccumulator()
                        : deserialize(valueSerializer, stored);
        access.put(
                cf, key, serialize(valueSerializer, aggregateFunction.add(value, accumulator)));
    }

    @Override
    public ACC getInternal() throws Exception {
        byte[] bytes = access.get(cf, currentKey());
        return bytes == null ? null : deserialize(valueSerializer, bytes);
    }

    @Override
    public void updateInternal(ACC accumulator) throws Exception {
        if (accumulator == null) {
            clear();
            return;
        }
        access.put(cf, currentKey(), serialize(valueSerializer, accumulator));
    }

    /** Merges the sources' accumulators into the target's; the sources are cleared. */
    @Override
    public void mergeNamespaces(N target, Collection<N> sources) {
        mergeValues(target, sources, aggregateFunction::merge);
    }
}
