package org.forstrs.flink.sync;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.jni.ForStNative;

import javax.annotation.Nullable;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The synchronous path's native calls: one JNI call per state access, on the calling thread.
 * Point reads and writes use the direct-buffer entry points ({@link ForStNative#get}, {@code put},
 * {@code merge}, {@code delete}); prefix scans, prefix deletes and prefix probes are one-request
 * batches ({@link ForStNative#executeBatch}). Buffers are per thread, so queryable-state reads
 * from other threads do not disturb the task thread.
 */
public final class SyncDbAccess {

    private static final int INITIAL_KEY_BYTES = 256;
    private static final int INITIAL_VALUE_BYTES = 1024;
    private static final int INITIAL_RESPONSE_BYTES = 64 * 1024;

    private final NativeDb db;
    private final ThreadLocal<Buffers> buffers = ThreadLocal.withInitial(Buffers::new);

    /** One scan chunk: keys and values in key order, and whether more entries follow. */
    public record Chunk(List<byte[]> keys, List<byte[]> values, boolean hasMore) {}

    /** Direct buffers of one thread, grown on demand. */
    private static final class Buffers {
        ByteBuffer key = ByteBuffer.allocateDirect(INITIAL_KEY_BYTES);
        ByteBuffer value = ByteBuffer.allocateDirect(INITIAL_VALUE_BYTES);
        ByteBuffer response = ByteBuffer.allocateDirect(INITIAL_RESPONSE_BYTES);
        final BatchEncoder batch = new BatchEncoder(INITIAL_KEY_BYTES);

        ByteBuffer key(byte[] bytes) {
            if (key.capacity() < bytes.length) {
                key = ByteBuffer.allocateDirect(Math.max(bytes.length, key.capacity() * 2));
            }
            key.clear();
            key.put(bytes);
            return key;
        }

        ByteBuffer value(byte[] bytes) {
            if (value.capacity() < bytes.length) {
                value = ByteBuffer.allocateDirect(Math.max(bytes.length, value.capacity() * 2));
            }
            value.clear();
            value.put(bytes);
            return value;
        }
    }

    public SyncDbAccess(NativeDb db) {
        this.db = db;
    }

    NativeDb db() {
        return db;
    }

    /** The value of {@code key}, or null if it has none. */
    @Nullable
    public byte[] get(int cf, byte[] key) {
        Buffers b = buffers.get();
        ByteBuffer keyBuffer = b.key(key);
        while (true) {
            int length = db.get(cf, keyBuffer, key.length, b.value, b.value.capacity());
            if (length == ForStNative.NOT_FOUND) {
                return null;
            }
            if (length >= 0) {
                byte[] out = new byte[length];
                b.value.get(0, out);
                return out;
            }
            b.value = ByteBuffer.allocateDirect(-length);
        }
    }

    public void put(int cf, byte[] key, byte[] value) {
        Buffers b = buffers.get();
        db.put(cf, b.key(key), key.length, b.value(value), value.length);
    }

    /** Appends {@code operand} to the list at {@code key} (elements joined by ','). */
    void merge(int cf, byte[] key, byte[] operand) {
        Buffers b = buffers.get();
        db.merge(cf, b.key(key), key.length, b.value(operand), operand.length);
    }

    public void delete(int cf, byte[] key) {
        Buffers b = buffers.get();
        db.delete(cf, b.key(key), key.length);
    }

    /**
     * Applies the writes (PUT, MERGE, DELETE, DELETE_PREFIX) encoded in {@code writes} since its
     * {@code begin()} as one atomic write batch.
     */
    public void write(BatchEncoder writes) {
        Buffers b = buffers.get();
        int length = writes.finish();
        long written = db.executeBatch(writes.buffer(), length, b.response);
        new BatchDecoder(b.response, (int) written, writes.count());
    }

    /** Deletes every key of the column family that starts with {@code prefix}. */
    public void deletePrefix(int cf, byte[] prefix) {
        Buffers b = buffers.get();
        b.batch.begin();
        b.batch.op(BatchEncoder.DELETE_PREFIX, cf, prefix);
        execute(b, 1);
    }

    /** Whether any key of the column family starts with {@code prefix}. */
    public boolean prefixExists(int cf, byte[] prefix) {
        Buffers b = buffers.get();
        b.batch.begin();
        b.batch.op(BatchEncoder.PREFIX_EXISTS, cf, prefix);
        return execute(b, 1).readBoolean();
    }

    /**
     * Up to {@code limit} entries whose keys start with {@code prefix}, after {@code resumeAfter}
     * (exclusive; null: from the first).
     */
    public Chunk scan(int cf, byte[] prefix, @Nullable byte[] resumeAfter, int limit) {
        Buffers b = buffers.get();
        b.batch.begin();
        b.batch.scan(cf, prefix, resumeAfter, limit);
        BatchDecoder dec = execute(b, 1);
        int n = dec.readInt();
        List<byte[]> keys = new ArrayList<>(n);
        List<byte[]> values = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            keys.add(dec.readBytes());
            values.add(dec.readBytes());
        }
        return new Chunk(keys, values, dec.readBoolean());
    }

    private BatchDecoder execute(Buffers b, int requests) {
        int length = b.batch.finish();
        while (true) {
            long written = db.executeBatch(b.batch.buffer(), length, b.response);
            if (written >= 0) {
                return new BatchDecoder(b.response, (int) written, requests);
            }
            // Too small: nothing was applied; retry with the size the engine asked for.
            b.response = ByteBuffer.allocateDirect((int) Math.min(-written, Integer.MAX_VALUE - 8));
        }
    }
}
