package org.forstrs.flink.config;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;

import javax.annotation.Nullable;

import java.io.File;
import java.io.Serializable;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;

/**
 * The local disk cache of SST files under the primary directory, from Flink's ForSt keys {@code
 * state.backend.forst.cache.dir}, {@code cache.size-based-limit} and {@code cache.reserve-size}
 * (same meanings: at most that many bytes, and leave that many free on the cache's disk). One
 * cache per directory and task manager, shared by its databases, warm again after a restart.
 *
 * <p>On when {@code cache.dir} is set or {@code cache.size-based-limit} is positive, and one of
 * the two bounds is positive (as in Flink's ForSt). Flink's
 * ForSt also turns it on for {@code cache.reserve-size} alone, whose 256 MB default would put a
 * cache under every database, local ones included; here the reserve only bounds a cache that is
 * on. Without {@code cache.dir} the cache lives in {@code forst-rs-cache} under the first local
 * directory.
 */
public final class DiskCacheSettings implements Serializable {

    private static final long serialVersionUID = 1L;

    /** Subdirectory of the local directory holding the cache when no directory is configured. */
    static final String DEFAULT_SUBDIR = "forst-rs-cache";

    @Nullable private final String dir;
    private final long sizeLimit;
    private final long reserve;
    private final boolean enabled;

    private DiskCacheSettings(@Nullable String dir, long sizeLimit, long reserve) {
        this.dir = dir;
        this.sizeLimit = sizeLimit;
        this.reserve = reserve;
        this.enabled = (dir != null || sizeLimit > 0) && (sizeLimit > 0 || reserve > 0);
    }

    static DiskCacheSettings fromConfig(ReadableConfig config) {
        String dir =
                config.getOptional(ForStOptions.CACHE_DIRECTORY)
                        .map(String::trim)
                        .filter(d -> !d.isEmpty())
                        .map(DiskCacheSettings::localPath)
                        .orElse(null);
        MemorySize limit = config.get(ForStOptions.CACHE_SIZE_BASE_LIMIT);
        MemorySize reserve = config.get(ForStOptions.CACHE_RESERVED_SIZE);
        return new DiskCacheSettings(dir, limit.getBytes(), reserve.getBytes());
    }

    /** An absolute local path from a plain path or a {@code file:} URI. */
    private static String localPath(String value) {
        String key = ForStOptions.CACHE_DIRECTORY.key();
        File file;
        if (value.startsWith("/")) {
            file = new File(value);
        } else {
            try {
                URI uri = new URI(value);
                if (!"file".equalsIgnoreCase(uri.getScheme()) || uri.getPath() == null) {
                    throw new IllegalConfigurationException(
                            "Invalid value for '"
                                    + key
                                    + "': "
                                    + value
                                    + " (the disk cache needs an absolute local path)");
                }
                file = new File(uri.getPath());
            } catch (URISyntaxException e) {
                throw new IllegalConfigurationException(
                        "Invalid value for '" + key + "': " + value + " (" + e.getMessage() + ")",
                        e);
            }
        }
        if (!file.isAbsolute()) {
            throw new IllegalConfigurationException(
                    "Invalid value for '" + key + "': " + value + " (not an absolute path)");
        }
        return file.getAbsolutePath();
    }

    public boolean isEnabled() {
        return enabled;
    }

    /**
     * The storage keys of {@code ForStNative.open} for this cache (none when off); the cache lives
     * in {@code cache.dir}, else under {@code localDir}.
     */
    public List<String> nativeOptions(File localDir) {
        if (!enabled) {
            return List.of();
        }
        String directory =
                dir != null ? dir : new File(localDir, DEFAULT_SUBDIR).getAbsolutePath();
        return List.of(
                "cache.dir",
                directory,
                "cache.size-limit",
                Long.toString(sizeLimit),
                "cache.reserve-size",
                Long.toString(reserve));
    }

    @Override
    public String toString() {
        return enabled
                ? "DiskCache{dir="
                        + (dir == null ? "<local-dir>/" + DEFAULT_SUBDIR : dir)
                        + ", sizeLimit="
                        + sizeLimit
                        + ", reserve="
                        + reserve
                        + "}"
                : "DiskCache{off}";
    }
}
