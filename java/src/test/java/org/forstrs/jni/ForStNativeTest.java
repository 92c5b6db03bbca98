package org.forstrs.jni;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.forstrs.jni.TestBatch.direct;

/** {@link ForStNative} against the real native library built from this repository's crate. */
class ForStNativeTest {

    private static final String[] SMALL = {"memtable-bytes", "65536", "block-cache-bytes", "1048576"};

    @TempDir Path dir;

    private long db;
    private int cf;

    @BeforeEach
    void openDb() {
        db = ForStNative.open(dir.toUri().toString(), SMALL);
        cf = ForStNative.createColumnFamily(db, "state");
    }

    @AfterEach
    void closeDb() {
        if (db != 0) {
            ForStNative.close(db);
        }
    }

    // ---------------------------------------------------------------- engine options

    @Test
    void engineOptionsTableChecksAndOptionsInEffect() {
        String[] table = ForStNative.engineOptions();
        assertThat(table.length % 6).isZero();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < table.length; i += 6) {
            names.add(table[i]);
        }
        assertThat(names).contains("memtable-bytes", "block-cache-bytes", "compression");

        List<String> inEffect = List.of(ForStNative.optionsInEffect(db));
        assertThat(inEffect).containsSequence("memtable-bytes", "65536");
        assertThat(inEffect).containsSequence("block-cache-bytes", "1048576");

        ForStNative.checkOptions(new String[] {"memtable-bytes", "8192", "fs.force-proxy", "true"});
        assertThatThrownBy(() -> ForStNative.checkOptions(new String[] {"memtable-bytes", "10"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'memtable-bytes'");
        assertThatThrownBy(() -> ForStNative.checkOptions(new String[] {"no-such", "1"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'no-such'");

        ForStNative.close(db);
        long closed = db;
        db = 0;
        assertThatThrownBy(() -> ForStNative.optionsInEffect(closed))
                .isInstanceOf(IllegalStateException.class);
    }

    // ---------------------------------------------------------------- single operations

    @Test
    void putGetMergeDeleteThroughDirectBuffers() {
        final int other = ForStNative.createColumnFamily(db, "other");
        assertThat(other).isNotEqualTo(cf);
        assertThat(ForStNative.createColumnFamily(db, "state")).isEqualTo(cf);

        put(cf, "k1", "v1");
        assertThat(get(cf, "k1")).isEqualTo("v1");
        assertThat(get(other, "k1")).isNull();
        assertThat(get(cf, "missing")).isNull();

        ForStNative.merge(db, cf, direct("list"), 0, 4, direct("a"), 0, 1);
        ForStNative.merge(db, cf, direct("list"), 0, 4, direct("b"), 0, 1);
        assertThat(get(cf, "list")).isEqualTo("a,b");

        ForStNative.delete(db, cf, direct("k1"), 0, 2);
        assertThat(get(cf, "k1")).isNull();
    }

    @Test
    void offsetsAddressPartsOfBuffers() {
        final ByteBuffer key = direct("xxkeyxx");
        final ByteBuffer value = direct("--value--");
        ForStNative.put(db, cf, key, 2, 3, value, 2, 5);
        final ByteBuffer out = ByteBuffer.allocateDirect(16);
        assertThat(ForStNative.get(db, cf, direct("key"), 0, 3, out, 4, 12)).isEqualTo(5);
        assertThat(string(out, 4, 5)).isEqualTo("value");
        assertThat(key.position()).isZero();
        assertThat(value.position()).isZero();
    }

    @Test
    void getReportsTheRoomNeededWhenTheOutputIsTooSmall() {
        put(cf, "k", "0123456789");
        final ByteBuffer out = ByteBuffer.allocateDirect(4);
        assertThat(ForStNative.get(db, cf, direct("k"), 0, 1, out, 0, 4)).isEqualTo(-10);
        assertThat(ForStNative.get(db, cf, direct("nope"), 0, 4, out, 0, 4))
                .isEqualTo(ForStNative.NOT_FOUND);
        assertThatThrownBy(() -> ForStNative.get(db, cf, direct("k"), 0, 1, out, 0, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 1");
    }

    @Test
    void flushedDataSurvivesReopen() {
        for (int i = 0; i < 1000; i++) {
            put(cf, "key-" + i, "value-" + i);
        }
        ForStNative.flush(db);
        ForStNative.close(db);
        db = ForStNative.open(dir.toUri().toString(), null);
        cf = ForStNative.createColumnFamily(db, "state");
        assertThat(get(cf, "key-0")).isEqualTo("value-0");
        assertThat(get(cf, "key-999")).isEqualTo("value-999");
    }

    // ---------------------------------------------------------------- batches

    @Test
    void executeBatchRunsReadsThenWrites() {
        final int other = ForStNative.createColumnFamily(db, "other");
        put(cf, "a", "1");
        put(cf, "gone", "x");
        for (int i = 0; i < 5; i++) {
            put(other, "map/" + i, "v" + i);
        }
        put(other, "nap/0", "outside the prefix");

        final TestBatch batch =
                new TestBatch()
                        .add(TestBatch.GET, cf, "a", null)
                        .add(TestBatch.GET, cf, "missing", null)
                        .add(TestBatch.PUT, cf, "a", "2")
                        .add(TestBatch.MERGE, cf, "list", "x")
                        .add(TestBatch.DELETE, cf, "gone", null)
                        .scan(other, "map/", null, 3)
                        .scan(other, "map/", "map/2", 3)
                        .add(TestBatch.PREFIX_EXISTS, other, "map/", null)
                        .add(TestBatch.PREFIX_EXISTS, other, "zzz/", null)
                        .add(TestBatch.GET, other, "map/4", null);
        final ByteBuffer response = ByteBuffer.allocateDirect(4096);
        final long written = ForStNative.executeBatch(db, batch.encode(), batch.encode().capacity(), response);

        assertThat(written).isPositive();
        final List<Object> results = batch.decode(response, written);
        assertThat(results)
                .containsExactly(
                        "1",
                        null,
                        null,
                        null,
                        null,
                        new TestBatch.Scan(List.of("map/0=v0", "map/1=v1", "map/2=v2"), true),
                        new TestBatch.Scan(List.of("map/3=v3", "map/4=v4"), false),
                        true,
                        false,
                        "v4");
        // The writes were applied after the reads.
        assertThat(get(cf, "a")).isEqualTo("2");
        assertThat(get(cf, "list")).isEqualTo("x");
        assertThat(get(cf, "gone")).isNull();
    }

    @Test
    void executeBatchAsksForMoreRoomAndAppliesNothingUntilItFits() {
        put(cf, "big", "x".repeat(1000));
        final TestBatch batch =
                new TestBatch().add(TestBatch.GET, cf, "big", null).add(TestBatch.PUT, cf, "k", "v");
        final ByteBuffer request = batch.encode();

        final long needed = ForStNative.executeBatch(db, request, request.capacity(), ByteBuffer.allocateDirect(64));
        assertThat(needed).isNegative();
        assertThat(get(cf, "k")).as("nothing applied").isNull();

        final ByteBuffer response = ByteBuffer.allocateDirect((int) -needed);
        final long written = ForStNative.executeBatch(db, request, request.capacity(), response);
        assertThat(written).isEqualTo(-needed);
        assertThat(batch.decode(response, written).get(0)).isEqualTo("x".repeat(1000));
        assertThat(get(cf, "k")).isEqualTo("v");
    }

    @Test
    void deletePrefixClearsOnlyThePrefix() {
        put(cf, "m/1", "a");
        put(cf, "m/2", "b");
        put(cf, "n/1", "c");
        final TestBatch batch = new TestBatch().add(TestBatch.DELETE_PREFIX, cf, "m/", null);
        final ByteBuffer request = batch.encode();
        ForStNative.executeBatch(db, request, request.capacity(), ByteBuffer.allocateDirect(64));
        assertThat(get(cf, "m/1")).isNull();
        assertThat(get(cf, "m/2")).isNull();
        assertThat(get(cf, "n/1")).isEqualTo("c");
    }

    // ---------------------------------------------------------------- robustness: each failure
    // is a Java exception, and the next valid call works.

    @Test
    void closedAndUnknownHandlesThrowIllegalState() {
        final long second = ForStNative.open(dir.resolve("second").toUri().toString(), null);
        ForStNative.close(second);
        assertThatThrownBy(() -> put(second, 0, "k", "v"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("handle " + second);
        assertThatThrownBy(() -> ForStNative.close(second)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> ForStNative.flush(second)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> ForStNative.createColumnFamily(123_456_789L, "x"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("123456789");
        assertThatThrownBy(() -> ForStNative.get(0, 0, direct("k"), 0, 1, ByteBuffer.allocateDirect(1), 0, 1))
                .isInstanceOf(IllegalStateException.class);
        assertStillWorks();
    }

    @Test
    void nullAndHeapBuffersThrowIllegalArgument() {
        assertThatThrownBy(() -> ForStNative.put(db, cf, null, 0, 0, direct("v"), 0, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key buffer is null");
        assertThatThrownBy(() -> ForStNative.put(db, cf, direct("k"), 0, 1, ByteBuffer.wrap(new byte[1]), 0, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("value buffer is not a direct ByteBuffer");
        assertThatThrownBy(() -> ForStNative.get(db, cf, direct("k"), 0, 1, ByteBuffer.allocate(8), 0, 8))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a direct");
        assertThatThrownBy(() -> ForStNative.delete(db, cf, ByteBuffer.allocate(1), 0, 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ForStNative.executeBatch(db, null, 0, ByteBuffer.allocateDirect(8)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("request buffer is null");
        final ByteBuffer request = new TestBatch().add(TestBatch.GET, cf, "k", null).encode();
        assertThatThrownBy(() -> ForStNative.executeBatch(db, request, request.capacity(), ByteBuffer.allocate(64)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("response buffer is not a direct");
        assertStillWorks();
    }

    @Test
    void lengthsBeyondTheBufferThrowIllegalArgument() {
        assertThatThrownBy(() -> ForStNative.put(db, cf, direct("k"), 0, 2, direct("v"), 0, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exceeds the buffer capacity 1");
        assertThatThrownBy(() -> ForStNative.put(db, cf, direct("k"), 0, 1, direct("v"), 1, Integer.MAX_VALUE))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ForStNative.put(db, cf, direct("k"), -1, 1, direct("v"), 0, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("negative");
        assertThatThrownBy(() -> ForStNative.get(db, cf, direct("k"), 0, 1, ByteBuffer.allocateDirect(4), 2, 4))
                .isInstanceOf(IllegalArgumentException.class);
        final ByteBuffer request = new TestBatch().add(TestBatch.GET, cf, "k", null).encode();
        assertThatThrownBy(() -> ForStNative.executeBatch(db, request, request.capacity() + 1, ByteBuffer.allocateDirect(64)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exceeds the buffer capacity");
        assertStillWorks();
    }

    @Test
    void malformedBatchesThrowIllegalArgumentAndApplyNothing() {
        final ByteBuffer request =
                new TestBatch()
                        .add(TestBatch.PUT, cf, "written", "no")
                        .add(TestBatch.GET, cf, "k", null)
                        .encode();
        final ByteBuffer response = ByteBuffer.allocateDirect(256);
        for (int length = 0; length < request.capacity(); length++) {
            final int truncated = length;
            assertThatThrownBy(() -> ForStNative.executeBatch(db, request, truncated, response))
                    .as("request truncated to %d bytes", truncated)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("malformed batch");
        }
        final ByteBuffer unknownCf = new TestBatch().add(TestBatch.PUT, 9999, "written", "no").encode();
        assertThatThrownBy(() -> ForStNative.executeBatch(db, unknownCf, unknownCf.capacity(), response))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown column family id 9999");
        final ByteBuffer garbage = ByteBuffer.allocateDirect(64);
        for (int i = 0; i < 64; i++) {
            garbage.put(i, (byte) (i * 37));
        }
        assertThatThrownBy(() -> ForStNative.executeBatch(db, garbage, 64, response))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ForStNative.executeBatch(db, request, request.capacity(), request))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("overlap");
        assertThat(get(cf, "written")).isNull();
        assertStillWorks();
    }

    @Test
    void unknownColumnFamilyIdThrowsIllegalArgument() {
        assertThatThrownBy(() -> put(db, 4242, "k", "v"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown column family id 4242");
        assertStillWorks();
    }

    @Test
    void oversizedValueThrowsIllegalArgumentAndWritesNothing() {
        // One byte more than an SST entry may hold (key + value <= 1 GiB).
        ByteBuffer huge = ByteBuffer.allocateDirect((1 << 30) + 1);
        assertThatThrownBy(() -> ForStNative.put(db, cf, direct("big"), 0, 3, huge, 0, huge.capacity()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exceeds the limit");
        assertThat(get(cf, "big")).isNull();
        assertStillWorks();
    }

    @Test
    void badOpenArgumentsThrowWithTheRustErrorText() {
        assertThatThrownBy(() -> ForStNative.open(dir.toUri().toString(), new String[] {"no-such-key", "1"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no-such-key");
        assertThatThrownBy(() -> ForStNative.open(dir.toUri().toString(), new String[] {"memtable-bytes"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pairs");
        assertThatThrownBy(() -> ForStNative.open("no scheme, no absolute path", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no scheme, no absolute path");
        // Schemes the engine does not serve natively go to Flink's file systems, which have none
        // for this one.
        assertThatThrownBy(() -> ForStNative.open("nosuchscheme://nowhere/x", null))
                .isInstanceOf(java.io.IOException.class)
                .hasMessageContaining("nosuchscheme://nowhere/x");
        assertThatThrownBy(() -> ForStNative.open(null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("url is null");
        assertThatThrownBy(() -> ForStNative.createColumnFamily(db, null))
                .isInstanceOf(IllegalArgumentException.class);
        assertStillWorks();
    }

    @Test
    void storageFailuresThrowIOException() throws IOException {
        final Path file = Files.writeString(dir.resolve("a-file"), "not a directory");
        assertThatThrownBy(() -> ForStNative.open(file.resolve("db").toUri().toString(), null))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("a-file");
        assertStillWorks();
    }

    // ---------------------------------------------------------------- TTL compaction filter

    /** Java objects the compaction thread calls back; {@code fail} makes them throw. */
    static final class Clock {
        volatile long now;
        volatile boolean fail;

        long currentTimestamp() {
            if (fail) {
                throw new IllegalStateException("clock broken");
            }
            return now;
        }
    }

    static final class Elements {
        volatile int answer;
        volatile boolean fail;

        int nextUnexpiredOffset(byte[] list, long ttl, long currentTimestamp) {
            if (fail) {
                throw new IllegalStateException("cannot parse");
            }
            return answer;
        }
    }

    @Test
    void badTtlFilterArgumentsThrowIllegalArgument() {
        assertBadFilter(9, 0, 10, 1, null, null, "unknown TTL layout 9");
        assertBadFilter(1, 0, 0, 1, null, null, "must be positive");
        assertBadFilter(1, 0, 10, -1, null, null, "must not be negative");
        assertBadFilter(1, -1, 10, 1, null, null, "must not be negative");
        assertBadFilter(2, 4, 10, 1, null, null, "list element length 4 < 8");
        assertBadFilter(3, 0, 10, 1, null, null, "list element filter is null");
        assertBadFilter(3, 0, 10, 1, null, new Object(), "has no method nextUnexpiredOffset");
        assertBadFilter(1, 0, 10, 1, new Object(), null, "has no method currentTimestamp");
        assertThatThrownBy(() -> ForStNative.setTtlCompactionFilter(db, 4242, 1, 0, 10, 1, null, null))
                .isInstanceOf(IllegalArgumentException.class);
        assertStillWorks();
    }

    @Test
    void failingJavaCallbacksMakeCompactionKeepEntries() {
        final Clock clock = new Clock();
        final Elements elements = new Elements();
        final int lists = ForStNative.createColumnFamily(db, "lists");
        // TtlValues with last-access time 0, expired at 10 for a TTL of 10 ms.
        final byte[] value = ttlValue("v");
        final byte[] list = (new String(ttlValue("a"), StandardCharsets.ISO_8859_1) + ","
                        + new String(ttlValue("b"), StandardCharsets.ISO_8859_1))
                .getBytes(StandardCharsets.ISO_8859_1);
        putBytes(cf, "k", value);
        putBytes(lists, "k", list);
        ForStNative.setTtlCompactionFilter(db, cf, 1, 0, 10, 1, clock, null);
        ForStNative.setTtlCompactionFilter(db, lists, 3, 0, 10, 1, clock, elements);
        clock.now = 10;

        clock.fail = true;
        compact();
        assertThat(get(cf, "k")).as("no time, nothing expires").isNotNull();
        clock.fail = false;
        elements.fail = true;
        compact();
        assertThat(get(cf, "k")).isNull();
        assertThat(get(lists, "k")).as("element filter threw").isNotNull();
        elements.fail = false;
        elements.answer = 3; // inside the first element, not after a ','
        compact();
        assertThat(get(lists, "k")).as("bad offset").isNotNull();
        elements.answer = ttlValue("a").length + 1;
        compact();
        assertThat(get(lists, "k")).isEqualTo(new String(ttlValue("b"), StandardCharsets.UTF_8));
        assertStillWorks();
    }

    private void assertBadFilter(
            int layout,
            int parameter,
            long ttl,
            long queryAfter,
            Object clock,
            Object elements,
            String message) {
        assertThatThrownBy(
                        () ->
                                ForStNative.setTtlCompactionFilter(
                                        db, cf, layout, parameter, ttl, queryAfter, clock, elements))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message);
    }

    private static byte[] ttlValue(String user) {
        final byte[] bytes = user.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + bytes.length).putLong(0).put(bytes).array();
    }

    private void putBytes(int family, String key, byte[] value) {
        final ByteBuffer k = direct(key);
        final ByteBuffer v = ByteBuffer.allocateDirect(value.length).put(value).flip();
        ForStNative.put(db, family, k, 0, k.capacity(), v, 0, value.length);
    }

    private void compact() {
        ForStNative.flush(db);
        ForStNative.compact(db);
    }

    // ---------------------------------------------------------------- loader

    @Test
    void libraryWasExtractedUnderItsContentHash() throws IOException {
        final String resource = NativeLibraryLoader.resourcePath();
        final byte[] library;
        try (InputStream in = NativeLibraryLoader.class.getResourceAsStream(resource)) {
            assertThat(in).isNotNull();
            library = in.readAllBytes();
        }
        assertThat(NativeLibraryLoader.loadedFrom())
                .contains(resource)
                .contains("libforst-" + NativeLibraryLoader.sha256(library) + "-");
    }

    // ---------------------------------------------------------------- helpers

    private void assertStillWorks() {
        final String value = "still works";
        put(cf, "after-failure", value);
        assertThat(get(cf, "after-failure")).isEqualTo(value);
    }

    private void put(int family, String key, String value) {
        put(db, family, key, value);
    }

    private static void put(long handle, int family, String key, String value) {
        final ByteBuffer k = direct(key);
        final ByteBuffer v = direct(value);
        ForStNative.put(handle, family, k, 0, k.capacity(), v, 0, v.capacity());
    }

    private String get(int family, String key) {
        final ByteBuffer k = direct(key);
        ByteBuffer out = ByteBuffer.allocateDirect(8);
        int length = ForStNative.get(db, family, k, 0, k.capacity(), out, 0, out.capacity());
        if (length < ForStNative.NOT_FOUND) {
            out = ByteBuffer.allocateDirect(-length);
            length = ForStNative.get(db, family, k, 0, k.capacity(), out, 0, out.capacity());
        }
        return length == ForStNative.NOT_FOUND ? null : string(out, 0, length);
    }

    private static String string(ByteBuffer buffer, int offset, int length) {
        final byte[] bytes = new byte[length];
        buffer.get(offset, bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
