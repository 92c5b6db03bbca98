package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;

import java.io.File;
import java.util.List;

import static org.forstrs.flink.config.ForStBackendConfig.fail;
import static org.forstrs.flink.config.ForStBackendConfig.get;
import static org.forstrs.flink.config.ForStBackendConfig.getOptional;

/**
 * The checks Flink's ForSt makes of its tuning keys when it is configured ({@code
 * ForStConfigurableOptions#checkArgumentValid} and the backend's own), made here at the same time
 * so that a value Flink rejects is rejected here, naming the key.
 */
final class FlinkRangeChecks {

    /** Flink's keys that must be larger than 0 ({@code ForStConfigurableOptions}). */
    private static final List<ConfigOption<Integer>> POSITIVE_INTS =
            List.of(
                    ForStConfigurableOptions.MAX_BACKGROUND_THREADS,
                    ForStConfigurableOptions.LOG_FILE_NUM,
                    ForStConfigurableOptions.MAX_WRITE_BUFFER_NUMBER,
                    ForStConfigurableOptions.MIN_WRITE_BUFFER_NUMBER_TO_MERGE);

    /** Flink's sizes that must be larger than 0. */
    private static final List<ConfigOption<MemorySize>> POSITIVE_SIZES =
            List.of(
                    ForStConfigurableOptions.TARGET_FILE_SIZE_BASE,
                    ForStConfigurableOptions.MAX_SIZE_LEVEL_BASE,
                    ForStConfigurableOptions.WRITE_BUFFER_SIZE,
                    ForStConfigurableOptions.BLOCK_SIZE,
                    ForStConfigurableOptions.METADATA_BLOCK_SIZE,
                    ForStConfigurableOptions.BLOCK_CACHE_SIZE);

    private FlinkRangeChecks() {}

    /** Flink's checks of its ForSt keys (those Flink makes when it configures its backend). */
    static void check(ReadableConfig config) {
        for (ConfigOption<Integer> option : POSITIVE_INTS) {
            getOptional(config, option)
                    .filter(v -> v <= 0)
                    .ifPresent(v -> fail(option, v, "must be larger than 0"));
        }
        for (ConfigOption<MemorySize> option : POSITIVE_SIZES) {
            getOptional(config, option)
                    .filter(v -> v.getBytes() <= 0)
                    .ifPresent(v -> fail(option, v, "must be larger than 0"));
        }
        getOptional(config, ForStConfigurableOptions.LOG_DIR)
                .filter(dir -> !new File(dir).isAbsolute())
                .ifPresent(
                        dir -> fail(ForStConfigurableOptions.LOG_DIR, dir, "must be an absolute path"));
        double overlap =
                get(config, ForStConfigurableOptions.RESTORE_OVERLAP_FRACTION_THRESHOLD);
        if (!(overlap >= 0 && overlap <= 1)) {
            fail(
                    ForStConfigurableOptions.RESTORE_OVERLAP_FRACTION_THRESHOLD,
                    overlap,
                    "must be between 0 and 1");
        }
    }
}
