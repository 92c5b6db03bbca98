package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The keys of Flink 2.3's built-in ForSt, read by reflection from its option classes in {@code
 * flink-statebackend-forst} (only those classes are touched: the jar's backend factory has the
 * name ours ships), and a setting of every one of them to a valid value other than Flink's
 * default.
 */
public final class FlinkForStKeys {

    /** Flink's classes that declare {@code state.backend.forst.*} keys. */
    static final List<String> FLINK_OPTION_CLASSES =
            List.of(
                    "org.apache.flink.state.forst.ForStOptions",
                    "org.apache.flink.state.forst.ForStConfigurableOptions",
                    "org.apache.flink.state.forst.ForStNativeMetricOptions");

    private FlinkForStKeys() {}

    /** Every public static {@code ConfigOption} of Flink's option classes. */
    static List<ConfigOption<?>> flinkOptions() throws ReflectiveOperationException {
        List<ConfigOption<?>> options = new ArrayList<>();
        for (String className : FLINK_OPTION_CLASSES) {
            for (Field field : Class.forName(className).getFields()) {
                if (Modifier.isStatic(field.getModifiers())
                        && ConfigOption.class.isAssignableFrom(field.getType())) {
                    options.add((ConfigOption<?>) field.get(null));
                }
            }
        }
        return options;
    }

    /** The value class of an option (for a list, of its elements); Flink keeps it package-private. */
    static Class<?> valueClass(ConfigOption<?> option) throws ReflectiveOperationException {
        Method getClazz = ConfigOption.class.getDeclaredMethod("getClazz");
        getClazz.setAccessible(true);
        return (Class<?>) getClazz.invoke(option);
    }

    /** Whether an option's values are lists; Flink keeps it package-private. */
    static boolean isList(ConfigOption<?> option) throws ReflectiveOperationException {
        Method isList = ConfigOption.class.getDeclaredMethod("isList");
        isList.setAccessible(true);
        return (boolean) isList.invoke(option);
    }

    /**
     * Every key of Flink's ForSt set to a valid value that is not Flink's default, under {@code
     * dir} where the value is a directory.
     */
    public static Map<String, String> nonDefaultSettings(Path dir) {
        String p = "state.backend.forst.";
        Map<String, String> s = new LinkedHashMap<>();
        // ForStOptions
        s.put(p + "local-dir", dir.resolve("local").toString());
        s.put(p + "primary-dir", dir.resolve("primary").toUri().toString());
        s.put(p + "sync.enforce-local", "false");
        s.put(p + "cache.dir", dir.resolve("cache").toString());
        s.put(p + "cache.size-based-limit", "64mb");
        s.put(p + "cache.reserve-size", "128mb");
        s.put(p + "cache.lru.access-before-promote", "4");
        s.put(p + "cache.lru.promote-limit", "2");
        s.put(p + "options-factory", PassThroughForStOptionsFactory.class.getName());
        s.put(p + "memory.managed", "false");
        s.put(p + "memory.fixed-per-slot", "96mb");
        s.put(p + "memory.fixed-per-tm", "256mb");
        s.put(p + "memory.write-buffer-ratio", "0.4");
        s.put(p + "memory.high-prio-pool-ratio", "0.2");
        s.put(p + "memory.partitioned-index-filters", "false");
        s.put(p + "timer-service.factory", "HEAP");
        s.put(p + "timer-service.cache-size", "64");
        s.put(p + "executor.inline-coordinator", "true");
        s.put(p + "executor.inline-write", "false");
        s.put(p + "executor.read-io-parallelism", "2");
        s.put(p + "executor.write-io-parallelism", "2");
        // ForStConfigurableOptions
        s.put(p + "thread.num", "4");
        s.put(p + "files.open", "1000");
        s.put(p + "log.max-file-size", "10mb");
        s.put(p + "log.file-num", "2");
        s.put(p + "log.dir", dir.resolve("log").toString());
        s.put(p + "log.level", "WARN_LEVEL");
        s.put(p + "compaction.style", "UNIVERSAL");
        s.put(p + "compaction.level.use-dynamic-size", "true");
        s.put(p + "compression.per.level", "NO_COMPRESSION;NO_COMPRESSION;LZ4_COMPRESSION");
        s.put(p + "compaction.level.target-file-size-base", "2mb");
        s.put(p + "compaction.level.max-size-level-base", "8mb");
        s.put(p + "writebuffer.size", "1mb");
        s.put(p + "writebuffer.count", "3");
        s.put(p + "writebuffer.number-to-merge", "2");
        s.put(p + "block.blocksize", "8kb");
        s.put(p + "block.metadata-blocksize", "8kb");
        s.put(p + "block.cache-size", "16mb");
        s.put(p + "write-batch-size", "1mb");
        s.put(p + "use-bloom-filter", "true");
        s.put(p + "bloom-filter.bits-per-key", "12.5");
        s.put(p + "bloom-filter.block-based-mode", "true");
        s.put(p + "compaction.filter.query-time-after-num-entries", "500");
        s.put(p + "compaction.filter.periodic-compaction-time", "1 d");
        s.put(p + "restore-overlap-fraction-threshold", "0.5");
        s.put(p + "use-ingest-db-restore-mode", "true");
        s.put(p + "rescaling.use-delete-files-in-range", "true");
        // ForStNativeMetricOptions: all off by default
        for (ConfigOption<?> metric : ForStMetricOptions.FLINK) {
            s.put(metric.key(), "true");
        }
        return s;
    }
}
