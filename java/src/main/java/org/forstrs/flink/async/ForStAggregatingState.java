package org.forstrs.flink.async;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractAggregatingState;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;

import java.io.IOException;

/**
 * Aggregating state: Flink aggregates on the Java side (a get, then an add carrying the new
 * accumulator), so the stored value is the accumulator; an add of null deletes it.
 */
final class ForStAggregatingState<K, N, IN, ACC, OUT>
        extends AbstractAggregatingState<K, N, IN, ACC, OUT> implements BatchState {

    private final SingleValueRequests<K, N, ACC> requests;

    ForStAggregatingState(
            StateRequestHandler handler,
            AggregateFunction<IN, ACC, OUT> aggregateFunction,
            TypeSerializer<ACC> accumulatorSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, aggregateFunction, accumulatorSerializer);
        this.requests =
                new SingleValueRequests<>(
                        cf,
                        keys,
                        accumulatorSerializer,
                        StateRequestType.AGGREGATING_GET,
                        StateRequestType.AGGREGATING_ADD);
    }

    @Override
    public void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws IOException {
        requests.encode(request, enc);
    }

    @Override
    public void complete(StateRequest<?, ?, ?, ?> request, BatchDecoder dec) {
        requests.complete(request, dec);
    }
}
