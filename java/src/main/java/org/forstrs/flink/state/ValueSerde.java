package org.forstrs.flink.state;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Per-thread buffers to serialize values, and Flink's list layout (elements joined by the byte
 * {@code ','}, the layout the engine's merge operator appends to).
 */
public final class ValueSerde {

    public static final byte LIST_DELIMITER = ',';

    private static final ThreadLocal<DataOutputSerializer> OUT =
            ThreadLocal.withInitial(() -> new DataOutputSerializer(128));

    private ValueSerde() {}

    /** A cleared per-thread output; its bytes are valid until the thread's next call. */
    public static DataOutputSerializer output() {
        DataOutputSerializer out = OUT.get();
        out.clear();
        return out;
    }

    public static <T> byte[] serialize(TypeSerializer<T> serializer, T value) throws IOException {
        DataOutputSerializer out = output();
        serializer.serialize(value, out);
        return out.getCopyOfBuffer();
    }

    public static <T> T deserialize(TypeSerializer<T> serializer, byte[] bytes) throws IOException {
        return serializer.deserialize(new DataInputDeserializer(bytes));
    }

    /** The elements joined by {@link #LIST_DELIMITER}; nulls are refused like Flink does. */
    public static <T> byte[] serializeList(TypeSerializer<T> serializer, List<T> values)
            throws IOException {
        DataOutputSerializer out = output();
        boolean first = true;
        for (T value : values) {
            if (value == null) {
                throw new NullPointerException("List state does not accept null elements");
            }
            if (!first) {
                out.writeByte(LIST_DELIMITER);
            }
            first = false;
            serializer.serialize(value, out);
        }
        return out.getCopyOfBuffer();
    }

    public static <T> List<T> deserializeList(TypeSerializer<T> serializer, byte[] bytes)
            throws IOException {
        List<T> values = new ArrayList<>();
        DataInputDeserializer in = new DataInputDeserializer(bytes);
        while (in.available() > 0) {
            values.add(serializer.deserialize(in));
            if (in.available() > 0) {
                byte delimiter = in.readByte();
                if (delimiter != LIST_DELIMITER) {
                    throw new IOException(
                            "Corrupt list state: expected ',' between elements, found byte "
                                    + delimiter);
                }
            }
        }
        return values;
    }
}
