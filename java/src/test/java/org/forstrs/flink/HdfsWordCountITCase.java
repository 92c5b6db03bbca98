package org.forstrs.flink;

import org.forstrs.fs.HdfsCluster;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The keyed word count of {@link AsyncWordCountITCase} on a MiniCluster with {@code
 * state.backend.forst.primary-dir} on a real HDFS (MiniDFSCluster): state files are written to
 * HDFS through the file-system proxy and the results are exact.
 */
class HdfsWordCountITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @TempDir static java.nio.file.Path hdfsDir;

    private static HdfsCluster hdfs;

    @BeforeAll
    static void startHdfs() throws IOException {
        hdfs = HdfsCluster.start(hdfsDir, 1);
    }

    @AfterAll
    static void stopHdfs() {
        if (hdfs != null) {
            hdfs.close();
        }
    }

    @Test
    @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
    void wordCountWithPrimaryDirOnHdfsIsExact() throws Exception {
        long records = 300_000;
        Map<String, Long> expected = new HashMap<>();
        for (long i = 0; i < records; i++) {
            expected.merge(AsyncWordCountITCase.word(i), 1L, Long::sum);
        }

        String primary = hdfs.uri("/flink-state");
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", primary);
        // small memtables, so that state files are flushed to HDFS while the job runs
        config.setString("state.backend.forst.memory.fixed-per-slot", "8mb");

        Map<String, Long> maxCount = new HashMap<>();
        Map<String, Long> emitted = new HashMap<>();
        Set<String> filesSeen = new HashSet<>();
        long total = 0;
        try (CloseableIterator<Tuple2<String, Long>> results =
                AsyncWordCountITCase.wordCount(AsyncWordCountITCase.environment(config), records)
                        .executeAndCollect("word count on hdfs")) {
            while (results.hasNext()) {
                Tuple2<String, Long> r = results.next();
                maxCount.merge(r.f0, r.f1, Math::max);
                emitted.merge(r.f0, 1L, Long::sum);
                if (++total % 20_000 == 0) {
                    collectStateFiles(new Path(primary), filesSeen);
                }
            }
        }

        assertThat(total).isEqualTo(records);
        assertThat(maxCount).isEqualTo(expected);
        assertThat(emitted).isEqualTo(expected);
        assertThat(filesSeen)
                .as("state files written to HDFS during the job")
                .isNotEmpty()
                .allSatisfy(f -> assertThat(f).startsWith("/flink-state/"));
    }

    /** Adds the .sst files under {@code dir} on HDFS (paths without scheme and authority). */
    private static void collectStateFiles(Path dir, Set<String> out) throws IOException {
        FileSystem fs = FileSystem.get(URI.create(dir.toString()));
        if (!fs.exists(dir)) {
            return;
        }
        FileStatus[] children;
        try {
            children = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            return; // removed meanwhile (compaction, end of the job)
        }
        for (FileStatus status : children) {
            if (status.isDir()) {
                collectStateFiles(status.getPath(), out);
            } else if (status.getPath().getName().endsWith(".sst")) {
                out.add(status.getPath().toUri().getPath());
            }
        }
    }
}
