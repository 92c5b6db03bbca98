package org.forstrs.jni;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Encodes request batches and decodes responses in the wire format, for tests (also of other
 * packages).
 */
public final class TestBatch {

    public static final byte GET = 1;
    public static final byte PUT = 2;
    public static final byte MERGE = 3;
    public static final byte DELETE = 4;
    public static final byte DELETE_PREFIX = 5;
    public static final byte SCAN = 6;
    public static final byte PREFIX_EXISTS = 7;

    private static final int REQUEST_MAGIC = 0x46425131;
    private static final int RESPONSE_MAGIC = 0x46425232;
    private static final int NO_VALUE = 0xFFFF_FFFF;

    private final ByteBuffer body =
            ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
    private final List<Byte> ops = new ArrayList<>();

    public TestBatch add(byte op, int cf, String key, String value) {
        body.put(op).putInt(cf);
        putBytes(bytes(key));
        if (value == null) {
            body.putInt(NO_VALUE);
        } else {
            putBytes(bytes(value));
        }
        ops.add(op);
        return this;
    }

    public TestBatch scan(int cf, String prefix, String resumeAfter, int limit) {
        add(SCAN, cf, prefix, resumeAfter);
        body.putInt(limit);
        return this;
    }

    /** The encoded batch in a fresh direct buffer of exactly its size. */
    public ByteBuffer encode() {
        final ByteBuffer out =
                ByteBuffer.allocateDirect(8 + body.position()).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(REQUEST_MAGIC).putInt(ops.size()).put(body.array(), 0, body.position());
        return out.flip();
    }

    /**
     * Decodes {@code length} bytes of a response: per request a String (GET: value or null), a
     * Boolean (PREFIX_EXISTS), a {@link Scan} or null (writes).
     */
    public List<Object> decode(ByteBuffer response, long length) {
        final ByteBuffer in = response.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        in.limit((int) length);
        if (in.getInt() != RESPONSE_MAGIC || in.getInt() != ops.size()) {
            throw new IllegalStateException("bad response header");
        }
        in.getInt(); // flags
        final List<Object> out = new ArrayList<>();
        for (byte op : ops) {
            switch (op) {
                case GET:
                    out.add(in.get() == 1 ? getBytes(in) : null);
                    break;
                case SCAN:
                    final int n = in.getInt();
                    final List<String> entries = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        entries.add(getBytes(in) + "=" + getBytes(in));
                    }
                    out.add(new Scan(entries, in.get() == 1));
                    break;
                case PREFIX_EXISTS:
                    out.add(in.get() == 1);
                    break;
                default:
                    out.add(null);
            }
        }
        if (in.hasRemaining()) {
            throw new IllegalStateException("trailing bytes in response");
        }
        return out;
    }

    /** One scan chunk: "key=value" entries and whether more follow. */
    public record Scan(List<String> entries, boolean hasMore) {}

    private void putBytes(byte[] bytes) {
        body.putInt(bytes.length).put(bytes);
    }

    private static String getBytes(ByteBuffer in) {
        final byte[] bytes = new byte[in.getInt()];
        in.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A direct buffer holding exactly the UTF-8 bytes of {@code s}. */
    public static ByteBuffer direct(String s) {
        final byte[] bytes = bytes(s);
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }
}
