package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;

import java.util.List;

/**
 * Configuration keys of the ForSt-RS state backend read by the backend itself: every key of Flink
 * 2.3's {@code org.apache.flink.state.forst.ForStOptions}, with Flink's types, plus keys of our
 * own under the same prefix. Engine tuning keys are in {@link ForStConfigurableOptions}, the
 * engine's own options in {@link EngineOptions}; {@link ForStBackendConfig#fromConfig} validates
 * them all and fails fast naming the key. Defaults are ours where they differ from Flink's
 * (primary-dir, timer-service.factory).
 */
public final class ForStOptions {

    /** Prefix of every key of this backend. */
    public static final String PREFIX = "state.backend.forst.";

    /** FLIP-427's name of the primary directory; accepted as an alias of {@link #PRIMARY_DIR}. */
    public static final String WORKING_DIR_KEY = PREFIX + "working-dir";

    /** Value of {@link #PRIMARY_DIR} that places the primary directory in the local directory. */
    public static final String PRIMARY_DIR_LOCAL = "local-dir";

    /**
     * Value of {@link #PRIMARY_DIR}, Flink's default: on the checkpoint directory's file system
     * (Flink's ForSt uses its shared directory, ours its task-owned one).
     */
    public static final String PRIMARY_DIR_CHECKPOINT = "checkpoint-dir";

    public static final ConfigOption<String> PRIMARY_DIR =
            ConfigOptions.key(PREFIX + "primary-dir")
                    .stringType()
                    .defaultValue(PRIMARY_DIR_LOCAL)
                    .withFallbackKeys(WORKING_DIR_KEY)
                    .withDescription(
                            "Where the state's files live (the primary copy of keyed state): a"
                                    + " URI or absolute path (file:///dir, /dir, hdfs://nn/dir,"
                                    + " any scheme of a Flink file system), 'local-dir' to keep"
                                    + " them under the local directory, or 'checkpoint-dir'"
                                    + " (Flink's default) to keep them in the job's 'shared'"
                                    + " checkpoint directory, where checkpoints take them as"
                                    + " they are (local directory when checkpoints are not on"
                                    + " a file system). Alias: "
                                    + WORKING_DIR_KEY
                                    + ". Each keyed backend uses"
                                    + " <primary-dir>/<job id>/<operator>/<subtask attempt>"
                                    + " (<checkpoints>/<job id>/shared/<operator>/<subtask"
                                    + " attempt>).");

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
                                    + " overrides memory.managed; no effect when"
                                    + " memory.fixed-per-slot is set.");

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
                    .defaultValue(true)
                    .withDescription(
                            "Run each batch on the task thread instead of the executor's"
                                    + " threads. Flink's ForSt defaults to false; handing"
                                    + " batches to other threads was slower in every case"
                                    + " measured (docs/benchmarks.md).");

    public static final ConfigOption<Boolean> EXECUTOR_WRITE_BEHIND =
            ConfigOptions.key(PREFIX + "executor.write-behind")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "With executor.inline-coordinator: a write of a record that holds"
                                    + " its key and has no other request in flight (the"
                                    + " write after a read) completes at once and goes to"
                                    + " the store at the head of the next batch, instead of"
                                    + " making a round trip of its own. Order is kept.");

    public static final ConfigOption<Boolean> EXECUTOR_RUN_AT_ISSUE =
            ConfigOptions.key(PREFIX + "executor.run-at-issue")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "With executor.inline-coordinator: a request whose key no other"
                                    + " record holds runs on the task thread when it is"
                                    + " issued, as on a synchronous backend, so its"
                                    + " callbacks run at once instead of through Flink's"
                                    + " mailbox; a request of a held key waits for it as"
                                    + " before. Only while reads are answered from memory or"
                                    + " a local disk: once a read waits for storage,"
                                    + " requests are batched again (their reads in one"
                                    + " flight) until a batch no longer waits.");

    public static final ConfigOption<Integer> EXECUTOR_BATCH_THREADS =
            ConfigOptions.key(PREFIX + "executor.batch-threads")
                    .intType()
                    .defaultValue(2)
                    .withDescription(
                            "Threads per state executor that run batches (each batch is one"
                                    + " native call); also the number of batches in flight"
                                    + " before the executor reports itself fully loaded.");

    /** Flink's {@code ForStStateBackend.PriorityQueueStateType}. */
    public enum TimerServiceType {
        HEAP,
        ForStDB
    }

    public static final ConfigOption<TimerServiceType> TIMER_SERVICE_FACTORY =
            ConfigOptions.key(PREFIX + "timer-service.factory")
                    .enumType(TimerServiceType.class)
                    .defaultValue(TimerServiceType.ForStDB)
                    .withDescription(
                            "Where timers live: ForStDB (the default, as in Flink's ForSt) keeps"
                                    + " them in the store, one column family per timer queue,"
                                    + " checkpointed with the keyed state; HEAP keeps them on"
                                    + " Flink's heap priority queue. The async (State V2)"
                                    + " backend keeps its timers on the heap either way.");

    public static final ConfigOption<Integer> TIMER_SERVICE_CACHE_SIZE =
            ConfigOptions.key(PREFIX + "timer-service.cache-size")
                    .intType()
                    .defaultValue(128)
                    .withDescription(
                            "Timers of a queue in the store cached in memory per key group"
                                    + " (the smallest ones); must be positive.");

    public static final ConfigOption<Boolean> EXECUTOR_INLINE_WRITE =
            ConfigOptions.key(PREFIX + "executor.inline-write")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Flink's choice of running writes on the coordinator thread. A batch"
                                    + " is one native call that reads and writes, so only"
                                    + " 'false' matters: then write-io-parallelism adds batch"
                                    + " threads (unless executor.batch-threads is set).");

    public static final ConfigOption<Integer> EXECUTOR_READ_IO_PARALLELISM =
            ConfigOptions.key(PREFIX + "executor.read-io-parallelism")
                    .intType()
                    .defaultValue(3)
                    .withDescription(
                            "Flink's number of read threads; sets executor.batch-threads when"
                                    + " that is not set.");

    public static final ConfigOption<Integer> EXECUTOR_WRITE_IO_PARALLELISM =
            ConfigOptions.key(PREFIX + "executor.write-io-parallelism")
                    .intType()
                    .defaultValue(1)
                    .withDescription(
                            "Flink's number of write threads, used only when"
                                    + " executor.inline-write is false: then added to"
                                    + " executor.batch-threads when that is not set.");

    public static final ConfigOption<Double> HIGH_PRIORITY_POOL_RATIO =
            ConfigOptions.key(PREFIX + "memory.high-prio-pool-ratio")
                    .doubleType()
                    .defaultValue(0.1)
                    .withDescription(
                            "Flink's share of the block cache reserved for index and filter"
                                    + " blocks; checked as Flink does, no effect (index and"
                                    + " filter partitions share the cache with data blocks,"
                                    + " without priorities).");

    public static final ConfigOption<Boolean> USE_PARTITIONED_INDEX_FILTERS =
            ConfigOptions.key(PREFIX + "memory.partitioned-index-filters")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Flink's partitioned index and filters; no effect: the engine always"
                                    + " partitions them and caches them in the block cache.");

    public static final ConfigOption<String> CACHE_DIRECTORY =
            ConfigOptions.key(PREFIX + "cache.dir")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Local directory of the disk cache of SST files under the primary"
                                    + " directory (one per task manager, shared by its"
                                    + " databases, warm again after a restart); setting it"
                                    + " turns the cache on. Default: forst-rs-cache under the"
                                    + " first local directory.");

    public static final ConfigOption<MemorySize> CACHE_SIZE_BASE_LIMIT =
            ConfigOptions.key(PREFIX + "cache.size-based-limit")
                    .memoryType()
                    .defaultValue(MemorySize.ZERO)
                    .withDescription(
                            "Most bytes the disk cache may take; a positive value turns the"
                                    + " cache on. 0: no size limit.");

    public static final ConfigOption<MemorySize> CACHE_RESERVED_SIZE =
            ConfigOptions.key(PREFIX + "cache.reserve-size")
                    .memoryType()
                    .defaultValue(MemorySize.ofMebiBytes(256))
                    .withDescription(
                            "Disk space the disk cache leaves free on its disk (it evicts"
                                    + " files to keep it). 0: none. Unlike Flink's ForSt, it does"
                                    + " not turn the cache on by itself.");

    public static final ConfigOption<Integer> CACHE_LRU_ACCESS_BEFORE_PROMOTION =
            ConfigOptions.key(PREFIX + "cache.lru.access-before-promote")
                    .intType()
                    .defaultValue(6)
                    .withDescription(
                            "Flink's disk cache promotion policy; no effect (the cache is"
                                    + " LRU).");

    public static final ConfigOption<Integer> CACHE_LRU_PROMOTION_LIMIT =
            ConfigOptions.key(PREFIX + "cache.lru.promote-limit")
                    .intType()
                    .defaultValue(3)
                    .withDescription(
                            "Flink's disk cache promotion policy; no effect (the cache is"
                                    + " LRU).");

    public static final ConfigOption<String> OPTIONS_FACTORY =
            ConfigOptions.key(PREFIX + "options-factory")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Flink's factory of C++ ForSt DBOptions and ColumnFamilyOptions; no"
                                    + " effect (the engine's options are"
                                    + " state.backend.forst.engine.*).");

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

    /** Which DB files a checkpoint takes where they are instead of copying them. */
    public enum HandOverScope {
        /**
         * Only a DB under the checkpoint's shared directory ({@code primary-dir: checkpoint-dir}),
         * as Flink's ForSt: everything a retained checkpoint references lies under the checkpoint
         * directory.
         */
        SHARED_DIRECTORY,
        /**
         * Any DB on the checkpoint's file system (a local one only under the job's checkpoint
         * directory): retained checkpoints then reference files under the primary directory,
         * which must be kept as long as they are.
         */
        FILE_SYSTEM
    }

    public static final ConfigOption<HandOverScope> CHECKPOINT_HAND_OVER =
            ConfigOptions.key(PREFIX + "checkpoint.hand-over")
                    .enumType(HandOverScope.class)
                    .defaultValue(HandOverScope.SHARED_DIRECTORY)
                    .withDescription(
                            "Which DB files a checkpoint takes where they are (no byte moves)"
                                    + " instead of copying them into the checkpoint's shared"
                                    + " directory: SHARED_DIRECTORY (default, as Flink's ForSt)"
                                    + " only when the DB lives under it ('primary-dir:"
                                    + " checkpoint-dir'); FILE_SYSTEM whenever the DB is on the"
                                    + " checkpoint's file system, so that retained checkpoints"
                                    + " reference files under the primary directory, which must"
                                    + " then not be cleaned while they are retained.");

    /** Every key of this class. */
    static final List<ConfigOption<?>> ALL =
            List.of(
                    PRIMARY_DIR,
                    LOCAL_DIRECTORIES,
                    USE_MANAGED_MEMORY,
                    FIX_PER_SLOT_MEMORY_SIZE,
                    FIX_PER_TM_MEMORY_SIZE,
                    WRITE_BUFFER_RATIO,
                    HIGH_PRIORITY_POOL_RATIO,
                    USE_PARTITIONED_INDEX_FILTERS,
                    EXECUTOR_INLINE_COORDINATOR,
                    EXECUTOR_WRITE_BEHIND,
                    EXECUTOR_RUN_AT_ISSUE,
                    EXECUTOR_INLINE_WRITE,
                    EXECUTOR_READ_IO_PARALLELISM,
                    EXECUTOR_WRITE_IO_PARALLELISM,
                    EXECUTOR_BATCH_THREADS,
                    TIMER_SERVICE_FACTORY,
                    TIMER_SERVICE_CACHE_SIZE,
                    CACHE_DIRECTORY,
                    CACHE_SIZE_BASE_LIMIT,
                    CACHE_RESERVED_SIZE,
                    CACHE_LRU_ACCESS_BEFORE_PROMOTION,
                    CACHE_LRU_PROMOTION_LIMIT,
                    OPTIONS_FACTORY,
                    FS_FORCE_PROXY,
                    SYNC_ENFORCE_LOCAL,
                    CHECKPOINT_HAND_OVER);

    private ForStOptions() {}
}
