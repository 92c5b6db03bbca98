package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.fs.Path;

import org.forstrs.flink.config.ForStConfigurableOptions.CompactionStyle;
import org.forstrs.flink.config.ForStOptions.HandOverScope;
import org.forstrs.flink.config.ForStOptions.TimerServiceType;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The validated settings of a {@link org.forstrs.flink.ForStStateBackend}. Every value is checked
 * when the backend is configured (on the client and on the cluster), so a bad value fails the job
 * before it runs, with a message naming the key.
 */
public final class ForStBackendConfig implements Serializable {

    private static final long serialVersionUID = 1L;

    /** Upper bound of {@link ForStOptions#EXECUTOR_BATCH_THREADS}. */
    static final int MAX_BATCH_THREADS = 64;

    /** Every key of Flink's ForSt and of ours, except the engine's. */
    static final List<ConfigOption<?>> ALL_OPTIONS =
            Stream.of(
                            ForStOptions.ALL,
                            ForStConfigurableOptions.ALL,
                            ForStMetricOptions.ALL)
                    .flatMap(List::stream)
                    .toList();

    /** {@code null}: under the local directory; otherwise a normalized URI string. */
    @Nullable private final String primaryDir;

    /** {@code null}: the task manager's temporary working directory. */
    @Nullable private final List<String> localDirs;

    private final boolean managedMemory;
    @Nullable private final MemorySize fixedPerSlot;
    @Nullable private final MemorySize fixedPerTm;
    private final double writeBufferRatio;
    private final boolean inlineCoordinator;
    private final boolean writeBehind;
    private final boolean runAtIssue;
    private final int batchThreads;
    private final boolean forceProxy;
    private final boolean syncEnforceLocal;
    private final S3Settings s3;
    private final DiskCacheSettings diskCache;
    private final TimerServiceType timerService;
    private final int timerCacheSize;
    private final HandOverScope handOverScope;

    /** Primary directory 'checkpoint-dir': on the checkpoint directory's file system. */
    private final boolean primaryOnCheckpointDir;

    /** Engine options set by the configuration, by engine option name (text values). */
    private final LinkedHashMap<String, String> engineOptions;

    /** The {@code metrics.*} keys switched on (see {@link ForStMetricOptions}). */
    private final List<String> metricKeys;

    private ForStBackendConfig(
            @Nullable String primaryDir,
            boolean primaryOnCheckpointDir,
            @Nullable List<String> localDirs,
            boolean managedMemory,
            @Nullable MemorySize fixedPerSlot,
            @Nullable MemorySize fixedPerTm,
            double writeBufferRatio,
            boolean inlineCoordinator,
            boolean writeBehind,
            boolean runAtIssue,
            int batchThreads,
            boolean forceProxy,
            boolean syncEnforceLocal,
            S3Settings s3,
            DiskCacheSettings diskCache,
            TimerServiceType timerService,
            int timerCacheSize,
            HandOverScope handOverScope,
            Map<String, String> engineOptions,
            List<String> metricKeys) {
        this.primaryDir = primaryDir;
        this.primaryOnCheckpointDir = primaryOnCheckpointDir;
        this.localDirs = localDirs;
        this.managedMemory = managedMemory;
        this.fixedPerSlot = fixedPerSlot;
        this.fixedPerTm = fixedPerTm;
        this.writeBufferRatio = writeBufferRatio;
        this.inlineCoordinator = inlineCoordinator;
        this.writeBehind = writeBehind;
        this.runAtIssue = runAtIssue;
        this.batchThreads = batchThreads;
        this.forceProxy = forceProxy;
        this.syncEnforceLocal = syncEnforceLocal;
        this.s3 = s3;
        this.diskCache = diskCache;
        this.timerService = timerService;
        this.timerCacheSize = timerCacheSize;
        this.handOverScope = handOverScope;
        this.engineOptions = new LinkedHashMap<>(engineOptions);
        this.metricKeys = List.copyOf(metricKeys);
    }

    /**
     * Reads and validates every {@code state.backend.forst.*} key of {@code config}: Flink's keys
     * with Flink's types and checks, ours, and the engine's ({@link EngineOptions}). Keys without
     * effect are logged once per JVM.
     */
    public static ForStBackendConfig fromConfig(ReadableConfig config) {
        rejectUnknownKeys(config);
        for (ConfigOption<?> option : ALL_OPTIONS) {
            getOptional(config, option);
        }
        FlinkRangeChecks.check(config);

        String primaryKey = keyInUse(config, ForStOptions.PRIMARY_DIR);
        String primaryValue = get(config, ForStOptions.PRIMARY_DIR).trim();
        boolean onCheckpointDir = primaryValue.equalsIgnoreCase(ForStOptions.PRIMARY_DIR_CHECKPOINT);
        String primaryDir = onCheckpointDir ? null : parsePrimaryDir(primaryKey, primaryValue);

        List<String> localDirs =
                getOptional(config, ForStOptions.LOCAL_DIRECTORIES)
                        .map(v -> parseLocalDirs(ForStOptions.LOCAL_DIRECTORIES.key(), v))
                        .orElse(null);

        boolean managed = get(config, ForStOptions.USE_MANAGED_MEMORY);
        MemorySize perSlot =
                getOptional(config, ForStOptions.FIX_PER_SLOT_MEMORY_SIZE).orElse(null);
        MemorySize perTm = getOptional(config, ForStOptions.FIX_PER_TM_MEMORY_SIZE).orElse(null);
        checkPositive(ForStOptions.FIX_PER_SLOT_MEMORY_SIZE, perSlot);
        checkPositive(ForStOptions.FIX_PER_TM_MEMORY_SIZE, perTm);
        if (perSlot != null && perTm != null) {
            LogOnce.info(
                    "'{}' is set, so '{}' has no effect (as in Flink's ForSt)",
                    ForStOptions.FIX_PER_SLOT_MEMORY_SIZE.key(),
                    ForStOptions.FIX_PER_TM_MEMORY_SIZE.key());
            perTm = null;
        }
        double ratio = checkMemoryRatios(config);

        boolean inline = get(config, ForStOptions.EXECUTOR_INLINE_COORDINATOR);
        int threads = batchThreads(config);

        TimerServiceType timerService = get(config, ForStOptions.TIMER_SERVICE_FACTORY);
        int timerCacheSize = get(config, ForStOptions.TIMER_SERVICE_CACHE_SIZE);
        if (timerCacheSize < 1) {
            fail(ForStOptions.TIMER_SERVICE_CACHE_SIZE, timerCacheSize, "must be positive");
        }
        CompactionStyle style = get(config, ForStConfigurableOptions.COMPACTION_STYLE);
        if (style != CompactionStyle.LEVEL) {
            LogOnce.info(
                    "{}: {} accepted, the engine compacts leveled (LEVEL)",
                    ForStConfigurableOptions.COMPACTION_STYLE.key(),
                    style);
        }

        boolean forceProxy = get(config, ForStOptions.FS_FORCE_PROXY);
        boolean syncEnforceLocal = get(config, ForStOptions.SYNC_ENFORCE_LOCAL);
        S3Settings s3 = S3Settings.fromConfig(config);
        DiskCacheSettings diskCache = DiskCacheSettings.fromConfig(config);
        Map<String, String> engine = EngineOptionMapping.engineOptions(config);
        NoEffectOptions.logSetKeys(config);

        return new ForStBackendConfig(
                primaryDir,
                onCheckpointDir,
                localDirs,
                managed,
                perSlot,
                perTm,
                ratio,
                inline,
                get(config, ForStOptions.EXECUTOR_WRITE_BEHIND),
                get(config, ForStOptions.EXECUTOR_RUN_AT_ISSUE),
                threads,
                forceProxy,
                syncEnforceLocal,
                s3,
                diskCache,
                timerService,
                timerCacheSize,
                get(config, ForStOptions.CHECKPOINT_HAND_OVER),
                engine,
                ForStMetricOptions.switchedOn(config));
    }

    /**
     * The memtable share of a memory budget, in (0, 1), and Flink's check of it against the
     * high-priority pool ratio (which has no effect here but must be valid).
     */
    private static double checkMemoryRatios(ReadableConfig config) {
        double ratio = get(config, ForStOptions.WRITE_BUFFER_RATIO);
        if (!(ratio > 0.0 && ratio < 1.0)) {
            fail(ForStOptions.WRITE_BUFFER_RATIO, ratio, "must be greater than 0 and less than 1");
        }
        double highPriority = get(config, ForStOptions.HIGH_PRIORITY_POOL_RATIO);
        if (!(highPriority >= 0.0 && highPriority < 1.0)) {
            fail(ForStOptions.HIGH_PRIORITY_POOL_RATIO, highPriority, "must be in [0, 1)");
        }
        if (2 * ratio / (3 - ratio) + highPriority >= 1.0) {
            throw new IllegalConfigurationException(
                    "Invalid values for '%s' (%s) and '%s' (%s): write buffers and the"
                            + " high-priority pool would take the whole cache (Flink's check:"
                            + " 2 * ratio / (3 - ratio) + high-prio ratio < 1)",
                    ForStOptions.WRITE_BUFFER_RATIO.key(),
                    ratio,
                    ForStOptions.HIGH_PRIORITY_POOL_RATIO.key(),
                    highPriority);
        }
        return ratio;
    }

    /**
     * Threads running batches: {@code executor.batch-threads} if set, else Flink's I/O thread
     * count if its keys are set (read threads, plus write threads when writes are not inline),
     * else our default. Flink's checks of its keys apply.
     */
    private static int batchThreads(ReadableConfig config) {
        boolean inlineWrite = get(config, ForStOptions.EXECUTOR_INLINE_WRITE);
        int read = get(config, ForStOptions.EXECUTOR_READ_IO_PARALLELISM);
        int write = get(config, ForStOptions.EXECUTOR_WRITE_IO_PARALLELISM);
        if (inlineWrite && read <= 0) {
            fail(
                    ForStOptions.EXECUTOR_READ_IO_PARALLELISM,
                    read,
                    "must be larger than 0 while '"
                            + ForStOptions.EXECUTOR_INLINE_WRITE.key()
                            + "' is true");
        }
        if (!inlineWrite && read <= 0 && write <= 0) {
            fail(
                    ForStOptions.EXECUTOR_WRITE_IO_PARALLELISM,
                    write,
                    "this or '"
                            + ForStOptions.EXECUTOR_READ_IO_PARALLELISM.key()
                            + "' must be larger than 0");
        }
        Optional<Integer> ours = getOptional(config, ForStOptions.EXECUTOR_BATCH_THREADS);
        if (ours.isPresent()) {
            int threads = ours.get();
            if (threads < 1 || threads > MAX_BATCH_THREADS) {
                fail(
                        ForStOptions.EXECUTOR_BATCH_THREADS,
                        threads,
                        "must be between 1 and " + MAX_BATCH_THREADS);
            }
            return threads;
        }
        Map<String, String> set = config.toMap();
        boolean flinkKeysSet =
                set.containsKey(ForStOptions.EXECUTOR_READ_IO_PARALLELISM.key())
                        || (!inlineWrite
                                && set.containsKey(
                                        ForStOptions.EXECUTOR_WRITE_IO_PARALLELISM.key()));
        if (!flinkKeysSet) {
            return ForStOptions.EXECUTOR_BATCH_THREADS.defaultValue();
        }
        int flinkThreads =
                inlineWrite
                        ? read
                        : (read <= 0 || write <= 0 ? Math.max(read, write) : read + write);
        return Math.min(flinkThreads, MAX_BATCH_THREADS);
    }

    /**
     * Every {@code state.backend.forst.*} key the backend accepts except the engine's ({@link
     * EngineOptions}): Flink's ForSt keys, ours, our S3 overrides and their fallback keys.
     */
    static SortedSet<String> knownKeys() {
        TreeSet<String> known = new TreeSet<>();
        for (ConfigOption<?> option :
                Stream.concat(ALL_OPTIONS.stream(), S3Settings.ALL.stream()).toList()) {
            known.add(option.key());
            for (FallbackKey fallback : option.fallbackKeys()) {
                known.add(fallback.getKey());
            }
        }
        return Collections.unmodifiableSortedSet(known);
    }

    private static void rejectUnknownKeys(ReadableConfig config) {
        SortedSet<String> known = knownKeys();
        for (String key : new TreeSet<>(config.toMap().keySet())) {
            if (!key.startsWith(ForStOptions.PREFIX) || known.contains(key)) {
                continue;
            }
            if (key.startsWith(EngineOptions.KEY_PREFIX)) {
                String name = key.substring(EngineOptions.KEY_PREFIX.length());
                if (EngineOptions.find(name).isPresent()) {
                    continue;
                }
                throw new IllegalConfigurationException(
                        "Unknown configuration key '%s' for the ForSt-RS state backend (engine"
                                + " options: %s)",
                        key,
                        EngineOptions.all().stream()
                                .map(EngineOptions.EngineOption::key)
                                .collect(Collectors.joining(", ")));
            }
            throw new IllegalConfigurationException(
                    "Unknown configuration key '%s' for the ForSt-RS state backend (known"
                            + " keys: %s, and %s<engine option>)",
                    key,
                    String.join(", ", known),
                    EngineOptions.KEY_PREFIX);
        }
    }

    /** The key the value of {@code option} comes from: its own key or the fallback in use. */
    private static String keyInUse(ReadableConfig config, ConfigOption<?> option) {
        Map<String, String> map = config.toMap();
        if (map.containsKey(option.key())) {
            return option.key();
        }
        for (FallbackKey fallback : option.fallbackKeys()) {
            if (map.containsKey(fallback.getKey())) {
                return fallback.getKey();
            }
        }
        return option.key();
    }

    static <T> T get(ReadableConfig config, ConfigOption<T> option) {
        return parse(option, () -> config.get(option));
    }

    static <T> Optional<T> getOptional(ReadableConfig config, ConfigOption<T> option) {
        return parse(option, () -> config.getOptional(option));
    }

    private static <T> T parse(ConfigOption<?> option, Supplier<T> reader) {
        try {
            return reader.get();
        } catch (IllegalArgumentException e) {
            throw new IllegalConfigurationException(
                    "Invalid value for '" + option.key() + "': " + e.getMessage(), e);
        }
    }

    private static void checkPositive(ConfigOption<MemorySize> option, @Nullable MemorySize v) {
        if (v != null && v.getBytes() <= 0) {
            fail(option, v, "must be positive");
        }
    }

    static void fail(ConfigOption<?> option, Object value, String why) {
        throw new IllegalConfigurationException(
                "Invalid value for '%s': %s (%s)", option.key(), value, why);
    }

    @Nullable
    private static String parsePrimaryDir(String key, String value) {
        if (value.isEmpty()) {
            throw new IllegalConfigurationException("Invalid value for '%s': empty", key);
        }
        if (value.equalsIgnoreCase(ForStOptions.PRIMARY_DIR_LOCAL)) {
            return null;
        }
        return normalizeDir(key, value);
    }

    private static List<String> parseLocalDirs(String key, String value) {
        List<String> dirs = new ArrayList<>();
        for (String part : value.split("[,;]")) {
            String dir = part.trim();
            if (dir.isEmpty()) {
                continue;
            }
            String uri = normalizeDir(key, dir);
            if (!"file".equals(URI.create(uri).getScheme())) {
                throw new IllegalConfigurationException(
                        "Invalid value for '%s': '%s' is not a local directory", key, dir);
            }
            dirs.add(URI.create(uri).getPath());
        }
        if (dirs.isEmpty()) {
            throw new IllegalConfigurationException("Invalid value for '%s': empty", key);
        }
        return List.copyOf(dirs);
    }

    /** An absolute path or a URI with a scheme, as a URI string (a path becomes file://). */
    public static String normalizeDir(String key, String value) {
        URI uri;
        try {
            uri = new Path(value).toUri();
        } catch (IllegalArgumentException e) {
            throw new IllegalConfigurationException(
                    "Invalid value for '" + key + "': '" + value + "' (" + e.getMessage() + ")",
                    e);
        }
        String scheme = uri.getScheme();
        String path = uri.getPath();
        if (scheme == null) {
            if (path == null || !path.startsWith("/")) {
                throw new IllegalConfigurationException(
                        "Invalid value for '%s': '%s' (need an absolute path or a URI such as"
                                + " file:///dir, s3://bucket/dir or hdfs://namenode:8020/dir)",
                        key,
                        value);
            }
            return "file://" + stripTrailingSlash(path);
        }
        if (scheme.equalsIgnoreCase("file")) {
            if (uri.getAuthority() != null && !uri.getAuthority().equals("localhost")) {
                throw new IllegalConfigurationException(
                        "Invalid value for '%s': '%s' (file URIs name a local path: file:///dir)",
                        key,
                        value);
            }
            if (path == null || !path.startsWith("/")) {
                throw new IllegalConfigurationException(
                        "Invalid value for '%s': '%s' (file URIs need an absolute path)",
                        key,
                        value);
            }
            return "file://" + stripTrailingSlash(path);
        }
        return stripTrailingSlash(uri.toString());
    }

    private static String stripTrailingSlash(String s) {
        String out = s;
        while (out.length() > 1 && out.endsWith("/") && !out.endsWith("://")) {
            out = out.substring(0, out.length() - 1);
        }
        return out;
    }

    /**
     * {@code null}: the primary directory is under the local directory, or on the checkpoint
     * directory's file system if {@link #isPrimaryOnCheckpointDir()}.
     */
    @Nullable
    public String getPrimaryDir() {
        return primaryDir;
    }

    /** Whether the primary directory is {@code checkpoint-dir} (Flink's default). */
    public boolean isPrimaryOnCheckpointDir() {
        return primaryOnCheckpointDir;
    }

    /**
     * Engine options the configuration sets, by engine option name, as the engine takes them
     * ({@code ForStNative.open}); options not in it keep the engine's defaults.
     */
    public Map<String, String> getEngineOptions() {
        return Collections.unmodifiableMap(engineOptions);
    }

    /** {@code null}: the task manager's temporary working directory. */
    @Nullable
    public List<String> getLocalDirs() {
        return localDirs;
    }

    public boolean isManagedMemory() {
        return managedMemory;
    }

    @Nullable
    public MemorySize getFixedPerSlot() {
        return fixedPerSlot;
    }

    @Nullable
    public MemorySize getFixedPerTm() {
        return fixedPerTm;
    }

    public double getWriteBufferRatio() {
        return writeBufferRatio;
    }

    public boolean isInlineCoordinator() {
        return inlineCoordinator;
    }

    public boolean isWriteBehind() {
        return writeBehind;
    }

    public boolean isRunAtIssue() {
        return runAtIssue;
    }

    public int getBatchThreads() {
        return batchThreads;
    }

    /** Whether the primary directory is reached through Flink's FileSystem for every scheme. */
    public boolean isForceProxy() {
        return forceProxy;
    }

    /** How the native store reaches S3 for s3:// directories. */
    public S3Settings getS3() {
        return s3;
    }

    /** The local disk cache under the primary directory. */
    public DiskCacheSettings getDiskCache() {
        return diskCache;
    }

    /** Whether synchronous keyed state stays under the local directory (not the primary one). */
    public boolean isSyncEnforceLocal() {
        return syncEnforceLocal;
    }

    /** The {@code state.backend.forst.metrics.*} keys switched on. */
    public List<String> getMetricKeys() {
        return metricKeys;
    }

    /** Where the synchronous backend keeps timers. */
    public TimerServiceType getTimerService() {
        return timerService;
    }

    /** Timers cached in memory per key group and queue, for timers in the store. */
    public int getTimerCacheSize() {
        return timerCacheSize;
    }

    /** Which DB files checkpoints take where they are. */
    public HandOverScope getHandOverScope() {
        return handOverScope;
    }

    @Override
    public String toString() {
        return "ForStBackendConfig{primaryDir="
                + (primaryOnCheckpointDir
                        ? ForStOptions.PRIMARY_DIR_CHECKPOINT
                        : primaryDir == null ? ForStOptions.PRIMARY_DIR_LOCAL : primaryDir)
                + ", localDirs="
                + localDirs
                + ", managedMemory="
                + managedMemory
                + ", fixedPerSlot="
                + fixedPerSlot
                + ", fixedPerTm="
                + fixedPerTm
                + ", writeBufferRatio="
                + writeBufferRatio
                + ", inlineCoordinator="
                + inlineCoordinator
                + ", writeBehind="
                + writeBehind
                + ", runAtIssue="
                + runAtIssue
                + ", batchThreads="
                + batchThreads
                + ", forceProxy="
                + forceProxy
                + ", syncEnforceLocal="
                + syncEnforceLocal
                + ", s3="
                + s3
                + ", diskCache="
                + diskCache
                + ", timerService="
                + timerService
                + ", timerCacheSize="
                + timerCacheSize
                + ", handOverScope="
                + handOverScope
                + ", engineOptions="
                + engineOptions
                + ", metrics="
                + metricKeys
                + '}';
    }
}
