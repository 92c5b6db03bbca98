package org.forstrs.flink.state;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Reads a batch response (docs/BATCH_WIRE_FORMAT.md) from a direct buffer. */
public final class BatchDecoder {

    static final int MAGIC = 0x46425232;

    /** Flag: a read of the batch waited for storage (not answered from memory or a local disk). */
    private static final int WAITED_ON_STORAGE = 1;

    private final ByteBuffer buffer;
    private final int flags;

    /** Checks the header of {@code response[0, length)}; returns the decoder at the first entry. */
    public BatchDecoder(ByteBuffer response, int length, int expectedCount) {
        this.buffer = response.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        buffer.position(0).limit(length);
        int magic = buffer.getInt();
        int count = buffer.getInt();
        if (magic != MAGIC || count != expectedCount) {
            throw new IllegalStateException(
                    String.format(
                            "Malformed ForSt-RS batch response: magic %08x, %d entries (expected"
                                    + " %08x, %d)",
                            magic, count, MAGIC, expectedCount));
        }
        flags = buffer.getInt();
    }

    /** Whether a read of the batch waited for storage: the memtables, cache and disk lacked it. */
    public boolean waitedOnStorage() {
        return (flags & WAITED_ON_STORAGE) != 0;
    }

    public boolean readBoolean() {
        return buffer.get() != 0;
    }

    public int readInt() {
        return buffer.getInt();
    }

    /** A u32 length followed by that many bytes. */
    public byte[] readBytes() {
        int length = buffer.getInt();
        byte[] out = new byte[length];
        buffer.get(out);
        return out;
    }

    /** A GET's answer: the value, or null if the key has none. */
    public byte[] readOptionalBytes() {
        return readBoolean() ? readBytes() : null;
    }

    int remaining() {
        return buffer.remaining();
    }
}
