package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;

import java.util.List;
import java.util.stream.Stream;

/**
 * The keys of Flink 2.3's {@code org.apache.flink.state.forst.ForStNativeMetricOptions} (switches
 * of the native metrics), all boolean, plus ours. Each key switched on registers its gauges in the
 * operator's metric group ({@code org.forstrs.flink.metrics}); those the engine has no equivalent
 * for are accepted without effect ({@code NoEffectOptions}).
 */
public final class ForStMetricOptions {

    /** Prefix of every key of this class. */
    public static final String PREFIX = ForStOptions.PREFIX + "metrics.";

    /** The part of each key after {@link #PREFIX}, as Flink names them. */
    private static final List<String> NAMES =
            List.of(
                    "num-immutable-mem-table",
                    "mem-table-flush-pending",
                    "compaction-pending",
                    "background-errors",
                    "cur-size-active-mem-table",
                    "cur-size-all-mem-tables",
                    "size-all-mem-tables",
                    "num-entries-active-mem-table",
                    "num-entries-imm-mem-tables",
                    "num-deletes-active-mem-table",
                    "num-deletes-imm-mem-tables",
                    "estimate-num-keys",
                    "estimate-table-readers-mem",
                    "num-snapshots",
                    "num-live-versions",
                    "estimate-live-data-size",
                    "total-sst-files-size",
                    "live-sst-files-size",
                    "estimate-pending-compaction-bytes",
                    "num-running-compactions",
                    "num-running-flushes",
                    "actual-delayed-write-rate",
                    "is-write-stopped",
                    "block-cache-capacity",
                    "block-cache-usage",
                    "block-cache-pinned-usage",
                    "column-family-as-variable",
                    "num-files-at-level",
                    "block-cache-hit",
                    "block-cache-miss",
                    "bloom-filter-useful",
                    "bloom-filter-full-positive",
                    "bloom-filter-full-true-positive",
                    "bytes-read",
                    "iter-bytes-read",
                    "bytes-written",
                    "compaction-read-bytes",
                    "compaction-write-bytes",
                    "stall-micros");

    /** Flink's keys. */
    public static final List<ConfigOption<Boolean>> FLINK =
            NAMES.stream()
                    .map(
                            name ->
                                    ConfigOptions.key(PREFIX + name)
                                            .booleanType()
                                            .defaultValue(false)
                                            .withDescription(
                                                    "A native metric of Flink's ForSt."))
                    .toList();

    /** Ours: every statistic the engine exports, as gauges named {@code forstrs.<statistic>}. */
    public static final ConfigOption<Boolean> ENGINE_STATS =
            ConfigOptions.key(PREFIX + "engine-stats")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Reports every statistic of the ForSt-RS engine (flushes, compactions,"
                                    + " stalled writers, range deletes, TTL removals, files and"
                                    + " bytes per level, ...) as a gauge forstrs.<name> in the"
                                    + " operator's metric group.");

    /** Every key of this class. */
    static final List<ConfigOption<?>> ALL =
            Stream.concat(FLINK.stream(), Stream.of(ENGINE_STATS))
                    .<ConfigOption<?>>map(option -> option)
                    .toList();

    /** The keys of this class that {@code config} switches on, in this class's order. */
    static List<String> switchedOn(ReadableConfig config) {
        return Stream.concat(FLINK.stream(), Stream.of(ENGINE_STATS))
                .filter(option -> ForStBackendConfig.get(config, option))
                .map(ConfigOption::key)
                .toList();
    }

    private ForStMetricOptions() {}
}
