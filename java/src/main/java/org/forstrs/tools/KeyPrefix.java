package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.Arrays;

/**
 * Where one key's entries lie, so that {@code dump --key} reads only them (one subtask, one key
 * range) rather than scanning the state: for keys of type {@code String}, {@code long} and
 * {@code int}, the key text parsed and serialized behind its key group, as the backend lays keys
 * out. Other key types are found by scanning.
 */
final class KeyPrefix {

    /** The key's key group and the raw key range [from, to) that holds its entries. */
    record Range(int keyGroup, byte[] from, byte[] to) {}

    private KeyPrefix() {}

    /** The range of {@code text}'s entries, or null when this key type is not parsed here. */
    @Nullable
    static Range of(
            String text,
            @Nullable TypeSerializer<?> serializer,
            int maxParallelism,
            int prefixBytes) {
        Object key;
        try {
            if (serializer instanceof StringSerializer) {
                key = text;
            } else if (serializer instanceof LongSerializer) {
                key = Long.parseLong(text);
            } else if (serializer instanceof IntSerializer) {
                key = Integer.parseInt(text);
            } else {
                return null;
            }
        } catch (NumberFormatException e) {
            return null;
        }
        int keyGroup = KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism);
        DataOutputSerializer out = new DataOutputSerializer(32);
        try {
            CompositeKeySerializationUtils.writeKeyGroup(keyGroup, prefixBytes, out);
            serialize(serializer, key, out);
        } catch (IOException e) {
            return null;
        }
        byte[] from = out.getCopyOfBuffer();
        return new Range(keyGroup, from, successor(from));
    }

    @SuppressWarnings("unchecked")
    private static <T> void serialize(
            TypeSerializer<T> serializer, Object key, DataOutputSerializer out)
            throws IOException {
        serializer.serialize((T) key, out);
    }

    /** The first key after every key that starts with {@code prefix}; null if none is. */
    @Nullable
    private static byte[] successor(byte[] prefix) {
        byte[] next = Arrays.copyOf(prefix, prefix.length);
        for (int i = next.length - 1; i >= 0; i--) {
            if (next[i] != (byte) 0xff) {
                next[i]++;
                return Arrays.copyOf(next, i + 1);
            }
        }
        return null;
    }
}
