package org.forstrs.flink;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractListState;

import java.util.Collections;
import java.util.List;

/**
 * List state in Flink's layout: one key per (key, namespace), the elements joined by {@code ','};
 * adds are merges (appends) that need no read.
 */
final class ForStListState<K, N, V> extends AbstractListState<K, N, V> implements BatchState {

    private final int cf;
    private final KeySerde<K, N> keys;

    ForStListState(
            StateRequestHandler handler,
            TypeSerializer<V> elementSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, elementSerializer);
        this.cf = cf;
        this.keys = keys;
    }

    @Override
    public void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws Exception {
        byte[] key = keys.key(Requests.context(request), Requests.namespace(request));
        switch (request.getRequestType()) {
            case LIST_GET:
                enc.op(BatchEncoder.GET, cf, key);
                break;
            case LIST_ADD:
                V value = Requests.payload(request);
                if (value == null) {
                    throw new NullPointerException("You cannot add null to a list state");
                }
                enc.op(
                        BatchEncoder.MERGE,
                        cf,
                        key,
                        ValueSerde.serialize(getValueSerializer(), value));
                break;
            case LIST_UPDATE:
                {
                    List<V> values = Requests.payload(request);
                    if (values == null || values.isEmpty()) {
                        enc.op(BatchEncoder.DELETE, cf, key);
                    } else {
                        enc.op(
                                BatchEncoder.PUT,
                                cf,
                                key,
                                ValueSerde.serializeList(getValueSerializer(), values));
                    }
                    break;
                }
            case LIST_ADD_ALL:
                {
                    List<V> values = Requests.payload(request);
                    if (values != null && !values.isEmpty()) {
                        enc.op(
                                BatchEncoder.MERGE,
                                cf,
                                key,
                                ValueSerde.serializeList(getValueSerializer(), values));
                    }
                    break;
                }
            case CLEAR:
                enc.op(BatchEncoder.DELETE, cf, key);
                break;
            default:
                throw Requests.unsupported(request);
        }
    }

    @Override
    public void complete(StateRequest<?, ?, ?, ?> request, BatchDecoder dec) {
        if (request.getRequestType() != StateRequestType.LIST_GET) {
            Requests.complete(request, null);
            return;
        }
        byte[] bytes = dec.readOptionalBytes();
        ValueSerde.completeWith(
                request,
                () ->
                        new ChunkIterator<>(
                                this,
                                StateRequestType.LIST_GET,
                                getStateRequestHandler(),
                                bytes == null
                                        ? Collections.<V>emptyList()
                                        : ValueSerde.deserializeList(getValueSerializer(), bytes),
                                null));
    }
}
