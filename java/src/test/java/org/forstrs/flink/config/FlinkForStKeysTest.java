package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.state.forst.ForStStateBackend;

import org.forstrs.flink.ForStStateBackendFactory;
import org.forstrs.flink.metrics.FlinkMetricNames;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every key of Flink 2.3's ForSt (read by reflection from {@code flink-statebackend-forst}) is
 * accepted by ForSt-RS with Flink's type, and an invalid value of each typed key fails when the
 * backend is configured, naming the key.
 */
class FlinkForStKeysTest {

    private static final Map<String, ConfigOption<?>> OURS =
            ForStBackendConfig.ALL_OPTIONS.stream()
                    .collect(Collectors.toMap(ConfigOption::key, Function.identity()));

    private static ForStBackendConfig configure(Map<String, String> settings) {
        return new ForStStateBackendFactory()
                .createFromConfig(
                        Configuration.fromMap(settings), FlinkForStKeysTest.class.getClassLoader())
                .getConfig();
    }

    private static Set<String> keys(List<ConfigOption<?>> options) {
        return options.stream().map(ConfigOption::key).collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void flinksClassesDeclareTheKeysWeExpect() throws Exception {
        List<ConfigOption<?>> flink = FlinkForStKeys.flinkOptions();
        // 21 + 26 documented keys of ForStOptions and ForStConfigurableOptions, 39 metric switches
        assertThat(flink).hasSize(86);
        assertThat(keys(flink)).allMatch(k -> k.startsWith(ForStOptions.PREFIX));
    }

    @Test
    void everyFlinkKeyIsOneOfOursWithFlinksType() throws Exception {
        for (ConfigOption<?> flink : FlinkForStKeys.flinkOptions()) {
            ConfigOption<?> ours = OURS.get(flink.key());
            assertThat(ours).as(flink.key()).isNotNull();
            Class<?> flinkType = FlinkForStKeys.valueClass(flink);
            Class<?> ourType = FlinkForStKeys.valueClass(ours);
            if (flinkType.isEnum()) {
                assertThat(ourType.isEnum()).as(flink.key()).isTrue();
                assertThat(constantNames(ourType))
                        .as(flink.key())
                        .isEqualTo(constantNames(flinkType));
            } else {
                assertThat(ourType).as(flink.key()).isEqualTo(flinkType);
            }
            assertThat(FlinkForStKeys.isList(ours))
                    .as(flink.key() + " is a list")
                    .isEqualTo(FlinkForStKeys.isList(flink));
        }
    }

    private static List<String> constantNames(Class<?> enumType) {
        return Arrays.stream(enumType.getEnumConstants()).map(Object::toString).toList();
    }

    @Test
    void everyFlinkKeyIsAppliedOrWithoutEffectNeverBoth() throws Exception {
        String p = ForStOptions.PREFIX;
        // Keys the backend reads itself (ForStBackendConfig, ForStStateBackend).
        Set<String> readByBackend =
                Set.of(
                        p + "primary-dir",
                        p + "local-dir",
                        p + "sync.enforce-local",
                        p + "cache.dir",
                        p + "cache.size-based-limit",
                        p + "cache.reserve-size",
                        p + "memory.managed",
                        p + "memory.fixed-per-slot",
                        p + "memory.fixed-per-tm",
                        p + "memory.write-buffer-ratio",
                        p + "timer-service.factory",
                        p + "timer-service.cache-size",
                        p + "executor.inline-coordinator",
                        p + "executor.inline-write",
                        p + "executor.read-io-parallelism",
                        p + "executor.write-io-parallelism",
                        p + "compaction.style");
        Set<String> mapped = new TreeSet<>(EngineOptionMapping.mappedKeys());
        Set<String> noEffect = new TreeSet<>();
        NoEffectOptions.keys().forEach(noEffect::add);
        // native metrics registered as gauges (org.forstrs.flink.metrics)
        Set<String> metrics =
                ForStMetricOptions.FLINK.stream()
                        .map(ConfigOption::key)
                        .filter(FlinkMetricNames::isSupported)
                        .collect(Collectors.toCollection(TreeSet::new));
        assertThat(metrics)
                .contains(p + "metrics.block-cache-hit", p + "metrics.num-files-at-level");
        assertThat(mapped).doesNotContainAnyElementsOf(noEffect);
        assertThat(readByBackend).doesNotContainAnyElementsOf(noEffect);
        assertThat(readByBackend).doesNotContainAnyElementsOf(mapped);
        assertThat(metrics).doesNotContainAnyElementsOf(noEffect);
        Set<String> all = new TreeSet<>(readByBackend);
        all.addAll(mapped);
        all.addAll(noEffect);
        all.addAll(metrics);
        assertThat(all).isEqualTo(keys(FlinkForStKeys.flinkOptions()));
        // the mapping names engine options the engine has
        assertThat(EngineOptionMapping.engineOptionNames())
                .allMatch(name -> EngineOptions.find(name).isPresent());
    }

    @Test
    void theSettingsSetEveryFlinkKeyToAValidNonDefaultValue(@TempDir Path dir) throws Exception {
        Map<String, String> settings = FlinkForStKeys.nonDefaultSettings(dir);
        List<ConfigOption<?>> flink = FlinkForStKeys.flinkOptions();
        assertThat(new TreeSet<>(settings.keySet())).isEqualTo(keys(flink));
        Configuration config = Configuration.fromMap(settings);
        for (ConfigOption<?> option : flink) {
            Object value = config.get(option);
            assertThat(value).as(option.key()).isNotEqualTo(option.defaultValue());
        }
        // Flink's own ForSt takes the whole configuration (it loads the options factory, checks
        // ranges, paths and memory ratios); it is only configured here, never run.
        Files.createDirectories(dir.resolve("local"));
        assertThatCode(() -> new ForStStateBackend().configure(config, getClass().getClassLoader()))
                .doesNotThrowAnyException();
    }

    @Test
    void everyFlinkKeyIsAccepted(@TempDir Path dir) {
        Map<String, String> settings = FlinkForStKeys.nonDefaultSettings(dir);
        settings.forEach(
                (key, value) ->
                        assertThatCode(() -> configure(Map.of(key, value)))
                                .as(key + ": " + value)
                                .doesNotThrowAnyException());
        ForStBackendConfig all = configure(settings);
        assertThat(all.getPrimaryDir()).isEqualTo("file://" + dir.resolve("primary"));
        assertThat(all.getEngineOptions())
                .containsEntry("memtable-bytes", Long.toString(MemorySize.parse("1mb").getBytes()))
                .containsEntry("max-frozen-memtables", "2")
                .containsEntry("block-size", "8192")
                .containsEntry("block-cache-bytes", Long.toString(16L << 20))
                .containsEntry("target-file-bytes", Long.toString(2L << 20))
                .containsEntry("l1-target-bytes", Long.toString(8L << 20))
                .containsEntry("dynamic-level-sizes", "true")
                .containsEntry("bloom-bits-per-key", "13")
                .containsEntry("compression", "lz4")
                .containsEntry("max-background-compactions", "3");
        assertThat(all.getFixedPerSlot()).isEqualTo(MemorySize.ofMebiBytes(96));
        assertThat(all.getFixedPerTm()).as("fixed-per-slot wins, as in Flink").isNull();
        assertThat(all.getBatchThreads()).as("read + write threads").isEqualTo(4);
    }

    @Test
    void anInvalidValueOfEachTypedKeyFailsNamingTheKey() throws Exception {
        int typed = 0;
        for (ConfigOption<?> option : FlinkForStKeys.flinkOptions()) {
            String invalid = invalidValueOf(FlinkForStKeys.valueClass(option));
            if (invalid == null) {
                continue;
            }
            typed++;
            Configuration config = Configuration.fromMap(Map.of(option.key(), invalid));
            // Flink's own type check rejects the value too, so the test is about the type.
            assertThatThrownBy(() -> config.get(option))
                    .as(option.key())
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> configure(Map.of(option.key(), invalid)))
                    .as(option.key() + ": " + invalid)
                    .isInstanceOf(IllegalConfigurationException.class)
                    .hasMessageContaining("'" + option.key() + "'");
        }
        assertThat(typed).isGreaterThanOrEqualTo(80);
    }

    /** A value Flink cannot parse as {@code type}, or null for strings (any text is a string). */
    private static String invalidValueOf(Class<?> type) {
        if (type == String.class) {
            return null;
        }
        if (type.isEnum()) {
            return "NO_SUCH_VALUE";
        }
        Map<Class<?>, String> invalid = new HashMap<>();
        invalid.put(Integer.class, "three");
        invalid.put(Long.class, "three");
        invalid.put(Double.class, "half");
        invalid.put(Boolean.class, "maybe");
        invalid.put(MemorySize.class, "lots");
        invalid.put(Duration.class, "soon");
        assertThat(invalid).as("a value type this test does not know").containsKey(type);
        return invalid.get(type);
    }

    @Test
    void flinksRangeChecksApply() {
        String p = ForStOptions.PREFIX;
        Map<String, String> outOfRange = new HashMap<>();
        outOfRange.put(p + "thread.num", "0");
        outOfRange.put(p + "log.file-num", "0");
        outOfRange.put(p + "writebuffer.count", "0");
        outOfRange.put(p + "writebuffer.number-to-merge", "-1");
        outOfRange.put(p + "writebuffer.size", "0");
        outOfRange.put(p + "block.blocksize", "0");
        outOfRange.put(p + "block.metadata-blocksize", "0");
        outOfRange.put(p + "block.cache-size", "0");
        outOfRange.put(p + "compaction.level.target-file-size-base", "0");
        outOfRange.put(p + "compaction.level.max-size-level-base", "0");
        outOfRange.put(p + "log.dir", "relative/log");
        outOfRange.put(p + "restore-overlap-fraction-threshold", "1.5");
        outOfRange.put(p + "memory.high-prio-pool-ratio", "1.0");
        outOfRange.put(p + "memory.fixed-per-slot", "0");
        outOfRange.put(p + "executor.read-io-parallelism", "0");
        outOfRange.forEach(
                (key, value) ->
                        assertThatThrownBy(() -> configure(Map.of(key, value)))
                                .as(key + ": " + value)
                                .isInstanceOf(IllegalConfigurationException.class)
                                .hasMessageContaining(key));
        // Flink's check of the two memory ratios together: 2 * 0.9 / 2.1 + 0.2 >= 1
        assertThatThrownBy(
                        () ->
                                configure(
                                        Map.of(
                                                p + "memory.write-buffer-ratio", "0.9",
                                                p + "memory.high-prio-pool-ratio", "0.2")))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContaining(p + "memory.write-buffer-ratio")
                .hasMessageContaining(p + "memory.high-prio-pool-ratio");
        // Values below an engine minimum are raised to it, as RocksDB does with Flink's values.
        assertThat(configure(Map.of(p + "block.blocksize", "16b")).getEngineOptions())
                .containsEntry("block-size", "64");
        assertThat(configure(Map.of(p + "writebuffer.count", "1")).getEngineOptions())
                .containsEntry("max-frozen-memtables", "1");
    }
}
