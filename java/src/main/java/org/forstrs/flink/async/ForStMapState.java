package org.forstrs.flink.async;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractMapState;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;
import org.forstrs.flink.state.ValueSerde;

import java.io.IOException;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Map state in Flink's layout: one key per entry (key-group prefix, key, namespace, user key), the
 * value a 1-byte is-null flag then the value's bytes. Iteration reads SCAN chunks of {@link
 * #CHUNK} entries; each further chunk is an {@code ITERATOR_LOADING} request resuming after the
 * last key seen. Clear is one prefix delete, isEmpty one prefix probe.
 */
final class ForStMapState<K, N, UK, UV> extends AbstractMapState<K, N, UK, UV>
        implements BatchState {

    /** Entries per iteration chunk. */
    static final int CHUNK = 256;

    private final int cf;
    private final KeySerde<K, N> keys;
    /** Per executor thread: batches run concurrently and serializers may keep scratch state. */
    private final ThreadLocal<TypeSerializer<UK>> userKeySerializer;

    private final ThreadLocal<TypeSerializer<UV>> valueSerializer;

    /** Where an iteration stands: the ITERATOR_LOADING payload. */
    static final class Cursor {
        final StateRequestType type;
        final byte[] prefix;
        final byte[] lastKey;

        Cursor(StateRequestType type, byte[] prefix, byte[] lastKey) {
            this.type = type;
            this.prefix = prefix;
            this.lastKey = lastKey;
        }
    }

    ForStMapState(
            StateRequestHandler handler,
            TypeSerializer<UK> userKeySerializer,
            TypeSerializer<UV> valueSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, valueSerializer);
        this.valueSerializer = ThreadLocal.withInitial(valueSerializer::duplicate);
        this.cf = cf;
        this.keys = keys;
        this.userKeySerializer = ThreadLocal.withInitial(userKeySerializer::duplicate);
    }

    private byte[] prefix(StateRequest<?, ?, ?, ?> request) {
        return keys.key(Requests.context(request), Requests.namespace(request));
    }

    private byte[] entryKey(byte[] prefix, UK userKey) throws IOException {
        DataOutputSerializer out = ValueSerde.output();
        out.write(prefix);
        userKeySerializer.get().serialize(userKey, out);
        return out.getCopyOfBuffer();
    }

    private byte[] entryValue(UV value) throws IOException {
        DataOutputSerializer out = ValueSerde.output();
        out.writeBoolean(value == null);
        if (value != null) {
            valueSerializer.get().serialize(value, out);
        }
        return out.getCopyOfBuffer();
    }

    private UV readValue(byte[] bytes) throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(bytes);
        return in.readBoolean() ? null : valueSerializer.get().deserialize(in);
    }

    private UK readUserKey(byte[] key, int prefixLength) throws IOException {
        DataInputDeserializer in =
                new DataInputDeserializer(key, prefixLength, key.length - prefixLength);
        return userKeySerializer.get().deserialize(in);
    }

    @Override
    public void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws Exception {
        switch (request.getRequestType()) {
            case MAP_GET:
            case MAP_CONTAINS:
                UK userKey = Requests.payload(request);
                enc.op(BatchEncoder.GET, cf, entryKey(prefix(request), userKey));
                break;
            case MAP_PUT:
                {
                    Tuple2<UK, UV> entry = Requests.payload(request);
                    enc.op(
                            BatchEncoder.PUT,
                            cf,
                            entryKey(prefix(request), entry.f0),
                            entryValue(entry.f1));
                    break;
                }
            case MAP_PUT_ALL:
                {
                    Map<UK, UV> entries = Requests.payload(request);
                    if (entries != null) {
                        byte[] prefix = prefix(request);
                        for (Map.Entry<UK, UV> entry : entries.entrySet()) {
                            enc.op(
                                    BatchEncoder.PUT,
                                    cf,
                                    entryKey(prefix, entry.getKey()),
                                    entryValue(entry.getValue()));
                        }
                    }
                    break;
                }
            case MAP_REMOVE:
                UK removed = Requests.payload(request);
                enc.op(BatchEncoder.DELETE, cf, entryKey(prefix(request), removed));
                break;
            case MAP_IS_EMPTY:
                enc.op(BatchEncoder.PREFIX_EXISTS, cf, prefix(request));
                break;
            case CLEAR:
                enc.op(BatchEncoder.DELETE_PREFIX, cf, prefix(request));
                break;
            case MAP_ITER:
            case MAP_ITER_KEY:
            case MAP_ITER_VALUE:
                enc.scan(cf, prefix(request), null, CHUNK);
                break;
            case ITERATOR_LOADING:
                {
                    Cursor cursor = cursor(request);
                    enc.scan(cf, cursor.prefix, cursor.lastKey, CHUNK);
                    break;
                }
            default:
                throw Requests.unsupported(request);
        }
    }

    private static Cursor cursor(StateRequest<?, ?, ?, ?> request) {
        Object payload = request.getPayload();
        if (!(payload instanceof Cursor)) {
            throw new IllegalArgumentException(
                    "ITERATOR_LOADING payload is not a ForSt-RS map cursor: " + payload);
        }
        return (Cursor) payload;
    }

    @Override
    public void complete(StateRequest<?, ?, ?, ?> request, BatchDecoder dec) {
        switch (request.getRequestType()) {
            case MAP_GET:
                {
                    byte[] bytes = dec.readOptionalBytes();
                    Requests.completeWith(
                            request, () -> bytes == null ? null : readValue(bytes));
                    break;
                }
            case MAP_CONTAINS:
                {
                    byte[] bytes = dec.readOptionalBytes();
                    Requests.complete(request, bytes != null);
                    break;
                }
            case MAP_IS_EMPTY:
                Requests.complete(request, !dec.readBoolean());
                break;
            case MAP_ITER:
            case MAP_ITER_KEY:
            case MAP_ITER_VALUE:
                completeChunk(request, request.getRequestType(), prefixOfIteration(request), dec);
                break;
            case ITERATOR_LOADING:
                {
                    Cursor cursor = cursor(request);
                    completeChunk(request, cursor.type, cursor.prefix, dec);
                    break;
                }
            default:
                Requests.complete(request, null);
        }
    }

    private byte[] prefixOfIteration(StateRequest<?, ?, ?, ?> request) {
        // the same bytes encode() scanned (cached in the record context or rebuilt)
        return prefix(request);
    }

    private void completeChunk(
            StateRequest<?, ?, ?, ?> request,
            StateRequestType type,
            byte[] prefix,
            BatchDecoder dec) {
        int n = dec.readInt();
        List<byte[]> rawKeys = new ArrayList<>(n);
        List<byte[]> rawValues = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            rawKeys.add(dec.readBytes());
            rawValues.add(dec.readBytes());
        }
        boolean hasMore = dec.readBoolean();
        Requests.completeWith(
                request,
                () -> {
                    List<Object> items = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        byte[] key = rawKeys.get(i);
                        if (key.length < prefix.length
                                || !Arrays.equals(
                                        key, 0, prefix.length, prefix, 0, prefix.length)) {
                            throw new IOException("SCAN returned a key outside the map's prefix");
                        }
                        switch (type) {
                            case MAP_ITER_KEY:
                                items.add(readUserKey(key, prefix.length));
                                break;
                            case MAP_ITER_VALUE:
                                items.add(readValue(rawValues.get(i)));
                                break;
                            default:
                                items.add(
                                        new AbstractMap.SimpleImmutableEntry<>(
                                                readUserKey(key, prefix.length),
                                                readValue(rawValues.get(i))));
                        }
                    }
                    Cursor next =
                            hasMore && n > 0
                                    ? new Cursor(type, prefix, rawKeys.get(n - 1))
                                    : null;
                    return new ChunkIterator<>(this, type, getStateRequestHandler(), items, next);
                });
    }
}
