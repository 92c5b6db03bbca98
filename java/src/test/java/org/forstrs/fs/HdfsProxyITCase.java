package org.forstrs.fs;

import org.forstrs.jni.ForStNative;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.security.UserGroupInformation;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine on a real HDFS (MiniDFSCluster in this JVM) through the file-system proxy: the
 * behaviour suite, checkpoints by copy and by hand-over, zero-copy positional reads, and failures (a file deleted under an open reader,
 * a permission error, the datanode stopped mid-read), each an IOException naming the path.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HdfsProxyITCase {

    @TempDir static java.nio.file.Path hdfsDir;

    private static HdfsCluster hdfs;

    @BeforeAll
    static void startHdfs() throws Exception {
        hdfs = HdfsCluster.start(hdfsDir, 1);
        // The DFS client of Flink's hdfs:// file system gives up quickly on missing blocks.
        Configuration flink = new Configuration();
        flink.setString("flink.hadoop.dfs.client.retry.window.base", "10");
        flink.setString("flink.hadoop.dfs.client.max.block.acquire.failures", "1");
        flink.setString("flink.hadoop.dfs.replication", "1");
        FileSystem.initialize(flink, null);
    }

    @AfterAll
    static void stopHdfs() {
        if (hdfs != null) {
            hdfs.close();
        }
        FileSystem.initialize(new Configuration(), null);
    }

    @Test
    @Order(1)
    void engineSuiteOnHdfs() throws Exception {
        String url = hdfs.uri("/engine-suite/db");
        EngineBehaviour.run(url);
        assertThat(EngineBehaviour.dataFiles(url)).isNotEmpty();
    }

    @Test
    @Order(1)
    void checkpointAndRestoreOnHdfs() throws Exception {
        long streamed =
                EngineBehaviour.checkpointAndRestore(
                        hdfs.uri("/checkpoint/db"),
                        hdfs.uri("/checkpoint/chk/shared"),
                        hdfs.uri("/checkpoint/restored"));
        assertThat(streamed).as("HDFS offers no path copy: the JVM streams").isPositive();
    }

    /**
     * Through the proxy, a checkpoint that hands its files over writes one file, the DB's new
     * manifest, and no SST; a restore references the files where they are and writes no SST.
     * Bytes are counted by the file system under the proxy ({@link CountingFileSystem}).
     */
    @Test
    @Order(1)
    void handOverThroughTheProxyWritesOnlyAManifestAndRestoreReadsFilesInPlace() {
        String url = CountingFileSystem.uri(hdfs.uri("/hand-over/db"));
        String restoredUrl = CountingFileSystem.uri(hdfs.uri("/hand-over/restored"));
        Map<String, String> expected = new TreeMap<>();
        long db = ForStNative.open(url, EngineBehaviour.options());
        byte[] manifest;
        String[] names;
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < EngineBehaviour.KEYS; i++) {
                EngineBehaviour.put(db, cf, EngineBehaviour.key(i), EngineBehaviour.value(i));
                expected.put(EngineBehaviour.key(i), EngineBehaviour.value(i));
            }
            long checkpoint = ForStNative.checkpointPrepare(db);
            try {
                manifest = ForStNative.checkpointManifest(checkpoint);
                names = ForStNative.checkpointFileNames(checkpoint);
                assertThat(names).isNotEmpty();
                Map<String, Long> before = CountingFileSystem.bytesWrittenByFile();
                ForStNative.checkpointHandOver(checkpoint, names, 1);
                Map<String, Long> written = new HashMap<>(CountingFileSystem.bytesWrittenByFile());
                before.forEach((file, bytes) -> written.merge(file, -bytes, Long::sum));
                written.values().removeIf(bytes -> bytes == 0);
                assertThat(written)
                        .as("files written by the hand-over")
                        .hasSize(1)
                        .allSatisfy((file, bytes) -> assertThat(file).contains("/MANIFEST-"));
            } finally {
                ForStNative.checkpointRelease(checkpoint);
            }
        } finally {
            ForStNative.close(db);
        }
        String[] uris = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            uris[i] = url + "/" + names[i];
        }
        long restored =
                ForStNative.openRestored(
                        restoredUrl,
                        EngineBehaviour.options(),
                        new byte[][] {manifest},
                        new String[][] {names},
                        new String[][] {uris},
                        new int[] {0, 127},
                        0,
                        127,
                        1);
        try {
            EngineBehaviour.checkAll(
                    restored, ForStNative.createColumnFamily(restored, "state"), expected);
        } finally {
            ForStNative.close(restored);
        }
        String restoredDir = java.net.URI.create(restoredUrl).getPath() + "/";
        assertThat(CountingFileSystem.bytesWrittenByFile().keySet())
                .as("SSTs written into the restored DB")
                .noneMatch(f -> f.startsWith(restoredDir) && f.endsWith(".sst"));
    }

    @Test
    @Order(2)
    void readsFillDirectBuffersThroughHadoopAndRunConcurrently() throws Exception {
        FlinkFsBridge bridge = FlinkFsBridge.forUri(hdfs.uri("/"));
        assertThat(bridge.fileSystemClass()).contains("HadoopFileSystem");
        ProxyTestFiles.checkConcurrentReads(bridge, hdfs.uri("/reads/data.bin"), "hadoop-bytebuffer");
    }

    @Test
    @Order(3)
    void fileDeletedUnderAnOpenReaderIsAnIOExceptionNamingIt() throws Exception {
        String url = hdfs.uri("/deleted/db");
        long db = ForStNative.open(url, EngineBehaviour.options());
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < EngineBehaviour.KEYS; i++) {
                EngineBehaviour.put(db, cf, EngineBehaviour.key(i), EngineBehaviour.value(i));
            }
            ForStNative.flush(db);
            ForStNative.compact(db);
            assertThat(EngineBehaviour.get(db, cf, EngineBehaviour.key(5)))
                    .isEqualTo(EngineBehaviour.value(5));
            // The live file is among these; replaced ones may not be deleted yet (obsolete files
            // go in the background), so delete them all rather than count them.
            List<Path> files = EngineBehaviour.dataFiles(url);
            assertThat(files).isNotEmpty();
            for (Path sst : files) {
                FileSystem.get(sst.toUri()).delete(sst, false);
            }

            // The open reader's streams may serve a read or two until the datanode drops the
            // block (heartbeat 1 s); then reads fail, naming the file, and keep failing cleanly.
            // No deadline: reads that never fail hang the test until the hang guard fails it.
            Exception failure = null;
            for (int i = 0; failure == null; i++) {
                try {
                    EngineBehaviour.get(db, cf, EngineBehaviour.key((i * 37) % EngineBehaviour.KEYS));
                    Thread.sleep(50);
                } catch (Exception e) {
                    failure = e;
                }
            }
            assertThat(failure)
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("/deleted/db")
                    .satisfies(e -> assertNamesOneOf(e, files));
            assertThatThrownBy(() -> EngineBehaviour.get(db, cf, EngineBehaviour.key(1)))
                    .isInstanceOf(IOException.class)
                    .satisfies(e -> assertNamesOneOf(e, files));
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    @Order(4)
    void permissionErrorIsAnIOExceptionNamingThePath() throws Exception {
        DistributedFileSystem dfs = hdfs.cluster().getFileSystem();
        org.apache.hadoop.fs.Path locked = new org.apache.hadoop.fs.Path("/locked");
        dfs.mkdirs(locked);
        dfs.setPermission(locked, new FsPermission((short) 0700));

        // Another user, through another authority of the same namenode (Flink caches file
        // systems by scheme and authority; this one is created as that user).
        String url = "hdfs://localhost:" + hdfs.nameNodePort() + "/locked/db";
        UserGroupInformation intruder = UserGroupInformation.createRemoteUser("intruder");
        PrivilegedExceptionAction<Long> open = () -> ForStNative.open(url, EngineBehaviour.options());
        assertThatThrownBy(() -> intruder.doAs(open))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("/locked")
                .hasMessageContaining("Permission denied");
    }

    @Test
    @Order(5)
    void datanodeStoppedMidReadIsAnIOExceptionNamingTheFile() throws Exception {
        String url = hdfs.uri("/stopped/db");
        long db = ForStNative.open(url, EngineBehaviour.options());
        MiniDFSCluster.DataNodeProperties stopped = null;
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < EngineBehaviour.KEYS; i++) {
                EngineBehaviour.put(db, cf, EngineBehaviour.key(i), EngineBehaviour.value(i));
            }
            ForStNative.flush(db);

            // Readers on four threads; the datanode goes away while they read.
            AtomicInteger reads = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            List<Future<Exception>> readers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                readers.add(
                        pool.submit(
                                () -> {
                                    for (int i = seed; ; i += 7) {
                                        try {
                                            String k = EngineBehaviour.key(i % EngineBehaviour.KEYS);
                                            assertThat(EngineBehaviour.get(db, cf, k))
                                                    .isEqualTo(EngineBehaviour.value(i % EngineBehaviour.KEYS));
                                            reads.incrementAndGet();
                                        } catch (Exception e) {
                                            return e;
                                        }
                                    }
                                }));
            }
            while (reads.get() < 200) {
                Thread.sleep(10);
            }
            stopped = hdfs.cluster().stopDataNode(0);
            for (Future<Exception> reader : readers) {
                assertThat(reader.get())
                        .isInstanceOf(IOException.class)
                        .hasMessageContaining("/stopped/db/")
                        .hasMessageContaining(".sst");
            }
            pool.shutdown();

            // The datanode back: the same database reads again.
            assertThat(hdfs.cluster().restartDataNode(stopped, true)).isTrue();
            stopped = null;
            hdfs.cluster().waitActive();
            // Retries until the datanode serves again (no deadline: the hang guard bounds it);
            // a wrong value fails at once.
            while (true) {
                String value;
                try {
                    value = EngineBehaviour.get(db, cf, EngineBehaviour.key(42));
                } catch (Exception e) { // the datanode is not back yet
                    Thread.sleep(200);
                    continue;
                }
                assertThat(value).isEqualTo(EngineBehaviour.value(42));
                break;
            }
        } finally {
            if (stopped != null) {
                hdfs.cluster().restartDataNode(stopped, true);
            }
            ForStNative.close(db);
        }
    }

    private static void assertNamesOneOf(Throwable failure, List<Path> files) {
        assertThat(files).anyMatch(f -> failure.getMessage().contains(f.getName()));
    }
}
