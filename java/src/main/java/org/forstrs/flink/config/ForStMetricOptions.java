package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;

import java.util.List;

/**
 * The keys of Flink 2.3's {@code org.apache.flink.state.forst.ForStNativeMetricOptions} (switches
 * of the C++ ForSt's native metrics), all boolean. Accepted so that a configuration written for
 * Flink's ForSt works here; the engine reports no native metrics yet, so they have no effect.
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

    /** Every key of this class. */
    static final List<ConfigOption<?>> ALL =
            NAMES.stream()
                    .<ConfigOption<?>>map(
                            name ->
                                    ConfigOptions.key(PREFIX + name)
                                            .booleanType()
                                            .defaultValue(false)
                                            .withDescription(
                                                    "A native metric of Flink's ForSt; no effect."))
                    .toList();

    private ForStMetricOptions() {}
}
