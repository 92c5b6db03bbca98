package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How the native store reaches S3 and S3-compatible stores (MinIO, Ceph, moto, ...) for {@code
 * s3://} working directories, from Flink's own {@code s3.*} keys (those Flink's S3 file-system
 * plugins read), each of which a {@code state.backend.forst.s3.*} key of the same name overrides
 * for the working directory alone. What is not set comes from the task manager's {@code AWS_*}
 * environment and then from instance or container credentials, as with the AWS SDKs.
 *
 * <p>The secret key never appears in {@link #toString()}.
 */
public final class S3Settings implements Serializable {

    private static final long serialVersionUID = 1L;

    private static final String OURS = ForStOptions.PREFIX;

    public static final ConfigOption<String> ENDPOINT =
            ConfigOptions.key(OURS + "s3.endpoint")
                    .stringType()
                    .noDefaultValue()
                    .withFallbackKeys("s3.endpoint")
                    .withDescription(
                            "S3 endpoint of s3:// working directories: http(s)://host[:port], or"
                                    + " host[:port] for https. Plain http is used exactly when"
                                    + " the endpoint says http://. Default: 's3.endpoint', else"
                                    + " AWS_ENDPOINT, else AWS.");

    public static final ConfigOption<String> ACCESS_KEY =
            ConfigOptions.key(OURS + "s3.access-key")
                    .stringType()
                    .noDefaultValue()
                    .withFallbackKeys("s3.access-key", "s3.access.key")
                    .withDescription(
                            "Access key of s3:// working directories. Default: 's3.access-key',"
                                    + " else AWS_ACCESS_KEY_ID, else instance credentials.");

    public static final ConfigOption<String> SECRET_KEY =
            ConfigOptions.key(OURS + "s3.secret-key")
                    .stringType()
                    .noDefaultValue()
                    .withFallbackKeys("s3.secret-key", "s3.secret.key")
                    .withDescription(
                            "Secret key of s3:// working directories. Default: 's3.secret-key',"
                                    + " else AWS_SECRET_ACCESS_KEY, else instance credentials.");

    public static final ConfigOption<Boolean> PATH_STYLE_ACCESS =
            ConfigOptions.key(OURS + "s3.path.style.access")
                    .booleanType()
                    .noDefaultValue()
                    .withFallbackKeys("s3.path.style.access", "s3.path-style-access")
                    .withDescription(
                            "true: the bucket in the path (endpoint/bucket/key), what MinIO and"
                                    + " most S3-compatible stores need; false: in the host name"
                                    + " (bucket.endpoint/key). Unset: path style (AWS serves it"
                                    + " too), or AWS_VIRTUAL_HOSTED_STYLE_REQUEST.");

    public static final ConfigOption<String> REGION =
            ConfigOptions.key(OURS + "s3.region")
                    .stringType()
                    .noDefaultValue()
                    .withFallbackKeys("s3.region", "s3.endpoint.region")
                    .withDescription(
                            "Region requests are signed for. Default: 's3.region', else"
                                    + " AWS_REGION / AWS_DEFAULT_REGION, else us-east-1.");

    /** Every S3 key this class reads: ours (state.backend.forst.s3.*) with Flink's as fallback. */
    public static final List<ConfigOption<?>> ALL =
            List.of(ENDPOINT, ACCESS_KEY, SECRET_KEY, PATH_STYLE_ACCESS, REGION);

    @Nullable private final String endpoint;
    @Nullable private final String accessKey;
    @Nullable private final String secretKey;
    @Nullable private final Boolean pathStyle;
    @Nullable private final String region;

    private S3Settings(
            @Nullable String endpoint,
            @Nullable String accessKey,
            @Nullable String secretKey,
            @Nullable Boolean pathStyle,
            @Nullable String region) {
        this.endpoint = endpoint;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
        this.pathStyle = pathStyle;
        this.region = region;
    }

    /** Reads and checks the S3 keys of {@code config}; a bad value fails naming its key. */
    public static S3Settings fromConfig(ReadableConfig config) {
        String endpoint = text(config, ENDPOINT);
        if (endpoint != null) {
            checkEndpoint(keyInUse(config, ENDPOINT), endpoint);
        }
        String accessKey = text(config, ACCESS_KEY);
        String secretKey = text(config, SECRET_KEY);
        if ((accessKey == null) != (secretKey == null)) {
            throw new IllegalConfigurationException(
                    "'%s' is set but '%s' is not: set both, or neither to use the AWS"
                            + " environment or instance credentials",
                    keyInUse(config, accessKey == null ? SECRET_KEY : ACCESS_KEY),
                    accessKey == null ? "s3.access-key" : "s3.secret-key");
        }
        Boolean pathStyle = ForStBackendConfig.getOptional(config, PATH_STYLE_ACCESS).orElse(null);
        return new S3Settings(endpoint, accessKey, secretKey, pathStyle, text(config, REGION));
    }

    @Nullable
    private static String text(ReadableConfig config, ConfigOption<String> option) {
        String value = config.getOptional(option).map(String::trim).orElse("");
        return value.isEmpty() ? null : value;
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

    /** The key {@code option}'s value comes from: ours, or the Flink key in use. */
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

    /**
     * The storage keys of {@code ForStNative.open} for these settings, as key/value pairs; empty
     * when nothing is set (the AWS environment then decides everything).
     */
    public List<String> nativeOptions() {
        List<String> pairs = new ArrayList<>();
        add(pairs, "s3.endpoint", endpoint);
        add(pairs, "s3.access-key", accessKey);
        add(pairs, "s3.secret-key", secretKey);
        add(pairs, "s3.path-style", pathStyle == null ? null : pathStyle.toString());
        add(pairs, "s3.region", region);
        return pairs;
    }

    private static void add(List<String> pairs, String key, @Nullable String value) {
        if (value != null) {
            pairs.add(key);
            pairs.add(value);
        }
    }

    @Nullable
    public String getEndpoint() {
        return endpoint;
    }

    @Nullable
    public String getAccessKey() {
        return accessKey;
    }

    /** Whether a secret key is configured (the secret itself is only passed to the engine). */
    public boolean hasSecretKey() {
        return secretKey != null;
    }

    @Nullable
    public Boolean getPathStyle() {
        return pathStyle;
    }

    @Nullable
    public String getRegion() {
        return region;
    }

    @Override
    public String toString() {
        return "S3Settings{endpoint="
                + endpoint
                + ", region="
                + region
                + ", pathStyle="
                + pathStyle
                + ", accessKey="
                + accessKey
                + ", secretKey="
                + (secretKey == null ? "null" : "<redacted>")
                + '}';
    }
}
