package org.forstrs.fs;

import org.forstrs.jni.ForStNative;
import org.forstrs.jni.TestBatch;

import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine's behaviour suite, run through {@link ForStNative} on one storage URL: write, read
 * back, multi_get (one batch of gets), iteration (chunked scans), merge, delete, flush,
 * compaction, and reopen. Used by the proxy tests on Flink's local file system and on HDFS.
 */
final class EngineBehaviour {

    static final int KEYS = 3_000;
    private static final String PAD = "x".repeat(120);

    private EngineBehaviour() {}

    /** Engine options that make the suite write several files (small memtables, no cache). */
    static String[] options(String... extra) {
        List<String> options =
                new ArrayList<>(
                        List.of(
                                "memtable-bytes", "65536",
                                "block-cache-bytes", "0",
                                "auto-compaction", "false",
                                "block-size", "4096"));
        options.addAll(List.of(extra));
        return options.toArray(new String[0]);
    }

    static String key(int i) {
        return String.format("key-%05d", i);
    }

    static String value(int i) {
        return "value-" + i + "-" + PAD;
    }

    /** Runs the whole suite on an empty location {@code url}. */
    static void run(String url, String... extraOptions) throws Exception {
        Map<String, String> expected = new TreeMap<>();
        long db = ForStNative.open(url, options(extraOptions));
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < KEYS; i++) {
                put(db, cf, key(i), value(i));
                expected.put(key(i), value(i));
            }
            assertThat(get(db, cf, key(7))).isEqualTo(value(7));
            ForStNative.flush(db);
            assertThat(dataFiles(url)).as("files on the file system after flush").isNotEmpty();

            // merge appends with ',' (list state layout); deletes; a second flush
            merge(db, cf, "list", "a");
            merge(db, cf, "list", "b");
            expected.put("list", "a,b");
            for (int i = 0; i < KEYS; i += 10) {
                delete(db, cf, key(i));
                expected.remove(key(i));
            }
            ForStNative.flush(db);
            int filesBeforeCompaction = dataFiles(url).size();
            assertThat(filesBeforeCompaction).isGreaterThan(1);
            checkAll(db, cf, expected);

            ForStNative.compact(db);
            // Replaced files are deleted once no reader holds them (right after, in the background).
            // No deadline: files that are never deleted hang the test until the hang guard fails it.
            while (dataFiles(url).size() >= filesBeforeCompaction) {
                Thread.sleep(20);
            }
            checkAll(db, cf, expected);
        } finally {
            ForStNative.close(db);
        }

        long reopened = ForStNative.open(url, options(extraOptions));
        try {
            int cf = ForStNative.createColumnFamily(reopened, "state");
            checkAll(reopened, cf, expected);
        } finally {
            ForStNative.close(reopened);
        }
    }

    /**
     * Checkpoints a database at {@code url} into {@code checkpointDir} (files copied through the
     * storage the URLs resolve to) and restores it at {@code restoredUrl}: the restored database
     * holds exactly what was written before the checkpoint. Returns the bytes the copies streamed
     * through this process.
     */
    static long checkpointAndRestore(
            String url, String checkpointDir, String restoredUrl, String... extraOptions) {
        Map<String, String> expected = new TreeMap<>();
        long db = ForStNative.open(url, options(extraOptions));
        byte[] manifest;
        String[] names;
        long streamed;
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < KEYS; i++) {
                put(db, cf, key(i), value(i));
                expected.put(key(i), value(i));
            }
            long checkpoint = ForStNative.checkpointPrepare(db);
            try {
                for (int i = 0; i < KEYS; i += 3) {
                    put(db, cf, key(i), "written after the checkpoint");
                }
                manifest = ForStNative.checkpointManifest(checkpoint);
                names = ForStNative.checkpointFileNames(checkpoint);
                assertThat(names).isNotEmpty();
                String[] destNames = new String[names.length];
                for (int i = 0; i < names.length; i++) {
                    destNames[i] = "copy-" + i + ".sst";
                }
                streamed =
                        ForStNative.checkpointCopyFiles(checkpoint, names, checkpointDir, destNames);
            } finally {
                ForStNative.checkpointRelease(checkpoint);
            }
        } finally {
            ForStNative.close(db);
        }
        String[] uris = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            uris[i] = checkpointDir + "/copy-" + i + ".sst";
        }
        // Keys are plain strings here: their first byte stands in for a 1-byte key-group prefix.
        long restored =
                ForStNative.openRestored(
                        restoredUrl,
                        options(extraOptions),
                        new byte[][] {manifest},
                        new String[][] {names},
                        new String[][] {uris},
                        new int[] {0, 127},
                        0,
                        127,
                        1);
        try {
            checkAll(restored, ForStNative.createColumnFamily(restored, "state"), expected);
        } finally {
            ForStNative.close(restored);
        }
        return streamed;
    }

    /** Every key by one multi_get batch, a missing key, and a chunked scan of a prefix. */
    static void checkAll(long db, int cf, Map<String, String> expected) {
        TestBatch gets = new TestBatch();
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            gets.add(TestBatch.GET, cf, key(i), null);
            keys.add(key(i));
        }
        gets.add(TestBatch.GET, cf, "list", null);
        keys.add("list");
        gets.add(TestBatch.GET, cf, "no-such-key", null);
        keys.add("no-such-key");
        List<Object> values = execute(db, gets);
        for (int i = 0; i < keys.size(); i++) {
            assertThat(values.get(i)).as("value of %s", keys.get(i)).isEqualTo(expected.get(keys.get(i)));
        }

        // key-01xxx in chunks of 37, resuming after the last key seen
        Map<String, String> scanned = new TreeMap<>();
        String resumeAfter = null;
        while (true) {
            TestBatch scan = new TestBatch().scan(cf, "key-01", resumeAfter, 37);
            TestBatch.Scan chunk = (TestBatch.Scan) execute(db, scan).get(0);
            for (String entry : chunk.entries()) {
                int eq = entry.indexOf('=');
                scanned.put(entry.substring(0, eq), entry.substring(eq + 1));
                resumeAfter = entry.substring(0, eq);
            }
            if (!chunk.hasMore()) {
                break;
            }
        }
        Map<String, String> expectedPrefix = new TreeMap<>();
        expected.forEach(
                (k, v) -> {
                    if (k.startsWith("key-01")) {
                        expectedPrefix.put(k, v);
                    }
                });
        assertThat(scanned).isNotEmpty().isEqualTo(expectedPrefix);
    }

    static List<Object> execute(long db, TestBatch batch) {
        ByteBuffer request = batch.encode();
        ByteBuffer response = ByteBuffer.allocateDirect(4 << 20);
        long length = ForStNative.executeBatch(db, request, request.limit(), response);
        assertThat(length).as("response size").isPositive();
        return batch.decode(response, length);
    }

    static void put(long db, int cf, String key, String value) {
        ByteBuffer k = TestBatch.direct(key);
        ByteBuffer v = TestBatch.direct(value);
        ForStNative.put(db, cf, k, 0, k.capacity(), v, 0, v.capacity());
    }

    static void merge(long db, int cf, String key, String value) {
        ByteBuffer k = TestBatch.direct(key);
        ByteBuffer v = TestBatch.direct(value);
        ForStNative.merge(db, cf, k, 0, k.capacity(), v, 0, v.capacity());
    }

    static void delete(long db, int cf, String key) {
        ByteBuffer k = TestBatch.direct(key);
        ForStNative.delete(db, cf, k, 0, k.capacity());
    }

    /** The value of a key, or null; reads through {@link ForStNative#get}. */
    static String get(long db, int cf, String key) {
        ByteBuffer k = TestBatch.direct(key);
        ByteBuffer out = ByteBuffer.allocateDirect(1024);
        int n = ForStNative.get(db, cf, k, 0, k.capacity(), out, 0, out.capacity());
        if (n == ForStNative.NOT_FOUND) {
            return null;
        }
        byte[] bytes = new byte[n];
        out.get(0, bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** The SST files under {@code url}, listed through Flink's file system (not the engine). */
    static List<Path> dataFiles(String url) throws IOException {
        FileSystem fs = FileSystem.get(URI.create(url));
        for (int attempt = 1; ; attempt++) {
            List<Path> out = new ArrayList<>();
            try {
                collect(fs, new Path(url), out);
                return out;
            } catch (FileNotFoundException e) {
                // A file deleted by a compaction while we listed: list again.
                if (attempt == 10) {
                    throw e;
                }
            }
        }
    }

    private static void collect(FileSystem fs, Path dir, List<Path> out) throws IOException {
        if (!fs.exists(dir)) {
            return;
        }
        for (FileStatus status : fs.listStatus(dir)) {
            if (status.isDir()) {
                collect(fs, status.getPath(), out);
            } else if (status.getPath().getName().endsWith(".sst")) {
                out.add(status.getPath());
            }
        }
    }
}
