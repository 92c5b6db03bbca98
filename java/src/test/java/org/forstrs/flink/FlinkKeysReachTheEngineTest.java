package org.forstrs.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;

import org.forstrs.jni.ForStNative;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Flink's ForSt keys that carry over to the engine reach it: a DB opened with the backend's
 * native options runs with them, as the engine itself reports ({@link
 * ForStNative#optionsInEffect}).
 */
class FlinkKeysReachTheEngineTest {

    private static final String P = "state.backend.forst.";

    private static ForStStateBackend backend(Map<String, String> settings) {
        return new ForStStateBackendFactory()
                .createFromConfig(
                        Configuration.fromMap(settings),
                        FlinkKeysReachTheEngineTest.class.getClassLoader());
    }

    private static Map<String, String> inEffect(Path dir, String[] options) {
        long db = ForStNative.open(dir.toUri().toString(), options);
        try {
            String[] pairs = ForStNative.optionsInEffect(db);
            Map<String, String> out = new HashMap<>();
            for (int i = 0; i < pairs.length; i += 2) {
                out.put(pairs[i], pairs[i + 1]);
            }
            return out;
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    void appliedKeysSetTheEnginesOptions(@TempDir Path dir) {
        ForStStateBackend backend =
                backend(
                        Map.ofEntries(
                                Map.entry(P + "writebuffer.size", "3mb"),
                                Map.entry(P + "writebuffer.count", "4"),
                                Map.entry(P + "block.blocksize", "8kb"),
                                Map.entry(P + "block.cache-size", "12mb"),
                                Map.entry(P + "compaction.level.target-file-size-base", "2mb"),
                                Map.entry(P + "compaction.level.max-size-level-base", "20mb"),
                                Map.entry(P + "compaction.level.use-dynamic-size", "true"),
                                Map.entry(P + "use-bloom-filter", "false"),
                                Map.entry(P + "compression.per.level", "NO_COMPRESSION"),
                                Map.entry(P + "thread.num", "3"),
                                Map.entry(P + "engine.l0-compaction-trigger", "6")));
        Map<String, String> options =
                inEffect(dir, backend.nativeOptions(new long[] {0, 0}, dir.toFile()));
        assertThat(options)
                .containsEntry("memtable-bytes", Long.toString(3L << 20))
                .containsEntry("max-frozen-memtables", "3")
                .containsEntry("block-size", "8192")
                .containsEntry("block-cache-bytes", Long.toString(12L << 20))
                .containsEntry("target-file-bytes", Long.toString(2L << 20))
                .containsEntry("l1-target-bytes", Long.toString(20L << 20))
                .containsEntry("dynamic-level-sizes", "true")
                .containsEntry("bloom-bits-per-key", "0")
                .containsEntry("compression", "none")
                .containsEntry("max-background-compactions", "2")
                .containsEntry("l0-compaction-trigger", "6");
    }

    @Test
    void untouchedOptionsKeepTheEnginesDefaults(@TempDir Path dir) {
        Map<String, String> defaults = inEffect(dir.resolve("a"), new String[0]);
        Map<String, String> options =
                inEffect(
                        dir.resolve("b"),
                        backend(Map.of(P + "bloom-filter.bits-per-key", "7.4"))
                                .nativeOptions(new long[] {0, 0}, dir.toFile()));
        assertThat(options.get("bloom-bits-per-key")).isEqualTo("7");
        options.remove("bloom-bits-per-key");
        defaults.remove("bloom-bits-per-key");
        assertThat(options).isEqualTo(defaults);
    }

    @Test
    void aMemoryBudgetSizesTheCacheAndCapsTheMemtable(@TempDir Path dir) {
        ForStStateBackend backend =
                backend(Map.of(P + "writebuffer.size", "3mb", P + "block.cache-size", "12mb"));
        Map<String, String> smallShare =
                inEffect(
                        dir.resolve("a"),
                        backend.nativeOptions(new long[] {1L << 20, 32L << 20}, dir.toFile()));
        assertThat(smallShare)
                .containsEntry("memtable-bytes", Long.toString(1L << 20))
                .containsEntry("block-cache-bytes", Long.toString(32L << 20))
                .containsEntry(
                        "max-frozen-memtables", Integer.toString(ForStStateBackend.MEMTABLES - 1));
        Map<String, String> largeShare =
                inEffect(
                        dir.resolve("b"),
                        backend.nativeOptions(new long[] {8L << 20, 32L << 20}, dir.toFile()));
        assertThat(largeShare).containsEntry("memtable-bytes", Long.toString(3L << 20));
    }

    @Test
    void aBudgetSplitsIntoMemtablesAndCacheUnlessMemtablesAreChargedToIt() {
        long budget = 64L << 20;
        assertThat(backend(Map.of(P + "memory.write-buffer-ratio", "0.5")).split(budget))
                .containsExactly(16L << 20, 32L << 20);
        assertThat(
                        backend(
                                        Map.of(
                                                P + "memory.write-buffer-ratio", "0.5",
                                                P + "engine.memtables-charged-to-cache", "true"))
                                .split(budget))
                .containsExactly(16L << 20, 64L << 20);
    }

    @Test
    void aRemoteDbWritesFlinksLargerFilesWithMoreCompactionsUnlessConfigured(@TempDir Path dir) {
        Map<String, String> remote =
                inEffect(
                        dir.resolve("a"),
                        backend(Map.of())
                                .nativeOptions(new long[] {0, 0}, dir.toFile(), "s3://b/db"));
        assertThat(remote)
                .containsEntry(
                        "target-file-bytes",
                        Long.toString(ForStStateBackend.REMOTE_TARGET_FILE_BYTES))
                .containsEntry(
                        "max-background-compactions",
                        Integer.toString(ForStStateBackend.REMOTE_COMPACTIONS))
                .containsEntry("l1-target-bytes", Long.toString(256L << 20));
        Map<String, String> configured =
                inEffect(
                        dir.resolve("b"),
                        backend(
                                        Map.of(
                                                P + "compaction.level.target-file-size-base",
                                                "2mb",
                                                P + "thread.num",
                                                "2"))
                                .nativeOptions(new long[] {0, 0}, dir.toFile(), "s3://b/db"));
        assertThat(configured)
                .containsEntry("target-file-bytes", Long.toString(2L << 20))
                .containsEntry("max-background-compactions", "1");
        Map<String, String> defaults = inEffect(dir.resolve("c"), new String[0]);
        Map<String, String> local =
                inEffect(
                        dir.resolve("d"),
                        backend(Map.of())
                                .nativeOptions(
                                        new long[] {0, 0}, dir.toFile(), dir.toUri().toString()));
        assertThat(local).isEqualTo(defaults);
        assertThat(ForStStateBackend.isRemote("/tmp/db")).isFalse();
        assertThat(ForStStateBackend.isRemote("hdfs://nn/db")).isTrue();
    }

    /** Entry files of the disk cache in {@code dir} (none if it does not exist). */
    private static List<Path> cacheEntries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> f.toString().endsWith(".entry")).toList();
        }
    }

    /** Opens a DB at {@code dir} with {@code options}, writes a key and flushes it to an SST. */
    private static void writeOneFile(Path dir, String[] options) {
        long db = ForStNative.open(dir.toUri().toString(), options);
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            ByteBuffer key = ByteBuffer.allocateDirect(3).put(new byte[] {1, 2, 3});
            ByteBuffer value = ByteBuffer.allocateDirect(2).put(new byte[] {4, 5});
            ForStNative.put(db, cf, key, 0, 3, value, 0, 2);
            ForStNative.flush(db);
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    void theCacheKeysPutADiskCacheUnderTheDb(@TempDir Path dir) throws IOException {
        Path cache = dir.resolve("cache");
        ForStStateBackend backend =
                backend(
                        Map.of(
                                P + "cache.dir", cache.toString(),
                                P + "cache.size-based-limit", "64mb"));
        writeOneFile(dir.resolve("db"), backend.nativeOptions(new long[] {0, 0}, dir.toFile()));
        assertThat(cacheEntries(cache)).hasSize(1);

        // A size limit alone puts the cache under the local directory.
        ForStStateBackend sized = backend(Map.of(P + "cache.size-based-limit", "64mb"));
        Path local = dir.resolve("local");
        writeOneFile(dir.resolve("db2"), sized.nativeOptions(new long[] {0, 0}, local.toFile()));
        assertThat(cacheEntries(local.resolve("forst-rs-cache"))).hasSize(1);
    }

    @Test
    void withoutCacheKeysOrWithoutBoundsThereIsNoCache(@TempDir Path dir) throws IOException {
        Path cache = dir.resolve("cache");
        ForStStateBackend unbounded =
                backend(
                        Map.of(
                                P + "cache.dir", cache.toString(),
                                P + "cache.reserve-size", "0"));
        writeOneFile(dir.resolve("a"), unbounded.nativeOptions(new long[] {0, 0}, dir.toFile()));
        ForStStateBackend plain = backend(Map.of());
        writeOneFile(dir.resolve("b"), plain.nativeOptions(new long[] {0, 0}, dir.toFile()));
        assertThat(cacheEntries(cache)).isEmpty();
        assertThat(cacheEntries(dir.resolve("forst-rs-cache"))).isEmpty();
    }

    @Test
    void aCacheDirMustBeALocalAbsolutePath() {
        for (String bad : List.of("relative/cache", "s3://bucket/cache")) {
            assertThatThrownBy(() -> backend(Map.of(P + "cache.dir", bad)))
                    .isInstanceOf(IllegalConfigurationException.class)
                    .hasMessageContaining(P + "cache.dir");
        }
    }
}
