package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;

import java.util.List;

/**
 * Configuration keys of the ForSt-RS state backend. Keys keep the names of Flink 2.3's built-in
 * ForSt ({@code state.backend.forst.*}) where the meaning is the same; {@link
 * ForStBackendConfig#fromConfig} validates them and fails fast naming the key.
 */
public final class ForStOptions {

    /** Prefix of every key of this backend. */
    public static final String PREFIX = "state.backend.forst.";

    /** FLIP-427's name of the primary directory; accepted as an alias of {@link #PRIMARY_DIR}. */
    public static final String WORKING_DIR_KEY = PREFIX + "working-dir";

    /** Value of {@link #PRIMARY_DIR} that places the primary directory in the local directory. */
    public static final String PRIMARY_DIR_LOCAL = "local-dir";

    /** Value of {@link #PRIMARY_DIR} of Flink's ForSt: the checkpoint's shared directory. */
    public static final String PRIMARY_DIR_CHECKPOINT = "checkpoint-dir";

    public static final ConfigOption<String> PRIMARY_DIR =
            ConfigOptions.key(PREFIX + "primary-dir")
                    .stringType()
                    .defaultValue(PRIMARY_DIR_LOCAL)
                    .withFallbackKeys(WORKING_DIR_KEY)
                    .withDescription(
                            "Where the state's files live (the primary copy of keyed state): a"
                                    + " URI or absolute path (file:///dir, /dir, hdfs://nn/dir,"
                                    + " any scheme of a Flink file system), or 'local-dir'"
                                    + " to keep them under the local directory. Alias: "
                                    + WORKING_DIR_KEY
                                    + ". Each keyed backend uses"
                                    + " <primary-dir>/<job id>/<operator>/<subtask attempt>.");

    public static final ConfigOption<String> LOCAL_DIRECTORIES =
            ConfigOptions.key(PREFIX + "local-dir")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Local directory (or comma separated directories, one chosen per"
                                    + " backend) for working files. Default: the task"
                                    + " manager's temporary working directory.");

    public static final ConfigOption<Boolean> USE_MANAGED_MEMORY =
            ConfigOptions.key(PREFIX + "memory.managed")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Size memtables and block cache from the operator's share of the"
                                    + " slot's managed memory.");

    public static final ConfigOption<MemorySize> FIX_PER_SLOT_MEMORY_SIZE =
            ConfigOptions.key(PREFIX + "memory.fixed-per-slot")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription(
                            "Fixed memory per slot for memtables and block cache; overrides"
                                    + " memory.managed.");

    public static final ConfigOption<MemorySize> FIX_PER_TM_MEMORY_SIZE =
            ConfigOptions.key(PREFIX + "memory.fixed-per-tm")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription(
                            "Fixed memory per task manager, split evenly among its slots;"
                                    + " overrides memory.managed. Exclusive with"
                                    + " memory.fixed-per-slot.");

    public static final ConfigOption<Double> WRITE_BUFFER_RATIO =
            ConfigOptions.key(PREFIX + "memory.write-buffer-ratio")
                    .doubleType()
                    .defaultValue(0.5)
                    .withDescription(
                            "Share of the memory budget for memtables (the rest is block"
                                    + " cache); in (0, 1).");

    public static final ConfigOption<Boolean> EXECUTOR_INLINE_COORDINATOR =
            ConfigOptions.key(PREFIX + "executor.inline-coordinator")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Run each batch on the task thread instead of the executor's"
                                    + " threads.");

    public static final ConfigOption<Integer> EXECUTOR_BATCH_THREADS =
            ConfigOptions.key(PREFIX + "executor.batch-threads")
                    .intType()
                    .defaultValue(2)
                    .withDescription(
                            "Threads per state executor that run batches (each batch is one"
                                    + " native call); also the number of batches in flight"
                                    + " before the executor reports itself fully loaded.");

    public static final ConfigOption<String> TIMER_SERVICE_FACTORY =
            ConfigOptions.key(PREFIX + "timer-service.factory")
                    .stringType()
                    .defaultValue("HEAP")
                    .withDescription("Where timers live; only HEAP is supported.");

    public static final ConfigOption<Boolean> FS_FORCE_PROXY =
            ConfigOptions.key(PREFIX + "fs.force-proxy")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Reach the primary directory through Flink's FileSystem (the JNI"
                                    + " file-system proxy) even for schemes the engine serves"
                                    + " natively (file, s3). Other schemes (hdfs, oss, viewfs,"
                                    + " ...) always use the proxy.");

    public static final ConfigOption<Boolean> SYNC_ENFORCE_LOCAL =
            ConfigOptions.key(PREFIX + "sync.enforce-local")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Keep the keyed state of operators without async state (the"
                                    + " synchronous path, one native call per state access) under"
                                    + " the local directory: true (default, as Flink's ForSt), or"
                                    + " under the primary directory: false.");

    /** Every key this backend reads; other keys under {@link #PREFIX} are rejected. */
    static final List<ConfigOption<?>> ALL =
            List.of(
                    PRIMARY_DIR,
                    LOCAL_DIRECTORIES,
                    USE_MANAGED_MEMORY,
                    FIX_PER_SLOT_MEMORY_SIZE,
                    FIX_PER_TM_MEMORY_SIZE,
                    WRITE_BUFFER_RATIO,
                    EXECUTOR_INLINE_COORDINATOR,
                    EXECUTOR_BATCH_THREADS,
                    TIMER_SERVICE_FACTORY,
                    FS_FORCE_PROXY,
                    SYNC_ENFORCE_LOCAL);

    private ForStOptions() {}
}
