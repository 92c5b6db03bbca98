package org.forstrs.fs;

import java.io.EOFException;
import java.io.FileNotFoundException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Checks of the Java bridge shared by the local and the HDFS tests. */
final class ProxyTestFiles {

    static final int FILE_BYTES = 4 << 20;

    private ProxyTestFiles() {}

    /** Byte {@code i} of the test file: depends on the offset, so misplaced reads are caught. */
    static byte pattern(long i) {
        return (byte) ((i * 2654435761L) >>> 13 ^ (i >>> 11));
    }

    /**
     * Writes a file through the bridge, checks which read path its streams use, reads random
     * ranges from 16 threads at once (more threads than the pool has streams per file would be
     * needed to queue), and checks the errors of a read past the end and of a missing file.
     */
    static void checkConcurrentReads(FlinkFsBridge bridge, String path, String expectedKind)
            throws Exception {
        ByteBuffer data = ByteBuffer.allocateDirect(FILE_BYTES);
        for (int i = 0; i < FILE_BYTES; i++) {
            data.put(i, pattern(i));
        }
        bridge.put(path, data, FILE_BYTES, true);
        assertThat(bridge.size(path)).isEqualTo(FILE_BYTES);

        try (FlinkFsReader reader = bridge.openReader(path)) {
            assertThat(reader.readKind()).isEqualTo(expectedKind);
            ExecutorService pool = Executors.newFixedThreadPool(16);
            try {
                List<Future<Integer>> results = new ArrayList<>();
                for (int t = 0; t < 16; t++) {
                    long seed = t;
                    results.add(pool.submit(() -> readRandomRanges(reader, seed)));
                }
                for (Future<Integer> result : results) {
                    assertThat(result.get()).isEqualTo(100);
                }
            } finally {
                pool.shutdownNow();
            }
            ByteBuffer tail = ByteBuffer.allocateDirect(100);
            assertThatThrownBy(() -> reader.readFully(FILE_BYTES - 50, tail, 100))
                    .isInstanceOf(EOFException.class)
                    .hasMessageContaining(path.substring(path.lastIndexOf('/')));
            // The reader survives the failed read.
            reader.readFully(0, tail, 100);
            assertThat(tail.get(99)).isEqualTo(pattern(99));
        }
        String missing = path + ".missing";
        assertThat(bridge.size(missing)).isEqualTo(-1);
        try (FlinkFsReader reader = bridge.openReader(missing)) {
            assertThatThrownBy(() -> reader.readFully(0, ByteBuffer.allocateDirect(8), 8))
                    .isInstanceOf(FileNotFoundException.class)
                    .hasMessageContaining("data.bin.missing");
        }
    }

    private static int readRandomRanges(FlinkFsReader reader, long seed) throws Exception {
        Random random = new Random(seed);
        ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
        int checked = 0;
        for (int i = 0; i < 100; i++) {
            int length = 1 + random.nextInt(buffer.capacity());
            long position = random.nextInt(FILE_BYTES - length);
            reader.readFully(position, buffer, length);
            for (int j = 0; j < length; j += 97) {
                assertThat(buffer.get(j)).isEqualTo(pattern(position + j));
            }
            assertThat(buffer.get(length - 1)).isEqualTo(pattern(position + length - 1));
            checked++;
        }
        return checked;
    }
}
