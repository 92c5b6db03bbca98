package org.forstrs.fs;

import org.forstrs.jni.ForStNative;
import org.forstrs.jni.TestBatch;

import org.apache.flink.core.fs.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The file-system proxy on Flink's local file system ({@code fs.force-proxy}: file:// URLs go
 * through Flink's FileSystem instead of the native local storage).
 */
class LocalProxyTest {

    @TempDir java.nio.file.Path dir;

    private String url(String name) {
        return dir.resolve(name).toUri().toString().replaceAll("/$", "");
    }

    @Test
    void engineSuiteThroughTheProxy() throws Exception {
        EngineBehaviour.run(url("db"), "fs.force-proxy", "true");
    }

    @Test
    void checkpointCopiesAndRestoresThroughTheProxy() throws Exception {
        long streamed =
                EngineBehaviour.checkpointAndRestore(
                        url("db"), url("chk"), url("restored"), "fs.force-proxy", "true");
        // Flink's local file system cannot copy paths itself: the JVM streams the bytes.
        assertThat(streamed).isPositive();
    }

    @Test
    void bridgeReadsIntoDirectBuffersConcurrently() throws Exception {
        FlinkFsBridge bridge = FlinkFsBridge.forUri(url(""));
        assertThat(bridge.fileSystemClass()).contains("LocalFileSystem");
        ProxyTestFiles.checkConcurrentReads(bridge, url("reads/data.bin"), "flink-bytebuffer");
    }

    @Test
    void bridgeListsRenamesAndCopiesWithoutShowingTemporaryFiles() throws Exception {
        FlinkFsBridge bridge = FlinkFsBridge.forUri(url(""));
        ByteBuffer data = TestBatch.direct("hello proxy");
        bridge.put(url("a/b/one"), data, data.capacity(), false);
        assertThatThrownBy(() -> bridge.put(url("a/b/one"), data, data.capacity(), false))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("a/b/one")
                .hasMessageContaining("exists");
        FlinkFsWriter unfinished = bridge.create(url("a/two"));
        unfinished.write(data, data.capacity());

        assertThat(bridge.copy(url("a/b/one"), url("c/copy"))).as("copied by the FS").isFalse();
        bridge.rename(url("a/b/one"), url("a/renamed"));
        FileListing listing = bridge.list(url(""));
        assertThat(listing.paths()).containsExactlyInAnyOrder("a/renamed", "c/copy");
        assertThat(listing.sizes()).containsOnly(11L);
        assertThat(Files.readString(dir.resolve("c/copy"))).isEqualTo("hello proxy");
        assertThatThrownBy(() -> bridge.rename(url("a/b/one"), url("x")))
                .isInstanceOf(java.io.FileNotFoundException.class)
                .hasMessageContaining("a/b/one");
        unfinished.abort();
        assertThat(bridge.list(url("a")).paths()).containsExactly("renamed");
        assertThat(bridge.list(url("nothing-here")).paths()).isEmpty();
    }

    @Test
    void missingFileOfAReopenedDatabaseIsAnIOExceptionNamingIt() throws Exception {
        String url = url("db");
        String[] options = EngineBehaviour.options("fs.force-proxy", "true");
        long db = ForStNative.open(url, options);
        int cf = ForStNative.createColumnFamily(db, "state");
        for (int i = 0; i < 500; i++) {
            EngineBehaviour.put(db, cf, EngineBehaviour.key(i), EngineBehaviour.value(i));
        }
        ForStNative.flush(db);
        ForStNative.close(db);
        List<Path> files = EngineBehaviour.dataFiles(url);
        assertThat(files).isNotEmpty();
        for (Path file : files) {
            Files.delete(java.nio.file.Path.of(file.toUri()));
        }

        assertThatThrownBy(
                        () -> {
                            long reopened = ForStNative.open(url, options);
                            try {
                                int family = ForStNative.createColumnFamily(reopened, "state");
                                EngineBehaviour.get(reopened, family, EngineBehaviour.key(1));
                            } finally {
                                ForStNative.close(reopened);
                            }
                        })
                .isInstanceOf(IOException.class)
                .hasMessageContaining(dir.resolve("db").toString())
                .hasMessageContaining(".sst");
    }

    @Test
    void badOptionValueNamesTheKey() {
        assertThatThrownBy(() -> ForStNative.open(url("db"), new String[] {"fs.force-proxy", "maybe"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fs.force-proxy");
    }
}
