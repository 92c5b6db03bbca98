package org.forstrs.fs;

import org.forstrs.fs.bench.SlowFileSystem;
import org.forstrs.fs.bench.SlowFsCounters;
import org.forstrs.jni.ForStNative;
import org.forstrs.jni.TestBatch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A database on a remote-like Flink file system ({@code slowfs://}, counting its calls): reads of
 * a file reuse its open streams instead of opening one per read (also when a batch reads it
 * concurrently), and after a reopen with the disk
 * cache every SST read is served locally (no remote open or read at all).
 */
class SlowFsProxyTest {

    private static final int READS = 300;

    /** Writes the suite's keys and flushes them; returns the SST files written. */
    private static int fill(String url, String... options) throws Exception {
        long db = ForStNative.open(url, EngineBehaviour.options(options));
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < EngineBehaviour.KEYS; i++) {
                EngineBehaviour.put(db, cf, EngineBehaviour.key(i), EngineBehaviour.value(i));
            }
            ForStNative.flush(db);
        } finally {
            ForStNative.close(db);
        }
        return EngineBehaviour.dataFiles(url).size();
    }

    /** Reopens and reads {@link #READS} keys spread over the key space. */
    private static void readBack(String url, String... options) throws Exception {
        long db = ForStNative.open(url, EngineBehaviour.options(options));
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < READS; i++) {
                int k = i * (EngineBehaviour.KEYS / READS);
                assertThat(EngineBehaviour.get(db, cf, EngineBehaviour.key(k)))
                        .isEqualTo(EngineBehaviour.value(k));
            }
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    void readsReuseOpenStreams(@TempDir Path dir) throws Exception {
        String url = SlowFileSystem.SCHEME + "://" + dir.resolve("db").toAbsolutePath();
        int files = fill(url);
        assertThat(files).isGreaterThan(1);
        long opens = SlowFsCounters.opens();
        long reads = SlowFsCounters.reads();
        readBack(url);
        // No block cache: every get reads a block remotely; the manifest and each SST are opened
        // once (gets run one at a time, so one stream per file suffices).
        assertThat(SlowFsCounters.reads() - reads).isGreaterThanOrEqualTo(READS);
        assertThat(SlowFsCounters.opens() - opens).isLessThanOrEqualTo(files + 2L);
    }

    @Test
    void concurrentReadsOfAFileShareItsBoundedStreamPool(@TempDir Path dir) throws Exception {
        String url = SlowFileSystem.SCHEME + "://" + dir.resolve("db").toAbsolutePath();
        int files = fill(url);
        long db = ForStNative.open(url, EngineBehaviour.options());
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            TestBatch batch = new TestBatch();
            for (int i = 0; i < EngineBehaviour.KEYS; i++) {
                batch.add(TestBatch.GET, cf, EngineBehaviour.key(i), null);
            }
            ByteBuffer request = batch.encode();
            ByteBuffer response = ByteBuffer.allocateDirect(4 << 20);
            long opens = SlowFsCounters.opens();
            long written = ForStNative.executeBatch(db, request, request.capacity(), response);
            List<Object> values = batch.decode(response, written);
            for (int i = 0; i < EngineBehaviour.KEYS; i++) {
                assertThat(values.get(i)).isEqualTo(EngineBehaviour.value(i));
            }
            // All gets of the batch read at once; each file's reader opens at most its pool of
            // streams (FlinkFsBridge.STREAMS_PER_FILE), not one per concurrent first read.
            assertThat(SlowFsCounters.opens() - opens)
                    .isLessThanOrEqualTo((long) files * FlinkFsBridge.STREAMS_PER_FILE);
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    void aReopenedDatabaseReadsItsFilesFromTheWarmDiskCache(@TempDir Path dir) throws Exception {
        String url = SlowFileSystem.SCHEME + "://" + dir.resolve("db").toAbsolutePath();
        String[] cache = {
            "cache.dir", dir.resolve("cache").toString(), "cache.size-limit", "67108864"
        };
        fill(url, cache);
        long opens = SlowFsCounters.opens();
        long reads = SlowFsCounters.reads();
        readBack(url, cache);
        // Only the manifest is read remotely (one open, its reads); no SST is.
        assertThat(SlowFsCounters.opens() - opens).isLessThanOrEqualTo(1);
        assertThat(SlowFsCounters.reads() - reads).isLessThanOrEqualTo(4);
    }
}
