package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;

import org.forstrs.flink.config.EngineOptions.EngineOption;
import org.forstrs.flink.config.EngineOptions.Type;
import org.forstrs.flink.config.ForStConfigurableOptions.CompressionType;
import org.forstrs.jni.ForStNative;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiFunction;

/**
 * How a configuration becomes engine options: the one place where Flink's ForSt keys map onto
 * engine options ({@link EngineOptions}), then the engine's own keys ({@code
 * state.backend.forst.engine.*}), checked by the engine. A key that is not set leaves the
 * engine's default. Numbers below an engine minimum are raised to it (logged once), as RocksDB
 * sanitizes Flink's values; Flink's own checks ran before.
 */
final class EngineOptionMapping {

    /** An engine option's value and the key it came from (named in errors). */
    record Setting(String value, String sourceKey) {}

    /** The Flink key {@code flinkOption}, when set, gives engine option {@code engineOption}. */
    private record Mapping<T>(
            ConfigOption<T> flinkOption,
            String engineOption,
            BiFunction<T, ReadableConfig, String> convert) {

        void apply(ReadableConfig config, Map<String, Setting> out) {
            config.getOptional(flinkOption)
                    .ifPresent(
                            value -> {
                                String converted = convert.apply(value, config);
                                EngineOption option = EngineOptions.get(engineOption);
                                out.put(
                                        engineOption,
                                        new Setting(
                                                sanitize(option, converted), flinkOption.key()));
                            });
        }

        private String sanitize(EngineOption option, String value) {
            if (option.type() != Type.BYTES && option.type() != Type.COUNT) {
                return value;
            }
            long wanted = Long.parseLong(value);
            long applied = option.clampToMin(wanted);
            if (applied != wanted) {
                LogOnce.info(
                        "{}: {} raised to the engine's minimum {} of '{}'",
                        flinkOption.key(),
                        wanted,
                        applied,
                        option.name());
            }
            return Long.toString(applied);
        }
    }

    /** The engine's only codec; the others of Flink's list run as this one. */
    private static final Set<CompressionType> LZ4 =
            EnumSet.of(CompressionType.LZ4_COMPRESSION, CompressionType.LZ4HC_COMPRESSION);

    private static final Set<CompressionType> NONE =
            EnumSet.of(
                    CompressionType.NO_COMPRESSION, CompressionType.DISABLE_COMPRESSION_OPTION);

    /** RocksDB's bound of bloom bits per key. */
    private static final double MAX_BLOOM_BITS = 100;

    /** Flink's default of bloom-filter.bits-per-key. */
    private static final double FLINK_BLOOM_BITS = 10.0;

    /** In order: a later mapping to the same engine option wins (use-bloom-filter: false). */
    private static final List<Mapping<?>> MAPPINGS =
            List.of(
                    new Mapping<>(
                            ForStConfigurableOptions.WRITE_BUFFER_SIZE,
                            "memtable-bytes",
                            (size, c) -> Long.toString(size.getBytes())),
                    new Mapping<>(
                            ForStConfigurableOptions.MAX_WRITE_BUFFER_NUMBER,
                            "max-frozen-memtables",
                            (count, c) -> Long.toString(count - 1L)),
                    new Mapping<>(
                            ForStConfigurableOptions.MAX_BACKGROUND_THREADS,
                            "max-background-compactions",
                            // RocksDB's max background jobs: one of them flushes.
                            (jobs, c) -> Long.toString(Math.max(1, jobs - 1L))),
                    new Mapping<>(
                            ForStConfigurableOptions.BLOCK_SIZE,
                            "block-size",
                            (size, c) -> Long.toString(size.getBytes())),
                    new Mapping<>(
                            ForStConfigurableOptions.BLOCK_CACHE_SIZE,
                            "block-cache-bytes",
                            (size, c) -> Long.toString(size.getBytes())),
                    new Mapping<>(
                            ForStConfigurableOptions.TARGET_FILE_SIZE_BASE,
                            "target-file-bytes",
                            (size, c) -> Long.toString(size.getBytes())),
                    new Mapping<>(
                            ForStConfigurableOptions.MAX_SIZE_LEVEL_BASE,
                            "l1-target-bytes",
                            (size, c) -> Long.toString(size.getBytes())),
                    new Mapping<>(
                            ForStConfigurableOptions.USE_DYNAMIC_LEVEL_SIZE,
                            "dynamic-level-sizes",
                            (dynamic, c) -> Boolean.toString(dynamic)),
                    new Mapping<>(
                            ForStConfigurableOptions.BLOOM_FILTER_BITS_PER_KEY,
                            "bloom-bits-per-key",
                            (bits, c) -> bloomBits(bits)),
                    new Mapping<>(
                            ForStConfigurableOptions.USE_BLOOM_FILTER,
                            "bloom-bits-per-key",
                            (use, c) ->
                                    use
                                            ? bloomBits(
                                                    c.getOptional(
                                                                    ForStConfigurableOptions
                                                                            .BLOOM_FILTER_BITS_PER_KEY)
                                                            .orElse(FLINK_BLOOM_BITS))
                                            : "0"),
                    new Mapping<>(
                            ForStConfigurableOptions.COMPRESSION_PER_LEVEL,
                            "compression",
                            (levels, c) -> codec(levels)));

    private EngineOptionMapping() {}

    /**
     * The engine options of {@code config}: Flink's keys mapped by {@link EngineOptionMapping},
     * then {@code state.backend.forst.engine.*} (which win), checked by the engine as it would
     * open a DB with them.
     */
    static Map<String, String> engineOptions(ReadableConfig config) {
        Map<String, Setting> settings = engineSettings(config);
        for (Map.Entry<String, String> e : new TreeMap<>(config.toMap()).entrySet()) {
            if (e.getKey().startsWith(EngineOptions.KEY_PREFIX)) {
                EngineOption option =
                        EngineOptions.get(e.getKey().substring(EngineOptions.KEY_PREFIX.length()));
                settings.put(
                        option.name(),
                        new Setting(option.parse(e.getKey(), e.getValue()), e.getKey()));
            }
        }
        Map<String, String> engine = new LinkedHashMap<>();
        settings.forEach((name, setting) -> engine.put(name, setting.value()));
        if (engine.isEmpty()) {
            return engine;
        }
        try {
            ForStNative.checkOptions(pairs(engine));
        } catch (IllegalArgumentException e) {
            // The engine's message names the engine options at fault; name their keys.
            List<String> keys = new ArrayList<>();
            settings.forEach(
                    (name, setting) -> {
                        if (e.getMessage().contains("'" + name + "'")) {
                            keys.add("'" + setting.sourceKey() + "'");
                        }
                    });
            if (keys.isEmpty()) {
                settings.values().forEach(setting -> keys.add("'" + setting.sourceKey() + "'"));
            }
            throw new IllegalConfigurationException(
                    "Invalid value for " + String.join(" / ", keys) + ": " + e.getMessage(), e);
        }
        return engine;
    }

    private static String[] pairs(Map<String, String> options) {
        List<String> out = new ArrayList<>();
        options.forEach(
                (k, v) -> {
                    out.add(k);
                    out.add(v);
                });
        return out.toArray(new String[0]);
    }

    /** The engine options the Flink keys of {@code config} set, by engine option name. */
    private static Map<String, Setting> engineSettings(ReadableConfig config) {
        Map<String, Setting> out = new LinkedHashMap<>();
        for (Mapping<?> mapping : MAPPINGS) {
            mapping.apply(config, out);
        }
        return out;
    }

    /** The Flink keys that set engine options. */
    static List<String> mappedKeys() {
        return MAPPINGS.stream().map(m -> m.flinkOption().key()).distinct().toList();
    }

    /** The engine option names the mappings use. */
    static List<String> engineOptionNames() {
        return MAPPINGS.stream().map(Mapping::engineOption).distinct().toList();
    }

    private static String bloomBits(double bits) {
        return Long.toString(Math.round(Math.max(0, Math.min(bits, MAX_BLOOM_BITS))));
    }

    private static String codec(List<CompressionType> levels) {
        // An empty list leaves the codec to the engine's default, as RocksDB's 'compression'.
        boolean allNone = !levels.isEmpty() && levels.stream().allMatch(NONE::contains);
        String codec = allNone ? "none" : "lz4";
        boolean exact = allNone || levels.stream().allMatch(LZ4::contains);
        if (!exact) {
            LogOnce.info(
                    "{}: {} runs as '{}' on every level (the engine has one codec, LZ4, for all"
                            + " levels)",
                    ForStConfigurableOptions.COMPRESSION_PER_LEVEL.key(),
                    levels,
                    codec);
        }
        return codec;
    }
}
