package org.forstrs.flink.async;

import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractReducingState;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;

import java.io.IOException;

/**
 * Reducing state: Flink reduces on the Java side (a get, then an add carrying the reduced value),
 * so the stored value is the current result; an add of null deletes it.
 */
final class ForStReducingState<K, N, V> extends AbstractReducingState<K, N, V>
        implements BatchState {

    private final SingleValueRequests<K, N, V> requests;

    ForStReducingState(
            StateRequestHandler handler,
            ReduceFunction<V> reduceFunction,
            TypeSerializer<V> valueSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, reduceFunction, valueSerializer);
        this.requests =
                new SingleValueRequests<>(
                        cf,
                        keys,
                        valueSerializer,
                        StateRequestType.REDUCING_GET,
                        StateRequestType.REDUCING_ADD);
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
