package org.forstrs.flink.state;

import org.forstrs.jni.ForStNative;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** Tests' access to a {@link NativeDb} with UTF-8 string keys and values. */
public final class StringEntries {

    private static final int MAX_VALUE_BYTES = 4096;

    private StringEntries() {}

    public static void put(NativeDb db, int cf, String key, String value) {
        ByteBuffer k = direct(key);
        ByteBuffer v = direct(value);
        db.put(cf, k, k.capacity(), v, v.capacity());
    }

    /** The value of {@code key} (at most {@value #MAX_VALUE_BYTES} bytes); null if absent. */
    public static String get(NativeDb db, int cf, String key) {
        ByteBuffer k = direct(key);
        ByteBuffer out = ByteBuffer.allocateDirect(MAX_VALUE_BYTES);
        int length = db.get(cf, k, k.capacity(), out, MAX_VALUE_BYTES);
        if (length == ForStNative.NOT_FOUND) {
            return null;
        }
        if (length < 0) {
            throw new IllegalStateException(key + ": value larger than " + MAX_VALUE_BYTES);
        }
        byte[] value = new byte[length];
        out.get(0, value);
        return new String(value, StandardCharsets.UTF_8);
    }

    /** The storage options of a disk cache in {@code dir}, 1 GiB, no reserve. */
    public static String[] diskCacheOptions(Path dir) {
        return new String[] {
            "cache.dir", dir.toString(), "cache.size-limit", Long.toString(1L << 30),
            "cache.reserve-size", "0"
        };
    }

    private static ByteBuffer direct(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }
}
