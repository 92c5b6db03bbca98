package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;

import org.forstrs.flink.state.ValueSerde;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.Arrays;

/**
 * Decodes one state's raw entries with the checkpoint's serializers, in the backend's layout:
 * the key is key-group prefix, key, namespace and (map state) user key, as Flink's {@code
 * SerializedCompositeKeyBuilder} writes them; a value is the value, a list's elements joined by
 * {@code ','}, or a map entry's null flag and value. A part no serializer decodes (or that does
 * not decode) is shown raw.
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
            keyJson = JsonText.of(decodedKey);
            keyText = decodedKey instanceof String ? (String) decodedKey : keyJson;
            namespaceJson =
                    JsonText.of(
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
                    return state.value == null
                            ? JsonText.raw(bytes)
                            : JsonText.of(ValueSerde.deserializeList(state.value, bytes));
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
            return JsonText.of(value);
        } catch (IOException | RuntimeException e) {
            return JsonText.raw(bytes);
        }
    }

    private static byte[] rest(byte[] key, DataInputDeserializer in) {
        return Arrays.copyOfRange(key, key.length - in.available(), key.length);
    }
}
