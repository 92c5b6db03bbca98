package org.forstrs.flink.async;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractValueState;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;

import java.io.IOException;

/** Value state: one key per (key, namespace); the value in the serializer's bytes. */
final class ForStValueState<K, N, V> extends AbstractValueState<K, N, V> implements BatchState {

    private final SingleValueRequests<K, N, V> requests;

    ForStValueState(
            StateRequestHandler handler,
            TypeSerializer<V> valueSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, valueSerializer);
        this.requests =
                new SingleValueRequests<>(
                        cf,
                        keys,
                        valueSerializer,
                        StateRequestType.VALUE_GET,
                        StateRequestType.VALUE_UPDATE);
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
