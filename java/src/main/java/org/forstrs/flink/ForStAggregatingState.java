package org.forstrs.flink;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractAggregatingState;

/**
 * Aggregating state: Flink aggregates on the Java side (a get, then an add carrying the new
 * accumulator), so the stored value is the accumulator; an add of null deletes it.
 */
final class ForStAggregatingState<K, N, IN, ACC, OUT>
        extends AbstractAggregatingState<K, N, IN, ACC, OUT> implements BatchState {

    private final int cf;
    private final KeySerde<K, N> keys;

    ForStAggregatingState(
            StateRequestHandler handler,
            AggregateFunction<IN, ACC, OUT> aggregateFunction,
            TypeSerializer<ACC> accumulatorSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, aggregateFunction, accumulatorSerializer);
        this.cf = cf;
        this.keys = keys;
    }

    @Override
    public void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws Exception {
        byte[] key = keys.key(Requests.context(request), Requests.namespace(request));
        switch (request.getRequestType()) {
            case AGGREGATING_GET:
                enc.op(BatchEncoder.GET, cf, key);
                break;
            case AGGREGATING_ADD:
                ACC value = Requests.payload(request);
                if (value == null) {
                    enc.op(BatchEncoder.DELETE, cf, key);
                } else {
                    enc.op(
                            BatchEncoder.PUT,
                            cf,
                            key,
                            ValueSerde.serialize(getValueSerializer(), value));
                }
                break;
            case CLEAR:
                enc.op(BatchEncoder.DELETE, cf, key);
                break;
            default:
                throw Requests.unsupported(request);
        }
    }

    @Override
    public void complete(StateRequest<?, ?, ?, ?> request, BatchDecoder dec) {
        if (request.getRequestType() != StateRequestType.AGGREGATING_GET) {
            Requests.complete(request, null);
            return;
        }
        byte[] bytes = dec.readOptionalBytes();
        ValueSerde.completeWith(
                request,
                () ->
                        bytes == null
                                ? null
                                : ValueSerde.deserialize(getValueSerializer(), bytes));
    }
}
