package org.forstrs.flink.state;

import org.forstrs.jni.ForStNative;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * After a failover, the next attempt of a subtask is restored by reference from the files the
 * previous attempt wrote and handed over; with a disk cache, it reads them from that cache (the
 * previous attempt filled it as it wrote them), not from the remote store.
 */
class WarmDiskCacheAfterFailoverTest {

    private static final int KEYS = 2000;

    private static final List<String> STATS = List.of(ForStNative.statNames());

    @Test
    void theNextAttemptReadsThePreviousAttemptsFilesFromTheCache(@TempDir Path dir) {
        String[] options = StringEntries.diskCacheOptions(dir.resolve("cache"));
        Path firstDir = dir.resolve("attempt_0");
        NativeDb first = NativeDb.open(firstDir.toUri().toString(), options);
        byte[] manifest;
        String[] names;
        try {
            int cf = first.createColumnFamily("state");
            for (int i = 0; i < KEYS; i++) {
                StringEntries.put(first, cf, key(i), value(i));
            }
            NativeCheckpoint checkpoint = first.prepareCheckpoint();
            try {
                manifest = checkpoint.manifest();
                names = checkpoint.fileNames();
                first.handedOverFiles().handOver(checkpoint, 1, names);
            } finally {
                checkpoint.release();
            }
        } finally {
            first.close(); // the attempt ends; its handed-over files stay with the checkpoint
        }
        assertThat(names).isNotEmpty();
        String[] uris = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            uris[i] = firstDir.resolve(names[i]).toUri().toString();
        }

        NativeDb next =
                NativeDb.openRestored(
                        dir.resolve("attempt_1").toUri().toString(),
                        options,
                        new RestoreSources(
                                new byte[][] {manifest},
                                new String[][] {names},
                                new String[][] {uris},
                                new int[] {0, 127},
                                0,
                                127,
                                1));
        try {
            int cf = next.createColumnFamily("state");
            long[] before = stats(next);
            for (int i = 0; i < KEYS; i++) {
                assertThat(StringEntries.get(next, cf, key(i))).isEqualTo(value(i));
            }
            long[] after = stats(next);
            assertThat(delta(before, after, "disk-cache-hits"))
                    .as("reads of the restored files served by the cache")
                    .isPositive();
            assertThat(delta(before, after, "disk-cache-misses"))
                    .as("reads that went to the remote files")
                    .isZero();
        } finally {
            next.close();
        }
    }

    private static long[] stats(NativeDb db) {
        long[] values = new long[STATS.size()];
        assertThat(db.readStats(values)).isTrue();
        return values;
    }

    private static long delta(long[] before, long[] after, String stat) {
        int index = STATS.indexOf(stat);
        assertThat(index).as(stat).isNotNegative();
        return after[index] - before[index];
    }

    // Keys start below 128: key group prefix byte within the restored range 0..127.
    private static String key(int i) {
        return String.format("key-%06d", i);
    }

    private static String value(int i) {
        return "value-" + i + "-".repeat(100);
    }
}
