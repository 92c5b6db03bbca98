package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;

import java.time.Duration;
import java.util.List;

/**
 * The keys of Flink 2.3's {@code org.apache.flink.state.forst.ForStConfigurableOptions} (tuning of
 * the C++ ForSt), with Flink's types, so that a configuration written for Flink's ForSt works
 * here. {@link EngineOptionMapping} applies those whose meaning carries over to our engine; the
 * others are accepted and logged once as without effect ({@link NoEffectOptions}). Keys that map
 * onto an engine option have no default here: unset, the engine's default applies (see {@link
 * EngineOptions}).
 */
public final class ForStConfigurableOptions {

    private static final String PREFIX = ForStOptions.PREFIX;

    /** The values of ForSt's {@code org.forstdb.CompactionStyle}. */
    public enum CompactionStyle {
        LEVEL,
        UNIVERSAL,
        FIFO,
        NONE
    }

    /** The values of ForSt's {@code org.forstdb.CompressionType}. */
    public enum CompressionType {
        NO_COMPRESSION,
        SNAPPY_COMPRESSION,
        ZLIB_COMPRESSION,
        BZLIB2_COMPRESSION,
        LZ4_COMPRESSION,
        LZ4HC_COMPRESSION,
        XPRESS_COMPRESSION,
        ZSTD_COMPRESSION,
        DISABLE_COMPRESSION_OPTION
    }

    /** The values of ForSt's {@code org.forstdb.InfoLogLevel}. */
    public enum InfoLogLevel {
        DEBUG_LEVEL,
        INFO_LEVEL,
        WARN_LEVEL,
        ERROR_LEVEL,
        FATAL_LEVEL,
        HEADER_LEVEL,
        NUM_INFO_LOG_LEVELS
    }

    public static final ConfigOption<Integer> MAX_BACKGROUND_THREADS =
            ConfigOptions.key(PREFIX + "thread.num")
                    .intType()
                    .defaultValue(2)
                    .withDescription(
                            "The background jobs of each DB, as RocksDB's max background jobs:"
                                    + " one flush thread and max(1, thread.num - 1) compaction"
                                    + " threads (engine option max-background-compactions);"
                                    + " compactions of disjoint key ranges run in parallel.");

    public static final ConfigOption<Integer> MAX_OPEN_FILES =
            ConfigOptions.key(PREFIX + "files.open")
                    .intType()
                    .defaultValue(-1)
                    .withDescription("Flink's limit of open files; no effect.");

    public static final ConfigOption<MemorySize> LOG_MAX_FILE_SIZE =
            ConfigOptions.key(PREFIX + "log.max-file-size")
                    .memoryType()
                    .defaultValue(MemorySize.parse("25mb"))
                    .withDescription("C++ ForSt's info log; no effect.");

    public static final ConfigOption<Integer> LOG_FILE_NUM =
            ConfigOptions.key(PREFIX + "log.file-num")
                    .intType()
                    .defaultValue(4)
                    .withDescription("C++ ForSt's info log; no effect.");

    public static final ConfigOption<String> LOG_DIR =
            ConfigOptions.key(PREFIX + "log.dir")
                    .stringType()
                    .noDefaultValue()
                    .withDescription("C++ ForSt's info log (an absolute path); no effect.");

    public static final ConfigOption<InfoLogLevel> LOG_LEVEL =
            ConfigOptions.key(PREFIX + "log.level")
                    .enumType(InfoLogLevel.class)
                    .defaultValue(InfoLogLevel.INFO_LEVEL)
                    .withDescription("C++ ForSt's info log; no effect.");

    public static final ConfigOption<CompactionStyle> COMPACTION_STYLE =
            ConfigOptions.key(PREFIX + "compaction.style")
                    .enumType(CompactionStyle.class)
                    .defaultValue(CompactionStyle.LEVEL)
                    .withDescription(
                            "Compaction style; the engine compacts leveled (LEVEL), other styles"
                                    + " are accepted and run leveled.");

    public static final ConfigOption<Boolean> USE_DYNAMIC_LEVEL_SIZE =
            ConfigOptions.key(PREFIX + "compaction.level.use-dynamic-size")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Level targets from the size of the data (RocksDB's"
                                    + " level_compaction_dynamic_level_bytes): the last level's"
                                    + " target is its size, each level above holds"
                                    + " 1/engine.level-size-multiplier (10) of the one below, and"
                                    + " L0 compacts into the deepest level whose target is within"
                                    + " max-size-level-base, the levels above it staying empty."
                                    + " Off: L1's target is max-size-level-base and each deeper"
                                    + " level's the multiplier times larger.");

    public static final ConfigOption<List<CompressionType>> COMPRESSION_PER_LEVEL =
            ConfigOptions.key(PREFIX + "compression.per.level")
                    .enumType(CompressionType.class)
                    .asList()
                    .noDefaultValue()
                    .withDescription(
                            "Semicolon-separated compression per level. The engine has one codec"
                                    + " for every level: NO_COMPRESSION on every level writes raw"
                                    + " blocks, anything else LZ4. Default: the engine's (LZ4).");

    public static final ConfigOption<MemorySize> TARGET_FILE_SIZE_BASE =
            ConfigOptions.key(PREFIX + "compaction.level.target-file-size-base")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription(
                            "Target SST file size.");

    public static final ConfigOption<MemorySize> MAX_SIZE_LEVEL_BASE =
            ConfigOptions.key(PREFIX + "compaction.level.max-size-level-base")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription("Target size of L1.");

    public static final ConfigOption<MemorySize> WRITE_BUFFER_SIZE =
            ConfigOptions.key(PREFIX + "writebuffer.size")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription(
                            "Memtable size that triggers a flush; under a memory budget the"
                                    + " smaller of this and the budget's share.");

    public static final ConfigOption<Integer> MAX_WRITE_BUFFER_NUMBER =
            ConfigOptions.key(PREFIX + "writebuffer.count")
                    .intType()
                    .noDefaultValue()
                    .withDescription(
                            "Memtables in memory at most, the active one included; 1 runs as"
                                    + " 2 (one active, one being flushed).");

    public static final ConfigOption<Integer> MIN_WRITE_BUFFER_NUMBER_TO_MERGE =
            ConfigOptions.key(PREFIX + "writebuffer.number-to-merge")
                    .intType()
                    .defaultValue(1)
                    .withDescription("Memtables merged per flush; no effect (one at a time).");

    public static final ConfigOption<MemorySize> BLOCK_SIZE =
            ConfigOptions.key(PREFIX + "block.blocksize")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription("Target size of data blocks.");

    public static final ConfigOption<MemorySize> METADATA_BLOCK_SIZE =
            ConfigOptions.key(PREFIX + "block.metadata-blocksize")
                    .memoryType()
                    .defaultValue(MemorySize.parse("4kb"))
                    .withDescription("Partitioned index block size; no effect.");

    public static final ConfigOption<MemorySize> BLOCK_CACHE_SIZE =
            ConfigOptions.key(PREFIX + "block.cache-size")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription(
                            "Block cache capacity when no memory budget sizes the cache.");

    public static final ConfigOption<MemorySize> WRITE_BATCH_SIZE =
            ConfigOptions.key(PREFIX + "write-batch-size")
                    .memoryType()
                    .defaultValue(MemorySize.parse("2mb"))
                    .withDescription(
                            "Flink's write batch flush size; no effect (one write batch per"
                                    + " state batch).");

    public static final ConfigOption<Boolean> USE_BLOOM_FILTER =
            ConfigOptions.key(PREFIX + "use-bloom-filter")
                    .booleanType()
                    .noDefaultValue()
                    .withDescription(
                            "Whether SST files get a bloom filter. Default: the engine's (on).");

    public static final ConfigOption<Double> BLOOM_FILTER_BITS_PER_KEY =
            ConfigOptions.key(PREFIX + "bloom-filter.bits-per-key")
                    .doubleType()
                    .noDefaultValue()
                    .withDescription(
                            "Bloom filter bits per key, rounded to a whole number.");

    public static final ConfigOption<Boolean> BLOOM_FILTER_BLOCK_BASED_MODE =
            ConfigOptions.key(PREFIX + "bloom-filter.block-based-mode")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription("Block-based filters; no effect (one filter per file).");

    public static final ConfigOption<Long> COMPACT_FILTER_QUERY_TIME_AFTER_NUM_ENTRIES =
            ConfigOptions.key(PREFIX + "compaction.filter.query-time-after-num-entries")
                    .longType()
                    .defaultValue(1000L)
                    .withDescription("Flink's TTL compaction filter tuning; no effect.");

    public static final ConfigOption<Duration> COMPACT_FILTER_PERIODIC_COMPACTION_TIME =
            ConfigOptions.key(PREFIX + "compaction.filter.periodic-compaction-time")
                    .durationType()
                    .defaultValue(Duration.ofDays(30))
                    .withDescription("Flink's periodic compaction for TTL; no effect.");

    public static final ConfigOption<Double> RESTORE_OVERLAP_FRACTION_THRESHOLD =
            ConfigOptions.key(PREFIX + "restore-overlap-fraction-threshold")
                    .doubleType()
                    .defaultValue(0.0)
                    .withDescription(
                            "Flink's choice of a base DB on restore, in [0, 1]; no effect (a"
                                    + " restore links every source's files).");

    public static final ConfigOption<Boolean> USE_INGEST_DB_RESTORE_MODE =
            ConfigOptions.key(PREFIX + "use-ingest-db-restore-mode")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Flink's ingest restore mode; no effect (a restore always links"
                                    + " files with key-group bounds).");

    public static final ConfigOption<Boolean> USE_DELETE_FILES_IN_RANGE_DURING_RESCALING =
            ConfigOptions.key(PREFIX + "rescaling.use-delete-files-in-range")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Flink's deleteFilesInRange on rescale; no effect (key-group bounds"
                                    + " hide foreign keys and compaction drops them).");

    /** Every key of this class. */
    static final List<ConfigOption<?>> ALL =
            List.of(
                    MAX_BACKGROUND_THREADS,
                    MAX_OPEN_FILES,
                    LOG_MAX_FILE_SIZE,
                    LOG_FILE_NUM,
                    LOG_DIR,
                    LOG_LEVEL,
                    COMPACTION_STYLE,
                    USE_DYNAMIC_LEVEL_SIZE,
                    COMPRESSION_PER_LEVEL,
                    TARGET_FILE_SIZE_BASE,
                    MAX_SIZE_LEVEL_BASE,
                    WRITE_BUFFER_SIZE,
                    MAX_WRITE_BUFFER_NUMBER,
                    MIN_WRITE_BUFFER_NUMBER_TO_MERGE,
                    BLOCK_SIZE,
                    METADATA_BLOCK_SIZE,
                    BLOCK_CACHE_SIZE,
                    WRITE_BATCH_SIZE,
                    USE_BLOOM_FILTER,
                    BLOOM_FILTER_BITS_PER_KEY,
                    BLOOM_FILTER_BLOCK_BASED_MODE,
                    COMPACT_FILTER_QUERY_TIME_AFTER_NUM_ENTRIES,
                    COMPACT_FILTER_PERIODIC_COMPACTION_TIME,
                    RESTORE_OVERLAP_FRACTION_THRESHOLD,
                    USE_INGEST_DB_RESTORE_MODE,
                    USE_DELETE_FILES_IN_RANGE_DURING_RESCALING);

    private ForStConfigurableOptions() {}
}
