package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.fs.Path;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * The validated settings of a {@link org.forstrs.flink.ForStStateBackend}. Every value is checked
 * when the backend is configured (on the client and on the cluster), so a bad value fails the job
 * before it runs, with a message naming the key.
 */
public final class ForStBackendConfig implements Serializable {

    private static final long serialVersionUID = 1L;

    /** Upper bound of {@link ForStOptions#EXECUTOR_BATCH_THREADS}. */
    static final int MAX_BATCH_THREADS = 64;

    /** {@code null}: under the local directory; otherwise a normalized URI string. */
    @Nullable private final String primaryDir;

    /** {@code null}: the task manager's temporary working directory. */
    @Nullable private final List<String> localDirs;

    private final boolean managedMemory;
    @Nullable private final MemorySize fixedPerSlot;
    @Nullable private final MemorySize fixedPerTm;
    private final double writeBufferRatio;
    private final boolean inlineCoordinator;
    private final int batchThreads;
    private final boolean forceProxy;
    private final boolean syncEnforceLocal;

    private ForStBackendConfig(
            @Nullable String primaryDir,
            @Nullable List<String> localDirs,
            boolean managedMemory,
            @Nullable MemorySize fixedPerSlot,
            @Nullable MemorySize fixedPerTm,
            double writeBufferRatio,
            boolean inlineCoordinator,
            int batchThreads,
            boolean forceProxy,
            boolean syncEnforceLocal) {
        this.primaryDir = primaryDir;
        this.localDirs = localDirs;
        this.managedMemory = managedMemory;
        this.fixedPerSlot = fixedPerSlot;
        this.fixedPerTm = fixedPerTm;
        this.writeBufferRatio = writeBufferRatio;
        this.inlineCoordinator = inlineCoordinator;
        this.batchThreads = batchThreads;
        this.forceProxy = forceProxy;
        this.syncEnforceLocal = syncEnforceLocal;
    }

    /** Reads and validates every {@code state.backend.forst.*} key of {@code config}. */
    public static ForStBackendConfig fromConfig(ReadableConfig config) {
        rejectUnknownKeys(config);

        String primaryKey = keyInUse(config, ForStOptions.PRIMARY_DIR);
        String primaryValue = get(config, ForStOptions.PRIMARY_DIR).trim();
        String primaryDir = parsePrimaryDir(primaryKey, primaryValue);

        List<String> localDirs =
                getOptional(config, ForStOptions.LOCAL_DIRECTORIES)
                        .map(v -> parseLocalDirs(ForStOptions.LOCAL_DIRECTORIES.key(), v))
                        .orElse(null);

        boolean managed = get(config, ForStOptions.USE_MANAGED_MEMORY);
        MemorySize perSlot =
                getOptional(config, ForStOptions.FIX_PER_SLOT_MEMORY_SIZE).orElse(null);
        MemorySize perTm = getOptional(config, ForStOptions.FIX_PER_TM_MEMORY_SIZE).orElse(null);
        if (perSlot != null && perTm != null) {
            throw new IllegalConfigurationException(
                    "'%s' and '%s' are exclusive; set at most one of them",
                    ForStOptions.FIX_PER_SLOT_MEMORY_SIZE.key(),
                    ForStOptions.FIX_PER_TM_MEMORY_SIZE.key());
        }
        checkPositive(ForStOptions.FIX_PER_SLOT_MEMORY_SIZE, perSlot);
        checkPositive(ForStOptions.FIX_PER_TM_MEMORY_SIZE, perTm);

        double ratio = get(config, ForStOptions.WRITE_BUFFER_RATIO);
        if (!(ratio > 0.0 && ratio < 1.0)) {
            throw new IllegalConfigurationException(
                    "Invalid value for '%s': %s (must be greater than 0 and less than 1)",
                    ForStOptions.WRITE_BUFFER_RATIO.key(),
                    ratio);
        }

        boolean inline = get(config, ForStOptions.EXECUTOR_INLINE_COORDINATOR);
        int threads = get(config, ForStOptions.EXECUTOR_BATCH_THREADS);
        if (threads < 1 || threads > MAX_BATCH_THREADS) {
            throw new IllegalConfigurationException(
                    "Invalid value for '%s': %s (must be between 1 and %s)",
                    ForStOptions.EXECUTOR_BATCH_THREADS.key(),
                    threads,
                    MAX_BATCH_THREADS);
        }

        String timers = get(config, ForStOptions.TIMER_SERVICE_FACTORY).trim();
        if (!timers.toUpperCase(Locale.ROOT).equals("HEAP")) {
            throw new IllegalConfigurationException(
                    "Invalid value for '%s': '%s' (only HEAP is supported: timers live on"
                            + " Flink's heap priority queue)",
                    ForStOptions.TIMER_SERVICE_FACTORY.key(),
                    timers);
        }

        boolean forceProxy = get(config, ForStOptions.FS_FORCE_PROXY);
        boolean syncEnforceLocal = get(config, ForStOptions.SYNC_ENFORCE_LOCAL);

        return new ForStBackendConfig(
                primaryDir,
                localDirs,
                managed,
                perSlot,
                perTm,
                ratio,
                inline,
                threads,
                forceProxy,
                syncEnforceLocal);
    }

    private static void rejectUnknownKeys(ReadableConfig config) {
        TreeSet<String> known = new TreeSet<>();
        for (ConfigOption<?> option : ForStOptions.ALL) {
            known.add(option.key());
            for (FallbackKey fallback : option.fallbackKeys()) {
                known.add(fallback.getKey());
            }
        }
        for (String key : new TreeSet<>(config.toMap().keySet())) {
            if (key.startsWith(ForStOptions.PREFIX) && !known.contains(key)) {
                throw new IllegalConfigurationException(
                        "Unknown configuration key '%s' for the ForSt-RS state backend (known"
                                + " keys: %s)",
                        key,
                        String.join(", ", known));
            }
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

    private static <T> T get(ReadableConfig config, ConfigOption<T> option) {
        return parse(option, () -> config.get(option));
    }

    private static <T> Optional<T> getOptional(ReadableConfig config, ConfigOption<T> option) {
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
            throw new IllegalConfigurationException(
                    "Invalid value for '%s': %s (must be positive)", option.key(), v);
        }
    }

    @Nullable
    private static String parsePrimaryDir(String key, String value) {
        if (value.isEmpty()) {
            throw new IllegalConfigurationException("Invalid value for '%s': empty", key);
        }
        if (value.equalsIgnoreCase(ForStOptions.PRIMARY_DIR_LOCAL)) {
            return null;
        }
        if (value.equalsIgnoreCase(ForStOptions.PRIMARY_DIR_CHECKPOINT)) {
            throw new IllegalConfigurationException(
                    "Invalid value for '%s': '%s' is not supported yet; use 'local-dir' or a"
                            + " URI / absolute path",
                    key,
                    value);
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
    static String normalizeDir(String key, String value) {
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

    /** {@code null}: the primary directory is under the local directory. */
    @Nullable
    public String getPrimaryDir() {
        return primaryDir;
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

    public int getBatchThreads() {
        return batchThreads;
    }

    /** Whether the primary directory is reached through Flink's FileSystem for every scheme. */
    public boolean isForceProxy() {
        return forceProxy;
    }

    /** Whether synchronous keyed state stays under the local directory (not the primary one). */
    public boolean isSyncEnforceLocal() {
        return syncEnforceLocal;
    }

    @Override
    public String toString() {
        return "ForStBackendConfig{primaryDir="
                + (primaryDir == null ? ForStOptions.PRIMARY_DIR_LOCAL : primaryDir)
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
                + ", batchThreads="
                + batchThreads
                + ", forceProxy="
                + forceProxy
                + ", syncEnforceLocal="
                + syncEnforceLocal
                + '}';
    }
}
