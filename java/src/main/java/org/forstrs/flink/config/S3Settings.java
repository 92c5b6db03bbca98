package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;

import org.forstrs.flink.config.S3Keys.FlinkKey;
import org.forstrs.flink.config.S3Keys.Reader;
import org.forstrs.flink.config.S3Keys.Setting;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * How the native store reaches S3 and S3-compatible stores (MinIO, Ceph, moto, ...) for {@code
 * s3://} directories, from the {@code s3.*} keys of Flink's S3 file systems: FLIP-555's native one
 * and the Presto and Hadoop plugins ({@link S3Keys} lists them). What is not set comes from the
 * task manager's {@code AWS_*} environment and then from instance or container credentials.
 *
 * <p>Precedence, per setting: {@code state.backend.forst.} followed by the FLIP-555 key (for
 * example {@code state.backend.forst.s3.endpoint}) wins, for the working directory alone; else
 * every Flink key of the setting that is set must agree (after reading: {@code 64M} equals {@code
 * 67108864}), or the configuration fails naming two of them. An invalid value fails naming its
 * key. Secrets (secret key, session token, SSE-C key) never appear in messages or {@link
 * #toString()}.
 */
public final class S3Settings implements Serializable {

    private static final long serialVersionUID = 2L;

    /** Our keys: each overrides Flink's keys of its setting. */
    public static final List<ConfigOption<?>> ALL = ourOptions();

    /** Storage key of {@code ForStNative.open} to value, in the settings' order. */
    private final LinkedHashMap<String, String> storage;

    private S3Settings(LinkedHashMap<String, String> storage) {
        this.storage = storage;
    }

    private static List<ConfigOption<?>> ourOptions() {
        List<ConfigOption<?>> options = new ArrayList<>();
        for (Setting setting : Setting.values()) {
            if (setting.ourKey == null) {
                continue;
            }
            ConfigOption<String> option =
                    ConfigOptions.key(setting.ourKey)
                            .stringType()
                            .noDefaultValue()
                            .withDescription(
                                    "For s3:// directories of ForSt-RS alone, overrides Flink's"
                                            + " keys: "
                                            + String.join(", ", S3Keys.keysOf(setting)));
            if (setting == Setting.PATH_STYLE) {
                option = option.withFallbackKeys(ForStOptions.PREFIX + "s3.path-style-access");
            }
            options.add(option);
        }
        return List.copyOf(options);
    }

    /** A value and the key it came from. */
    private record Found(String key, String value) {}

    /** Reads and checks the S3 keys of {@code config}; a bad value fails naming its key. */
    public static S3Settings fromConfig(ReadableConfig config) {
        Map<String, String> set = config.toMap();
        EnumMap<Setting, Found> found = new EnumMap<>(Setting.class);
        for (Setting setting : Setting.values()) {
            Found value = resolve(setting, set);
            if (value != null) {
                found.put(setting, value);
            }
        }
        completeEndpoint(found);
        resolveEncryption(found, set);
        Found access = found.get(Setting.ACCESS_KEY);
        Found secret = found.get(Setting.SECRET_KEY);
        if ((access == null) != (secret == null)) {
            throw new IllegalConfigurationException(
                    "'%s' is set but '%s' is not: set both, or neither to use the AWS"
                            + " environment or instance credentials",
                    (access == null ? secret : access).key(),
                    access == null ? "s3.access-key" : "s3.secret-key");
        }
        logKeysWithoutEquivalent(set);
        LinkedHashMap<String, String> storage = new LinkedHashMap<>();
        for (Setting setting : Setting.values()) {
            Found value = found.get(setting);
            if (value != null && setting.storageKey != null) {
                storage.put(setting.storageKey, value.value());
            }
        }
        return new S3Settings(storage);
    }

    /**
     * The value of {@code setting}: our key's if set, else the one value all of Flink's keys
     * that are set agree on; null when none is set.
     */
    @Nullable
    private static Found resolve(Setting setting, Map<String, String> set) {
        for (String ours : ourKeys(setting)) {
            if (set.containsKey(ours)) {
                String value = ourReader(setting).read(ours, set.get(ours));
                return value == null ? null : new Found(ours, value);
            }
        }
        Found first = null;
        for (FlinkKey key : S3Keys.KEYS.values()) {
            if (key.setting() != setting || !set.containsKey(key.key())) {
                continue;
            }
            String value = key.reader().read(key.key(), set.get(key.key()));
            if (value == null) {
                continue;
            }
            Found next = new Found(key.key(), value);
            if (first == null) {
                first = next;
            } else if (!first.value().equals(value)) {
                throw conflict(setting, first, next);
            }
        }
        return first;
    }

    private static List<String> ourKeys(Setting setting) {
        if (setting.ourKey == null) {
            return List.of();
        }
        if (setting == Setting.PATH_STYLE) {
            return List.of(setting.ourKey, ForStOptions.PREFIX + "s3.path-style-access");
        }
        return List.of(setting.ourKey);
    }

    private static Reader ourReader(Setting setting) {
        switch (setting) {
            case ANONYMOUS:
                return S3Keys::bool;
            case SSE:
                return (key, value) -> {
                    try {
                        return S3Keys.sseType(key, value);
                    } catch (IllegalConfigurationException e) {
                        return S3Keys.sseAlgorithm(key, value);
                    }
                };
            case SSE_CUSTOMER_KEY:
                return S3Keys::text;
            default:
                return S3Keys.KEYS.values().stream()
                        .filter(k -> k.setting() == setting)
                        .findFirst()
                        .map(FlinkKey::reader)
                        .orElseThrow();
        }
    }

    private static IllegalConfigurationException conflict(Setting setting, Found a, Found b) {
        return new IllegalConfigurationException(
                "S3 keys disagree: '%s' (%s) and '%s' (%s) both set the %s of the ForSt-RS native"
                        + " S3 store; give them one value, remove one, or set '%s' for the"
                        + " ForSt-RS working directory",
                a.key(),
                shown(setting, a.value()),
                b.key(),
                shown(setting, b.value()),
                setting.name().toLowerCase().replace('_', ' '),
                setting.ourKey == null ? ForStOptions.PREFIX + a.key() : setting.ourKey);
    }

    private static String shown(Setting setting, String value) {
        return setting.secret ? "<redacted>" : value;
    }

    /** A bare host[:port] endpoint is https unless an ssl.enabled key says false. */
    private static void completeEndpoint(Map<Setting, Found> found) {
        Found endpoint = found.get(Setting.ENDPOINT);
        if (endpoint == null) {
            return;
        }
        Found ssl = found.get(Setting.SSL);
        String value = endpoint.value();
        if (!value.contains("://") && ssl != null && ssl.value().equals("false")) {
            value = "http://" + value;
        }
        checkEndpoint(endpoint.key(), value);
        found.put(Setting.ENDPOINT, new Found(endpoint.key(), value));
    }

    /**
     * Settles encryption: Presto's {@code sse.enabled: false} must not meet a type, its {@code
     * true} alone means SSE-S3; S3A's key is the KMS key id for SSE-KMS and the customer key for
     * SSE-C; a KMS key id without SSE-KMS is ignored, as by Flink's plugins.
     */
    private static void resolveEncryption(Map<Setting, Found> found, Map<String, String> set) {
        Found type = found.get(Setting.SSE);
        Found enabled = found.remove(Setting.SSE_ENABLED);
        if (enabled != null && type != null && !type.value().equals("none")) {
            throw conflict(Setting.SSE, enabled, type);
        }
        if (enabled != null) {
            type = enabled;
        } else if (type == null && prestoSseSwitchedOn(set)) {
            type = new Found("s3.sse.enabled", "AES256");
        }
        if (type != null) {
            found.put(Setting.SSE, type);
        }
        String kind = type == null ? "none" : type.value();
        Found hadoopKey = found.remove(Setting.SSE_HADOOP_KEY);
        boolean kms = kind.equals("aws:kms") || kind.equals("aws:kms:dsse");
        Setting keySetting = kms ? Setting.SSE_KMS_KEY_ID : Setting.SSE_CUSTOMER_KEY;
        if (hadoopKey != null && (kms || kind.equals("sse-c"))) {
            Found other = found.get(keySetting);
            if (other != null && !other.value().equals(hadoopKey.value())) {
                if (!other.key().startsWith(ForStOptions.PREFIX)) {
                    throw conflict(keySetting, other, hadoopKey);
                }
            } else {
                found.put(keySetting, hadoopKey);
            }
        }
        if (!kms) {
            found.remove(Setting.SSE_KMS_KEY_ID);
        }
        if (!kind.equals("sse-c")) {
            found.remove(Setting.SSE_CUSTOMER_KEY);
        } else if (!found.containsKey(Setting.SSE_CUSTOMER_KEY)) {
            throw new IllegalConfigurationException(
                    "'%s' asks for SSE-C but no customer key is set (the base64 of a 256-bit"
                            + " key in 'fs.s3a.encryption.key', or '%s')",
                    type.key(),
                    Setting.SSE_CUSTOMER_KEY.ourKey);
        }
    }

    private static boolean prestoSseSwitchedOn(Map<String, String> set) {
        return S3Keys.keysOf(Setting.SSE_ENABLED).stream()
                .anyMatch(key -> "true".equalsIgnoreCase(Objects.toString(set.get(key), "").trim()));
    }

    private static void logKeysWithoutEquivalent(Map<String, String> set) {
        S3Keys.NO_EQUIVALENT.forEach(
                (key, reason) -> {
                    if (set.containsKey(key)) {
                        LogOnce.info(
                                "{}: accepted, has no effect on the ForSt-RS native S3 store ({})",
                                key,
                                reason);
                    }
                });
        S3Keys.UNSUPPORTED.forEach(
                (key, reason) -> {
                    if (set.containsKey(key)) {
                        LogOnce.warn("{}: not applied by the ForSt-RS native S3 store: {}", key, reason);
                    }
                });
    }

    private static void checkEndpoint(String key, String endpoint) {
        String url = endpoint.contains("://") ? endpoint : "https://" + endpoint;
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalConfigurationException(
                    "Invalid value for '%s': '%s' (%s)", key, endpoint, e.getMessage());
        }
        String scheme = uri.getScheme();
        if (!("http".equalsIgnoreCase(scheme) || "https".equalsIgnoreCase(scheme))
                || uri.getHost() == null) {
            throw new IllegalConfigurationException(
                    "Invalid value for '%s': '%s' (need http://host[:port], https://host[:port]"
                            + " or host[:port])",
                    key,
                    endpoint);
        }
    }

    /**
     * The storage keys of {@code ForStNative.open} for these settings, as key/value pairs; empty
     * when nothing is set (the AWS environment then decides everything).
     */
    public List<String> nativeOptions() {
        List<String> pairs = new ArrayList<>();
        storage.forEach(
                (key, value) -> {
                    pairs.add(key);
                    pairs.add(value);
                });
        return pairs;
    }

    /** The value of a storage key ({@code s3.endpoint}, {@code s3.multipart.part-size}, ...). */
    @Nullable
    String storageValue(String storageKey) {
        return storage.get(storageKey);
    }

    @Nullable
    public String getEndpoint() {
        return storage.get(Setting.ENDPOINT.storageKey);
    }

    @Nullable
    public String getAccessKey() {
        return storage.get(Setting.ACCESS_KEY.storageKey);
    }

    /** Whether a secret key is configured (the secret itself is only passed to the engine). */
    public boolean hasSecretKey() {
        return storage.containsKey(Setting.SECRET_KEY.storageKey);
    }

    @Nullable
    public Boolean getPathStyle() {
        String value = storage.get(Setting.PATH_STYLE.storageKey);
        return value == null ? null : Boolean.valueOf(value);
    }

    @Nullable
    public String getRegion() {
        return storage.get(Setting.REGION.storageKey);
    }

    @Override
    public String toString() {
        Map<String, String> shown = new LinkedHashMap<>();
        for (Setting setting : Setting.values()) {
            String value = setting.storageKey == null ? null : storage.get(setting.storageKey);
            if (value != null) {
                shown.put(setting.storageKey, shown(setting, value));
            }
        }
        return "S3Settings" + shown;
    }
}
