package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.CompositeTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;

import org.forstrs.flink.state.ValueSerde;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.Arrays;

/**
 * Decodes one state's raw entries with the checkpoint's serializers, in the backend's layout:
 * the key is key-group prefix, key, namespace and (map state) user key, as Flink's {@code
 * SerializedCompositeKeyBuilder} writes them; a value is the value, a list's elements joined by
 * {@code ','}, or a map entry's null flag and value; a timer (a timer queue's entry) is the key,
 * namespace and timestamp in the key, as {@code TimerSerializer} writes them, with an empty
 * value. A part no serializer decodes (or that does not decode) is shown raw.
 */
public final class EntryDecoder {

    /** One decoded entry; each part is JSON text ({@link JsonText}). */
    public record Entry(
            int keyGroup,
            String key,
            String keyText,
            String namespace,
            @Nullable String userKey,
            String value) {}

    private final StateDescription state;
    @Nullable private final TypeSerializer<?> keySerializer;
    private final int prefixBytes;
    private final boolean ambiguous;

    public EntryDecoder(
            StateDescription state, @Nullable TypeSerializer<?> keySerializer, int prefixBytes) {
        this.state = state;
        this.keySerializer = keySerializer;
        this.prefixBytes = prefixBytes;
        this.ambiguous =
                keySerializer != null
                        && state.namespace != null
                        && CompositeKeySerializationUtils.isAmbiguousKeyPossible(
                                keySerializer, state.namespace);
    }

    public Entry decode(byte[] key, byte[] value) {
        int keyGroup = CompositeKeySerializationUtils.extractKeyGroup(prefixBytes, key);
        if ("timers".equals(state.kind)) {
            return timer(keyGroup, key);
        }
        DataInputDeserializer in =
                new DataInputDeserializer(key, prefixBytes, key.length - prefixBytes);
        Object decodedKey;
        String keyJson;
        String keyText;
        String namespaceJson;
        String userKeyJson = null;
        try {
            if (keySerializer == null || state.namespace == null) {
                throw new IOException("no serializer");
            }
            decodedKey = CompositeKeySerializationUtils.readKey(keySerializer, in, ambiguous);
            keyJson = render(keySerializer, decodedKey);
            keyText = keyText(keySerializer, decodedKey, keyJson);
            namespaceJson =
                    render(
                            state.namespace,
                            CompositeKeySerializationUtils.readNamespace(
                                    state.namespace, in, ambiguous));
            if ("map".equals(state.kind)) {
                userKeyJson = decodeAll(state.userKey, rest(key, in));
            } else if (in.available() > 0) {
                throw new IOException("bytes after the namespace");
            }
        } catch (IOException | RuntimeException e) {
            keyJson = JsonText.raw(Arrays.copyOfRange(key, prefixBytes, key.length));
            keyText = keyJson;
            namespaceJson = "null";
            userKeyJson = null;
        }
        return new Entry(keyGroup, keyJson, keyText, namespaceJson, userKeyJson, value(value));
    }

    private String value(byte[] bytes) {
        switch (state.kind) {
            case "list":
                try {
                    if (state.value == null) {
                        return JsonText.raw(bytes);
                    }
                    StringBuilder elements = new StringBuilder("[");
                    for (Object element : ValueSerde.deserializeList(state.value, bytes)) {
                        elements.append(elements.length() == 1 ? "" : ",");
                        elements.append(render(state.value, element));
                    }
                    return elements.append(']').toString();
                } catch (IOException | RuntimeException e) {
                    return JsonText.raw(bytes);
                }
            case "map":
                if (bytes.length > 0 && bytes[0] != 0) {
                    return "null";
                }
                byte[] userValue =
                        Arrays.copyOfRange(bytes, Math.min(1, bytes.length), bytes.length);
                return decodeAll(state.value, userValue);
            default:
                return decodeAll(state.value, bytes);
        }
    }

    /** The bytes as one value of {@code serializer}, or raw if they are not exactly that. */
    private static String decodeAll(@Nullable TypeSerializer<?> serializer, byte[] bytes) {
        if (serializer == null) {
            return JsonText.raw(bytes);
        }
        try {
            DataInputDeserializer in = new DataInputDeserializer(bytes);
            Object value = serializer.deserialize(in);
            if (in.available() > 0) {
                return JsonText.raw(bytes);
            }
            return render(serializer, value);
        } catch (IOException | RuntimeException e) {
            return JsonText.raw(bytes);
        }
    }

    /**
     * A timer queue's entry: the key bytes after the key group are a {@code TimerSerializer}'s
     * timestamp, key and namespace.
     */
    private Entry timer(int keyGroup, byte[] key) {
        byte[] element = Arrays.copyOfRange(key, prefixBytes, key.length);
        String raw = JsonText.raw(element);
        if (!(state.value instanceof TimerSerializer)) {
            return new Entry(keyGroup, raw, raw, "null", null, "null");
        }
        TimerSerializer<?, ?> serializer = (TimerSerializer<?, ?>) state.value;
        try {
            DataInputDeserializer in = new DataInputDeserializer(element);
            TimerHeapInternalTimer<?, ?> timer = serializer.deserialize(in);
            if (in.available() > 0) {
                throw new IOException("bytes after the timer");
            }
            String keyJson = render(serializer.getKeySerializer(), timer.getKey());
            return new Entry(
                    keyGroup,
                    keyJson,
                    keyText(serializer.getKeySerializer(), timer.getKey(), keyJson),
                    render(serializer.getNamespaceSerializer(), timer.getNamespace()),
                    null,
                    "{\"timestamp\":" + timer.getTimestamp() + "}");
        } catch (IOException | RuntimeException e) {
            return new Entry(keyGroup, raw, raw, "null", null, "null");
        }
    }

    /** A decoded value as JSON, with what its serializer knows (SQL rows' field types). */
    private static String render(TypeSerializer<?> serializer, Object value) {
        if (value instanceof TtlValue
                && TtlStateFactory.TtlSerializer.isTtlStateSerializer(serializer)) {
            TtlValue<?> ttl = (TtlValue<?>) value;
            return "{\"value\":"
                    + render(ttlValueSerializer(serializer), ttl.getUserValue())
                    + ",\"lastAccessTimestamp\":"
                    + ttl.getLastAccessTimestamp()
                    + "}";
        }
        if (value != null && serializer != null && RowDataText.handles(serializer)) {
            return RowDataText.of(serializer, value);
        }
        return JsonText.of(value);
    }

    /** How a key matches --key and --key-prefix: a string as itself, a one-field row its field. */
    private static String keyText(TypeSerializer<?> serializer, Object key, String keyJson) {
        if (key instanceof String) {
            return (String) key;
        }
        return RowDataText.handles(serializer) ? RowDataText.text(serializer, key) : keyJson;
    }

    /** The user value's serializer of a TTL serializer (null if it cannot be restored here). */
    @Nullable
    private static TypeSerializer<?> ttlValueSerializer(TypeSerializer<?> ttlSerializer) {
        TypeSerializerSnapshot<?>[] nested =
                ((CompositeTypeSerializerSnapshot<?, ?>) ttlSerializer.snapshotConfiguration())
                        .getNestedSerializerSnapshots();
        return nested.length == 2 ? nested[1].restoreSerializer() : null;
    }

    private static byte[] rest(byte[] key, DataInputDeserializer in) {
        return Arrays.copyOfRange(key, key.length - in.available(), key.length);
    }
}
