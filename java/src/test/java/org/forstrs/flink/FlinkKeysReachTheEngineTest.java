package org.forstrs.flink;

import org.apache.flink.configuration.Configuration;

import org.forstrs.jni.ForStNative;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

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
                        Map.of(
                                P + "writebuffer.size", "3mb",
                                P + "writebuffer.count", "4",
                                P + "block.blocksize", "8kb",
                                P + "block.cache-size", "12mb",
                                P + "compaction.level.target-file-size-base", "2mb",
                                P + "compaction.level.max-size-level-base", "20mb",
                                P + "use-bloom-filter", "false",
                                P + "compression.per.level", "NO_COMPRESSION",
                                P + "engine.l0-compaction-trigger", "6"));
        Map<String, String> options = inEffect(dir, backend.nativeOptions(new long[] {0, 0}));
        assertThat(options)
                .containsEntry("memtable-bytes", Long.toString(3L << 20))
                .containsEntry("max-frozen-memtables", "3")
                .containsEntry("block-size", "8192")
                .containsEntry("block-cache-bytes", Long.toString(12L << 20))
                .containsEntry("target-file-bytes", Long.toString(2L << 20))
                .containsEntry("l1-target-bytes", Long.toString(20L << 20))
                .containsEntry("bloom-bits-per-key", "0")
                .containsEntry("compression", "none")
                .containsEntry("l0-compaction-trigger", "6");
    }

    @Test
    void untouchedOptionsKeepTheEnginesDefaults(@TempDir Path dir) {
        Map<String, String> defaults = inEffect(dir.resolve("a"), new String[0]);
        Map<String, String> options =
                inEffect(
                        dir.resolve("b"),
                        backend(Map.of(P + "bloom-filter.bits-per-key", "7.4"))
                                .nativeOptions(new long[] {0, 0}));
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
                inEffect(dir.resolve("a"), backend.nativeOptions(new long[] {1L << 20, 32L << 20}));
        assertThat(smallShare)
                .containsEntry("memtable-bytes", Long.toString(1L << 20))
                .containsEntry("block-cache-bytes", Long.toString(32L << 20))
                .containsEntry(
                        "max-frozen-memtables", Integer.toString(ForStStateBackend.MEMTABLES - 1));
        Map<String, String> largeShare =
                inEffect(dir.resolve("b"), backend.nativeOptions(new long[] {8L << 20, 32L << 20}));
        assertThat(largeShare).containsEntry("memtable-bytes", Long.toString(3L << 20));
    }
}
