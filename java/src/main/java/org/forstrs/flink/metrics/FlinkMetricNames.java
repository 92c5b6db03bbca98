package org.forstrs.flink.metrics;

import org.forstrs.flink.config.ForStMetricOptions;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * Flink's ForSt native metrics that the engine has an equivalent for: each {@code
 * state.backend.forst.metrics.<key>} maps to the gauges Flink's ForSt registers for it (Flink's
 * names: {@code rocksdb.<property>} for properties, {@code rocksdb.<ticker in lower case>} for
 * statistics) and the engine statistic each reads. Keys not here have no equivalent and are
 * accepted without effect ({@code NoEffectOptions} logs them).
 */
public final class FlinkMetricNames {

    /** A gauge: its name in the metric group and the engine statistic it shows. */
    record Gauge(String name, String stat) {}

    private static final String LEVELS = "num-files-at-level";

    private static final int NUM_LEVELS = 7;

    /** Key (without the prefix) to gauges, in the order of Flink's options. */
    private static final Map<String, List<Gauge>> BY_KEY = byKey();

    /**
     * The counters of Flink's ForSt's file cache ({@code FileBasedCache}, registered whenever its
     * cache is on, whatever the metric keys): name → the engine statistic of our disk cache.
     */
    static final Map<String, String> FILE_CACHE_COUNTERS =
            Map.of(
                    "forst.fileCache.hit", "disk-cache-hits",
                    "forst.fileCache.miss", "disk-cache-misses",
                    "forst.fileCache.lru.loadback", "disk-cache-downloads",
                    "forst.fileCache.lru.evict", "disk-cache-evictions");

    /** The gauge of Flink's ForSt's file cache, as {@link #FILE_CACHE_COUNTERS}. */
    static final Gauge FILE_CACHE_USED_BYTES =
            new Gauge("forst.fileCache.usedBytes", "disk-cache-used-bytes");

    private FlinkMetricNames() {}

    private static Map<String, List<Gauge>> byKey() {
        Map<String, List<Gauge>> m = new LinkedHashMap<>();
        property(m, "num-immutable-mem-table", "frozen-memtables");
        property(m, "mem-table-flush-pending", "flush-pending");
        property(m, "compaction-pending", "compaction-pending");
        property(m, "background-errors", "background-errors");
        property(m, "cur-size-active-mem-table", "active-memtable-bytes");
        property(m, "cur-size-all-mem-tables", "memtable-bytes");
        property(m, "size-all-mem-tables", "memtable-bytes");
        property(m, "num-entries-active-mem-table", "active-memtable-entries");
        property(m, "num-entries-imm-mem-tables", "frozen-memtable-entries");
        property(m, "estimate-num-keys", "estimated-keys");
        property(m, "estimate-table-readers-mem", "table-reader-bytes");
        property(m, "estimate-live-data-size", "live-sst-bytes");
        property(m, "total-sst-files-size", "live-sst-bytes");
        property(m, "live-sst-files-size", "live-sst-bytes");
        property(m, "estimate-pending-compaction-bytes", "pending-compaction-bytes");
        property(m, "is-write-stopped", "write-stopped");
        property(m, "num-running-compactions", "running-compactions");
        property(m, "block-cache-capacity", "block-cache-capacity-bytes");
        property(m, "block-cache-usage", "block-cache-usage-bytes");
        property(m, "block-cache-pinned-usage", "iterator-pinned-bytes");
        List<Gauge> levels =
                IntStream.range(0, NUM_LEVELS)
                        .mapToObj(l -> new Gauge("rocksdb." + LEVELS + l, "files-at-level" + l))
                        .toList();
        m.put(LEVELS, levels);
        ticker(m, "block-cache-hit", "block_cache_hit", "block-cache-hits");
        ticker(m, "block-cache-miss", "block_cache_miss", "block-cache-misses");
        ticker(m, "bytes-written", "bytes_written", "user-bytes-written");
        ticker(m, "compaction-read-bytes", "compact_read_bytes", "compaction-bytes-read");
        ticker(m, "compaction-write-bytes", "compact_write_bytes", "compaction-bytes-written");
        ticker(m, "stall-micros", "stall_micros", "stall-micros");
        return m;
    }

    /** Flink's ForSt names a property's gauge {@code rocksdb.<key>}. */
    private static void property(Map<String, List<Gauge>> m, String key, String stat) {
        m.put(key, List.of(new Gauge("rocksdb." + key, stat)));
    }

    /** Flink's ForSt names a ticker's gauge {@code rocksdb.<ticker type in lower case>}. */
    private static void ticker(Map<String, List<Gauge>> m, String key, String ticker, String stat) {
        m.put(key, List.of(new Gauge("rocksdb." + ticker, stat)));
    }

    /** Whether the engine reports the metric of {@code key} (a full key). */
    public static boolean isSupported(String key) {
        return !gauges(key).isEmpty();
    }

    /** The gauges {@code key} (a full key) switches on; empty if the engine has no equivalent. */
    static List<Gauge> gauges(String key) {
        if (!key.startsWith(ForStMetricOptions.PREFIX)) {
            return List.of();
        }
        return BY_KEY.getOrDefault(key.substring(ForStMetricOptions.PREFIX.length()), List.of());
    }
}
