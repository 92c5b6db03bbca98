package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;

import org.forstrs.flink.metrics.FlinkMetricNames;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Flink's ForSt keys that ForSt-RS accepts (with Flink's type and checks) but that have no
 * effect on it, each with the reason. Setting one logs it once per JVM.
 */
final class NoEffectOptions {

    private static final String LRU_ONLY =
            "the disk cache evicts the least recently used files, without Flink's hot/cold"
                    + " promotion";
    private static final String NO_INFO_LOG = "the engine writes no info log of its own";
    private static final String NO_METRIC = "the engine does not track this metric";

    /** Key to reason, in the order of Flink's classes. */
    private static final Map<String, String> REASONS = reasons();

    private NoEffectOptions() {}

    private static Map<String, String> reasons() {
        Map<String, String> r = new LinkedHashMap<>();
        r.put(ForStOptions.CACHE_LRU_ACCESS_BEFORE_PROMOTION.key(), LRU_ONLY);
        r.put(ForStOptions.CACHE_LRU_PROMOTION_LIMIT.key(), LRU_ONLY);
        r.put(
                ForStOptions.OPTIONS_FACTORY.key(),
                "it configures the C++ ForSt; engine options are state.backend.forst.engine.*");
        r.put(
                ForStOptions.HIGH_PRIORITY_POOL_RATIO.key(),
                "the block cache has no priority pools: index and filter partitions share it with"
                        + " data blocks");
        r.put(
                ForStOptions.USE_PARTITIONED_INDEX_FILTERS.key(),
                "index and filters are always partitioned and cached in the block cache");
        r.put(
                ForStConfigurableOptions.MAX_OPEN_FILES.key(),
                "tables open on first read and stay open while their file is live");
        r.put(ForStConfigurableOptions.LOG_MAX_FILE_SIZE.key(), NO_INFO_LOG);
        r.put(ForStConfigurableOptions.LOG_FILE_NUM.key(), NO_INFO_LOG);
        r.put(ForStConfigurableOptions.LOG_DIR.key(), NO_INFO_LOG);
        r.put(ForStConfigurableOptions.LOG_LEVEL.key(), NO_INFO_LOG);
        r.put(
                ForStConfigurableOptions.MIN_WRITE_BUFFER_NUMBER_TO_MERGE.key(),
                "each memtable is flushed on its own");
        r.put(
                ForStConfigurableOptions.METADATA_BLOCK_SIZE.key(),
                "index and filter partitions are about 4 KiB");
        r.put(
                ForStConfigurableOptions.WRITE_BATCH_SIZE.key(),
                "each state batch is one atomic write batch");
        r.put(
                ForStConfigurableOptions.BLOOM_FILTER_BLOCK_BASED_MODE.key(),
                "each file has one full filter");
        r.put(
                ForStConfigurableOptions.COMPACT_FILTER_QUERY_TIME_AFTER_NUM_ENTRIES.key(),
                "compaction drops expired TTL entries with each state's own StateTtlConfig"
                        + " cleanup strategy (Flink's default 1000 where it sets none)");
        r.put(
                ForStConfigurableOptions.COMPACT_FILTER_PERIODIC_COMPACTION_TIME.key(),
                "files are not rewritten for their age yet; expired TTL entries go when an"
                        + " ordinary compaction reaches them");
        r.put(
                ForStConfigurableOptions.RESTORE_OVERLAP_FRACTION_THRESHOLD.key(),
                "a restore links the files of every source, there is no base DB to choose");
        r.put(
                ForStConfigurableOptions.USE_INGEST_DB_RESTORE_MODE.key(),
                "a restore always links files with key-group bounds");
        r.put(
                ForStConfigurableOptions.USE_DELETE_FILES_IN_RANGE_DURING_RESCALING.key(),
                "key-group bounds hide other key groups; compaction drops them");
        for (ConfigOption<Boolean> option : ForStMetricOptions.FLINK) {
            if (option.key().endsWith("column-family-as-variable")) {
                r.put(
                        option.key(),
                        "metrics are per database: all states of a backend share one tree");
            } else if (!FlinkMetricNames.isSupported(option.key())) {
                r.put(option.key(), NO_METRIC);
            }
        }
        return r;
    }

    /** The keys without effect. */
    static Iterable<String> keys() {
        return REASONS.keySet();
    }

    /** Logs, once per JVM, each key of {@code config} that has no effect. */
    static void logSetKeys(ReadableConfig config) {
        Map<String, String> set = config.toMap();
        REASONS.forEach(
                (key, reason) -> {
                    if (set.containsKey(key)) {
                        LogOnce.info(
                                "accepted, has no effect on ForSt-RS: {} ({})", key, reason);
                    }
                });
    }
}
