package org.forstrs.flink.async;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;
import org.forstrs.flink.state.ValueSerde;

import java.io.IOException;

/**
 * Requests of the states that keep one serialized value per (key, namespace): value, reducing and
 * aggregating state (the latter two reduce or aggregate on the Java side, then store the result).
 * A get reads the value; a put of null or a clear deletes it. The states extend different Flink
 * base classes, so they share this instead of a superclass.
 *
 * <p>Batches of one state run on several executor threads at once, and serializers may keep
 * mutable scratch objects (Flink's {@code RowDataSerializer} reuses one row and writer), so each
 * thread serializes and deserializes with its own duplicate.
 */
final class SingleValueRequests<K, N, V> {

    private final int cf;
    private final KeySerde<K, N> keys;
    private final ThreadLocal<TypeSerializer<V>> serializer;
    private final StateRequestType getType;
    private final StateRequestType putType;

    SingleValueRequests(
            int cf,
            KeySerde<K, N> keys,
            TypeSerializer<V> serializer,
            StateRequestType getType,
            StateRequestType putType) {
        this.cf = cf;
        this.keys = keys;
        this.serializer = ThreadLocal.withInitial(serializer::duplicate);
        this.getType = getType;
        this.putType = putType;
    }

    void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws IOException {
        byte[] key = keys.key(Requests.context(request), Requests.namespace(request));
        StateRequestType type = request.getRequestType();
        if (type == getType) {
            enc.op(BatchEncoder.GET, cf, key);
        } else if (type == putType) {
            V value = Requests.payload(request);
            if (value == null) {
                enc.op(BatchEncoder.DELETE, cf, key);
            } else {
                // Serialized into a per-thread buffer the encoder copies: no byte[] per value.
                DataOutputSerializer out = ValueSerde.output();
                serializer.get().serialize(value, out);
                enc.op(
                        BatchEncoder.PUT,
                        cf,
                        key,
                        0,
                        key.length,
                        out.getSharedBuffer(),
                        0,
                        out.length());
            }
        } else if (type == StateRequestType.CLEAR) {
            enc.op(BatchEncoder.DELETE, cf, key);
        } else {
            throw Requests.unsupported(request);
        }
    }

    void complete(StateRequest<?, ?, ?, ?> request, BatchDecoder dec) {
        if (request.getRequestType() != getType) {
            Requests.complete(request, null);
            return;
        }
        byte[] bytes = dec.readOptionalBytes();
        Requests.completeWith(
                request, () -> bytes == null ? null : ValueSerde.deserialize(serializer.get(), bytes));
    }
}
