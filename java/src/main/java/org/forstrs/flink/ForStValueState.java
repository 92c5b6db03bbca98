package org.forstrs.flink;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractValueState;

import java.io.IOException;

/** Value state: one key per (key, namespace); the value in the serializer's bytes. */
final class ForStValueState<K, N, V> extends AbstractValueState<K, N, V> implements BatchState {

    private final int cf;
    private final KeySerde<K, N> keys;
    private final ThreadLocal<DataOutputSerializer> out =
            ThreadLocal.withInitial(() -> new DataOutputSerializer(64));

    ForStValueState(
            StateRequestHandler handler,
            TypeSerializer<V> valueSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, valueSerializer);
        this.cf = cf;
        this.keys = keys;
    }

    @Override
    public void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws IOException {
        byte[] key = keys.key(Requests.context(request), Requests.namespace(request));
        switch (request.getRequestType()) {
            case VALUE_GET:
                enc.op(BatchEncoder.GET, cf, key);
                break;
            case VALUE_UPDATE:
                V value = Requests.payload(request);
                if (value == null) {
                    enc.op(BatchEncoder.DELETE, cf, key);
                } else {
                    DataOutputSerializer o = out.get();
                    o.clear();
                    getValueSerializer().serialize(value, o);
                    enc.op(
                            BatchEncoder.PUT,
                            cf,
                            key,
                            0,
                            key.length,
                            o.getSharedBuffer(),
                            0,
                            o.length());
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
        if (request.getRequestType() != StateRequestType.VALUE_GET) {
            Requests.complete(request, null);
            return;
        }
        byte[] bytes = dec.readOptionalBytes();
        V value;
        try {
            value =
                    bytes == null
                            ? null
                            : getValueSerializer().deserialize(new DataInputDeserializer(bytes));
        } catch (Throwable t) {
            Requests.fail(request, t);
            return;
        }
        Requests.complete(request, value);
    }
}
