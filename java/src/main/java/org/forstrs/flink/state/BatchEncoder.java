package org.forstrs.flink.state;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Writes a batch request (docs/BATCH_WIRE_FORMAT.md) into a direct buffer that grows as needed.
 * A request's ops can be rolled back with {@link #mark()} / {@link #reset(long)} when encoding it
 * fails halfway.
 */
public final class BatchEncoder {

    static final int MAGIC = 0x46425131;
    static final int NO_VALUE = 0xFFFF_FFFF;

    public static final byte GET = 1;
    public static final byte PUT = 2;
    public static final byte MERGE = 3;
    public static final byte DELETE = 4;
    public static final byte DELETE_PREFIX = 5;
    public static final byte SCAN = 6;
    public static final byte PREFIX_EXISTS = 7;

    private static final int HEADER = 8;

    private ByteBuffer buffer;
    private int count;

    public BatchEncoder(int initialCapacity) {
        buffer = allocate(Math.max(64, initialCapacity));
    }

    private static ByteBuffer allocate(int capacity) {
        return ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
    }

    public void begin() {
        buffer.clear();
        buffer.putInt(MAGIC);
        buffer.putInt(0);
        count = 0;
    }

    /** Ops written since {@link #begin()}. */
    public int count() {
        return count;
    }

    /** Bytes written since {@link #begin()}, header included. */
    public int size() {
        return buffer.position();
    }

    /** Appends the ops of {@code other} (begun, not finished) after the ops written so far. */
    public void append(BatchEncoder other) {
        ByteBuffer ops = other.buffer.duplicate().flip().position(HEADER);
        ensure(ops.remaining());
        buffer.put(ops);
        count += other.count;
    }

    /** Position and op count, for {@link #reset}. */
    public long mark() {
        return ((long) count << 32) | buffer.position();
    }

    public void reset(long mark) {
        count = (int) (mark >>> 32);
        buffer.position((int) mark);
    }

    /** An op with a key and no value. */
    public void op(byte op, int cf, byte[] key) {
        op(op, cf, key, 0, key.length, null, 0, 0);
    }

    /** An op with a key and a value. */
    public void op(byte op, int cf, byte[] key, byte[] value) {
        op(op, cf, key, 0, key.length, value, 0, value.length);
    }

    /** An op whose key and value are array slices; {@code value == null}: no value. */
    public void op(
            byte op,
            int cf,
            byte[] key,
            int keyOffset,
            int keyLength,
            byte[] value,
            int valueOffset,
            int valueLength) {
        ensure(1 + 4 + 4 + keyLength + 4 + (value == null ? 0 : valueLength));
        buffer.put(op);
        buffer.putInt(cf);
        buffer.putInt(keyLength);
        buffer.put(key, keyOffset, keyLength);
        if (value == null) {
            buffer.putInt(NO_VALUE);
        } else {
            buffer.putInt(valueLength);
            buffer.put(value, valueOffset, valueLength);
        }
        count++;
    }

    /** A SCAN of {@code prefix} after {@code resumeKey} (exclusive; null: from the start). */
    public void scan(int cf, byte[] prefix, byte[] resumeKey, int limit) {
        if (resumeKey == null) {
            op(SCAN, cf, prefix, 0, prefix.length, null, 0, 0);
        } else {
            op(SCAN, cf, prefix, 0, prefix.length, resumeKey, 0, resumeKey.length);
        }
        ensure(4);
        buffer.putInt(limit);
    }

    /** Completes the header; returns the request's length in bytes. */
    public int finish() {
        buffer.putInt(4, count);
        return buffer.position();
    }

    public ByteBuffer buffer() {
        return buffer;
    }

    boolean isEmpty() {
        return buffer.position() <= HEADER;
    }

    private void ensure(int more) {
        if (buffer.remaining() >= more) {
            return;
        }
        long needed = (long) buffer.position() + more;
        if (needed > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(
                    "ForSt-RS batch larger than 2 GiB (" + needed + " bytes)");
        }
        long grown = Math.max(needed, (long) buffer.capacity() * 2);
        ByteBuffer bigger = allocate((int) Math.min(grown, Integer.MAX_VALUE - 8));
        buffer.flip();
        bigger.put(buffer);
        buffer = bigger;
    }
}
