package org.forstrs.flink;

import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractReducingState;

/**
 * Reducing state: Flink reduces on the Java side (a get, then an add carrying the reduced value),
 * so the stored value is the current result; an add of null deletes it.
 */
final class ForStReducingState<K, N, V> extends AbstractReducingState<K, N, V>
        implements BatchState {

    private final int cf;
    private final KeySerde<K, N> keys;

    ForStReducingState(
            StateRequestHandler handler,
            ReduceFunction<V> reduceFunction,
            TypeSerializer<V> valueSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, reduceFunction, valueSerializer);
        this.cf = cf;
        this.keys = keys;
    }

    @Override
    public void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws Exception {
        byte[] key = keys.key(Requests.context(request), Requests.namespace(request));
        switch (request.getRequestType()) {
            case REDUCING_GET:
                enc.op(BatchEncoder.GET, cf, key);
                break;
            case REDUCING_ADD:
                V value = Requests.payload(request);
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
        if (request.getRequestType() != StateRequestType.REDUCING_GET) {
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
