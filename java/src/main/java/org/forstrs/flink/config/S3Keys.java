package org.forstrs.flink.config;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.util.TimeUtils;

import javax.annotation.Nullable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The S3 keys of Flink's three S3 file systems (flink-s3-fs-native of FLIP-555, flink-s3-fs-presto,
 * flink-s3-fs-hadoop) that the native S3 store honours, each with the setting it feeds and how its
 * value reads, and those it accepts without an equivalent, each with the reason.
 *
 * <p>The Presto plugin hands Flink's {@code s3.X} and {@code presto.s3.X} to Presto as {@code
 * presto.s3.X}; the Hadoop plugin hands {@code s3.X}, {@code s3a.X} and {@code fs.s3a.X} to S3A
 * as {@code fs.s3a.X}: so one Presto or S3A property has two or three spellings here.
 */
final class S3Keys {

    /** The Flink file system whose documentation names a key. */
    enum Family {
        NATIVE,
        PRESTO,
        HADOOP
    }

    /** A setting of the native store (several Flink keys may feed one). */
    enum Setting {
        ENDPOINT("s3.endpoint", "s3.endpoint", false),
        /** Only completes a bare endpoint: false makes it http. */
        SSL(null, "s3.ssl.enabled", false),
        ACCESS_KEY("s3.access-key", "s3.access-key", false),
        SECRET_KEY("s3.secret-key", "s3.secret-key", true),
        SESSION_TOKEN("s3.session-token", "s3.session-token", true),
        REGION("s3.region", "s3.region", false),
        PATH_STYLE("s3.path-style", "s3.path.style.access", false),
        ANONYMOUS("s3.anonymous", "s3.anonymous", false),
        SSE("s3.sse", "s3.sse.type", false),
        /** Presto's switch: false means no encryption, true the type (default SSE-S3). */
        SSE_ENABLED(null, "s3.sse.enabled", false),
        SSE_KMS_KEY_ID("s3.sse.kms-key-id", "s3.sse.kms.key-id", false),
        /** S3A's key: the KMS key id for SSE-KMS, the customer key for SSE-C. */
        SSE_HADOOP_KEY(null, null, true),
        SSE_CUSTOMER_KEY("s3.sse.customer-key", "s3.sse.customer-key", true),
        CONNECT_TIMEOUT("s3.connect-timeout-ms", "s3.connection.timeout", false),
        READ_TIMEOUT("s3.read-timeout-ms", "s3.socket.timeout", false),
        REQUEST_TIMEOUT("s3.request-timeout-ms", "s3.request.timeout", false),
        POOL_IDLE_TIMEOUT("s3.pool-idle-timeout-ms", "s3.connection.max-idle-time", false),
        MAX_RETRIES("s3.max-retries", "s3.retry.max-num-retries", false),
        PART_SIZE("s3.multipart.part-size", "s3.upload.min.part.size", false),
        PARTS_IN_FLIGHT(
                "s3.multipart.parts-in-flight", "s3.upload.max.concurrent.uploads", false);

        /** The engine's storage key ({@code ForStNative.open}); null: combined into another. */
        @Nullable final String storageKey;

        /**
         * Our key, {@code state.backend.forst.} and then (where FLIP-555 has one) the native
         * file system's key: it overrides Flink's keys for the working directory alone.
         */
        @Nullable final String ourKey;

        /** Its values never appear in messages or {@code toString()}. */
        final boolean secret;

        Setting(@Nullable String storageKey, @Nullable String flinkName, boolean secret) {
            this.storageKey = storageKey;
            this.ourKey = flinkName == null ? null : ForStOptions.PREFIX + flinkName;
            this.secret = secret;
        }
    }

    /** Reads one key's value as the storage value (null: the key leaves the setting unset). */
    @FunctionalInterface
    interface Reader {
        @Nullable
        String read(String key, String value);
    }

    /** One Flink key: which setting it feeds, how its value reads, who documents it. */
    record FlinkKey(String key, Setting setting, Reader reader, Set<Family> families) {}

    private static final long MIN_PART = 5L << 20;
    private static final long MAX_PART = 5L << 30;

    /** Every honoured Flink key, by key, in the order of the settings. */
    static final Map<String, FlinkKey> KEYS = keys();

    /** Flink keys accepted without effect on the native store, with the reason. */
    static final Map<String, String> NO_EQUIVALENT = noEquivalent();

    /** Keys a TaskManager needs the native store to honour but it cannot: warned once. */
    static final Map<String, String> UNSUPPORTED = unsupported();

    private S3Keys() {}

    private static Map<String, FlinkKey> keys() {
        Map<String, FlinkKey> k = new LinkedHashMap<>();
        Set<Family> all = Set.of(Family.NATIVE, Family.PRESTO, Family.HADOOP);
        Set<Family> nativeOnly = Set.of(Family.NATIVE);
        // endpoint: read by all three plugins as s3.endpoint; S3A's YAML-friendly ".value" alias
        add(k, Setting.ENDPOINT, S3Keys::text, all, "s3.endpoint");
        add(k, Setting.ENDPOINT, S3Keys::text, Set.of(Family.PRESTO), "presto.s3.endpoint");
        hadoop(k, Setting.ENDPOINT, S3Keys::text, "endpoint", "endpoint.value");
        presto(k, Setting.SSL, S3Keys::bool, "ssl.enabled");
        hadoop(k, Setting.SSL, S3Keys::bool, "connection.ssl.enabled");
        // credentials
        add(k, Setting.ACCESS_KEY, S3Keys::text, all, "s3.access-key", "s3.access.key");
        presto(k, Setting.ACCESS_KEY, S3Keys::text, "access-key", "access.key");
        hadoop(k, Setting.ACCESS_KEY, S3Keys::text, "access.key", "access-key");
        add(k, Setting.SECRET_KEY, S3Keys::text, all, "s3.secret-key", "s3.secret.key");
        presto(k, Setting.SECRET_KEY, S3Keys::text, "secret-key", "secret.key");
        hadoop(k, Setting.SECRET_KEY, S3Keys::text, "secret.key", "secret-key");
        hadoop(k, Setting.SESSION_TOKEN, S3Keys::text, "session.token");
        add(k, Setting.ANONYMOUS, S3Keys::providers, nativeOnly, "fs.s3.aws.credentials.provider");
        hadoop(k, Setting.ANONYMOUS, S3Keys::providers, "aws.credentials.provider");
        presto(k, Setting.ANONYMOUS, S3Keys::providers, "credentials-provider");
        // region and addressing
        add(k, Setting.REGION, S3Keys::text, nativeOnly, "s3.region");
        hadoop(k, Setting.REGION, S3Keys::text, "endpoint.region");
        add(k, Setting.PATH_STYLE, S3Keys::bool, nativeOnly, "s3.path-style-access");
        add(k, Setting.PATH_STYLE, S3Keys::bool, all, "s3.path.style.access");
        presto(k, Setting.PATH_STYLE, S3Keys::bool, "path-style-access", "path.style.access");
        hadoop(k, Setting.PATH_STYLE, S3Keys::bool, "path.style.access", "path-style-access");
        // server-side encryption
        add(k, Setting.SSE, S3Keys::sseType, Set.of(Family.NATIVE, Family.PRESTO), "s3.sse.type");
        add(k, Setting.SSE, S3Keys::sseType, Set.of(Family.PRESTO), "presto.s3.sse.type");
        hadoop(
                k,
                Setting.SSE,
                S3Keys::sseAlgorithm,
                "encryption.algorithm",
                "server-side-encryption-algorithm");
        presto(k, Setting.SSE_ENABLED, S3Keys::sseEnabled, "sse.enabled");
        add(k, Setting.SSE_KMS_KEY_ID, S3Keys::text, nativeOnly, "s3.sse.kms.key-id");
        presto(k, Setting.SSE_KMS_KEY_ID, S3Keys::text, "sse.kms-key-id");
        hadoop(k, Setting.SSE_HADOOP_KEY, S3Keys::text, "encryption.key", "server-side-encryption.key");
        // HTTP client
        add(k, Setting.CONNECT_TIMEOUT, S3Keys::millis, nativeOnly, "s3.connection.timeout");
        presto(k, Setting.CONNECT_TIMEOUT, S3Keys::millis, "connect-timeout");
        hadoop(k, Setting.CONNECT_TIMEOUT, S3Keys::millis, "connection.establish.timeout");
        add(k, Setting.READ_TIMEOUT, S3Keys::millis, nativeOnly, "s3.socket.timeout");
        presto(k, Setting.READ_TIMEOUT, S3Keys::millis, "socket-timeout");
        // s3.connection.timeout is FLIP-555's connect timeout; S3A's socket timeout keeps its
        // other two spellings.
        add(
                k,
                Setting.READ_TIMEOUT,
                S3Keys::millis,
                Set.of(Family.HADOOP),
                "s3a.connection.timeout",
                "fs.s3a.connection.timeout");
        hadoop(k, Setting.REQUEST_TIMEOUT, S3Keys::requestTimeout, "connection.request.timeout");
        add(
                k,
                Setting.POOL_IDLE_TIMEOUT,
                S3Keys::millis,
                nativeOnly,
                "s3.connection.max-idle-time");
        hadoop(k, Setting.POOL_IDLE_TIMEOUT, S3Keys::millis, "connection.idle.time");
        add(k, Setting.MAX_RETRIES, count(0, 1000), nativeOnly, "s3.retry.max-num-retries");
        presto(k, Setting.MAX_RETRIES, count(0, 1000), "max-error-retries");
        hadoop(k, Setting.MAX_RETRIES, count(0, 1000), "attempts.maximum");
        // uploads
        add(
                k,
                Setting.PART_SIZE,
                bytes(MIN_PART, MAX_PART),
                all,
                "s3.upload.min.part.size");
        presto(k, Setting.PART_SIZE, bytes(MIN_PART, MAX_PART), "multipart.min-part-size");
        hadoop(k, Setting.PART_SIZE, bytes(MIN_PART, MAX_PART), "multipart.size");
        add(
                k,
                Setting.PARTS_IN_FLIGHT,
                count(1, 1024),
                all,
                "s3.upload.max.concurrent.uploads");
        hadoop(k, Setting.PARTS_IN_FLIGHT, count(1, 1024), "fast.upload.active.blocks");
        return Collections.unmodifiableMap(k);
    }

    private static void add(
            Map<String, FlinkKey> keys,
            Setting setting,
            Reader reader,
            Set<Family> families,
            String... names) {
        for (String name : names) {
            FlinkKey previous = keys.put(name, new FlinkKey(name, setting, reader, families));
            if (previous != null) {
                throw new IllegalStateException("S3 key listed twice: " + name);
            }
        }
    }

    /** As add, skipping a key already listed (the spellings of different plugins coincide). */
    private static void addDistinct(
            Map<String, FlinkKey> keys,
            Setting setting,
            Reader reader,
            Set<Family> families,
            String... names) {
        for (String name : names) {
            keys.putIfAbsent(name, new FlinkKey(name, setting, reader, families));
        }
    }

    /** A Presto property: presto.s3.X, and s3.X unless another plugin's key spells it so. */
    private static void presto(
            Map<String, FlinkKey> keys, Setting setting, Reader reader, String... suffixes) {
        for (String suffix : suffixes) {
            addDistinct(keys, setting, reader, Set.of(Family.PRESTO), "s3." + suffix);
            add(keys, setting, reader, Set.of(Family.PRESTO), "presto.s3." + suffix);
        }
    }

    /** An S3A property: fs.s3a.X, s3a.X, and s3.X unless another plugin's key spells it so. */
    private static void hadoop(
            Map<String, FlinkKey> keys, Setting setting, Reader reader, String... suffixes) {
        for (String suffix : suffixes) {
            addDistinct(keys, setting, reader, Set.of(Family.HADOOP), "s3." + suffix);
            add(keys, setting, reader, Set.of(Family.HADOOP), "s3a." + suffix);
            add(keys, setting, reader, Set.of(Family.HADOOP), "fs.s3a." + suffix);
        }
    }

    private static Map<String, String> noEquivalent() {
        Map<String, String> r = new LinkedHashMap<>();
        String pool =
                "the native store's HTTP client opens connections as requests need them; the"
                        + " engine bounds its own concurrent I/O";
        String exactRanges =
                "the engine reads exactly the byte ranges it needs (blocks, and compaction's"
                        + " state.backend.forst.engine.compaction-readahead-bytes)";
        String oneRetryLayer =
                "the native store retries each request (s3.retry.max-num-retries) and has no"
                        + " second retry layer";
        String pluginInternals = "it tunes the Flink plugin's own client";
        r.put("s3.chunked-encoding.enabled", "the native store never uses aws-chunked uploads");
        r.put(
                "s3.checksum-validation.enabled",
                "uploads are signed with their SHA-256 payload hash and every block the engine"
                        + " reads is checked against its own checksum");
        r.put("s3.bulk-copy.enabled", "copies inside S3 are always server-side CopyObject calls");
        r.put("s3.bulk-copy.max-concurrent", pluginInternals);
        r.put("s3.async.enabled", "the native store is always asynchronous");
        r.put("s3.close.timeout", pluginInternals);
        r.put("s3.client.close.timeout", pluginInternals);
        r.put("s3.connection.max", pool);
        r.put("s3.max-connections", pool);
        r.put("presto.s3.max-connections", pool);
        spellings(r, "connection.maximum", pool);
        r.put("s3.read.buffer.size", exactRanges);
        spellings(r, "readahead.range", exactRanges);
        r.put("s3.max-client-retries", oneRetryLayer);
        r.put("presto.s3.max-client-retries", oneRetryLayer);
        spellings(r, "retry.limit", oneRetryLayer);
        r.put(
                "s3.use-instance-credentials",
                "the native store falls back to instance credentials whenever no key is set");
        r.put(
                "presto.s3.use-instance-credentials",
                "the native store falls back to instance credentials whenever no key is set");
        r.put(
                "s3.multipart.min-file-size",
                "files go up in one request up to one part's size (s3.upload.min.part.size)");
        r.put(
                "s3.entropy.key",
                "Flink injects entropy into the checkpoint files it writes itself; the ForSt-RS"
                        + " working directory and the SST files it hands over to checkpoints"
                        + " keep their paths, the key included, as Flink's FileSystem reads"
                        + " and deletes them by those paths");
        r.put("s3.entropy.length", "see s3.entropy.key");
        return Collections.unmodifiableMap(r);
    }

    private static Map<String, String> unsupported() {
        Map<String, String> r = new LinkedHashMap<>();
        String assumeRole =
                "the native store does not assume IAM roles; it signs with the configured keys,"
                        + " else the AWS_* environment (web identity included), else container"
                        + " or instance credentials. Give the TaskManagers credentials of the"
                        + " role, or set state.backend.forst.fs.force-proxy: true to reach S3"
                        + " through Flink's S3 plugin";
        for (String key :
                List.of(
                        "s3.assume-role.arn",
                        "s3.assume-role.external-id",
                        "s3.assume-role.session-name",
                        "s3.assume-role.session-duration")) {
            r.put(key, assumeRole);
        }
        spellings(r, "assumed.role.arn", assumeRole);
        return Collections.unmodifiableMap(r);
    }

    private static void spellings(Map<String, String> reasons, String s3aSuffix, String reason) {
        for (String prefix : List.of("s3.", "s3a.", "fs.s3a.")) {
            reasons.put(prefix + s3aSuffix, reason);
        }
    }

    // ---- value readers: each fails naming its key ----

    static IllegalConfigurationException invalid(String key, String value, String why) {
        return new IllegalConfigurationException(
                "Invalid value for '%s': '%s' (%s)", key, value, why);
    }

    @Nullable
    static String text(String key, String value) {
        String trimmed = value.trim();
        return trimmed.isEmpty() ? null : trimmed;
    }

    static String bool(String key, String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (!v.equals("true") && !v.equals("false")) {
            throw invalid(key, value, "need true or false");
        }
        return v;
    }

    /** A duration as milliseconds: Flink's syntax ("60 s", "500ms"; a bare number is ms). */
    static String millis(String key, String value) {
        Duration duration;
        try {
            duration = TimeUtils.parseDuration(value.trim());
        } catch (RuntimeException e) {
            throw invalid(key, value, "need a duration such as 60s or 500ms");
        }
        if (duration.isNegative() || duration.isZero()) {
            throw invalid(key, value, "need a positive duration");
        }
        return Long.toString(duration.toMillis());
    }

    /**
     * S3A's request timeout: a unit is required (Hadoop 3.3 reads a bare number as seconds, later
     * versions as milliseconds); 0 (no timeout) leaves the native store's own.
     */
    @Nullable
    static String requestTimeout(String key, String value) {
        String v = value.trim();
        if (v.equals("0")) {
            return null;
        }
        if (v.chars().allMatch(Character::isDigit)) {
            throw invalid(
                    key, value, "give a unit, such as 60s: Hadoop versions read a bare number"
                            + " differently");
        }
        return millis(key, value);
    }

    static Reader count(int min, int max) {
        return (key, value) -> {
            try {
                int n = Integer.parseInt(value.trim());
                if (n >= min && n <= max) {
                    return Integer.toString(n);
                }
            } catch (NumberFormatException ignored) {
                // reported below
            }
            throw invalid(key, value, "need a whole number from " + min + " to " + max);
        };
    }

    /** A size in bytes: a number, or with a unit as Flink, Presto and Hadoop write it (64M). */
    static Reader bytes(long min, long max) {
        return (key, value) -> {
            long bytes;
            try {
                bytes = MemorySize.parse(value.trim()).getBytes();
            } catch (RuntimeException e) {
                throw invalid(key, value, "need a size such as 8388608 or 8m");
            }
            if (bytes < min || bytes > max) {
                throw invalid(
                        key, value, "S3 takes parts from 5 MiB (5242880) to 5 GiB (5368709120)");
            }
            return Long.toString(bytes);
        };
    }

    /** FLIP-555's and Presto's s3.sse.type (none, sse-s3/AES256/S3, sse-kms/aws:kms/KMS). */
    static String sseType(String key, String value) {
        String v = value.trim().toUpperCase(Locale.ROOT).replace('-', '_').replace(':', '_');
        switch (v) {
            case "NONE":
                return "none";
            case "SSE_S3":
            case "AES256":
            case "S3":
                return "AES256";
            case "SSE_KMS":
            case "AWS_KMS":
            case "KMS":
                return "aws:kms";
            default:
                throw invalid(key, value, "need none, sse-s3 (AES256) or sse-kms (aws:kms)");
        }
    }

    /** S3A's encryption algorithm; client-side encryption has no equivalent and fails. */
    @Nullable
    static String sseAlgorithm(String key, String value) {
        String v = value.trim().toUpperCase(Locale.ROOT);
        switch (v) {
            case "":
            case "NONE":
                return "none";
            case "AES256":
            case "SSE-S3":
                return "AES256";
            case "SSE-KMS":
                return "aws:kms";
            case "DSSE-KMS":
                return "aws:kms:dsse";
            case "SSE-C":
                return "sse-c";
            case "CSE-KMS":
            case "CSE-CUSTOM":
                throw invalid(
                        key,
                        value,
                        "the ForSt-RS native S3 store has no client-side encryption; use"
                                + " server-side encryption, or set"
                                + " state.backend.forst.fs.force-proxy: true to reach S3 through"
                                + " Flink's S3 plugin");
            default:
                throw invalid(key, value, "need AES256, SSE-KMS, DSSE-KMS or SSE-C");
        }
    }

    /** Presto's switch: false is no encryption; true leaves the type to s3.sse.type. */
    @Nullable
    static String sseEnabled(String key, String value) {
        return bool(key, value).equals("false") ? "none" : null;
    }

    private static final Set<String> ANONYMOUS_PROVIDERS =
            Set.of("AnonymousCredentialsProvider", "AnonymousAWSCredentialsProvider");

    /** Providers whose credentials the native store's own chain finds as well. */
    private static final Set<String> CHAIN_PROVIDERS =
            Set.of(
                    "DefaultCredentialsProvider",
                    "DefaultAWSCredentialsProviderChain",
                    "EnvironmentVariableCredentialsProvider",
                    "SimpleAWSCredentialsProvider",
                    "TemporaryAWSCredentialsProvider",
                    "StaticCredentialsProvider",
                    "InstanceProfileCredentialsProvider",
                    "IAMInstanceCredentialsProvider",
                    "ContainerCredentialsProvider",
                    "EC2ContainerCredentialsProviderWrapper",
                    "WebIdentityTokenFileCredentialsProvider",
                    "WebIdentityTokenCredentialsProvider");

    /**
     * A credentials provider list: "true" (unsigned requests) when every provider is anonymous,
     * else "false"; providers the native store's chain does not cover are warned about once.
     */
    static String providers(String key, String value) {
        List<String> names = new ArrayList<>();
        for (String name : value.split(",")) {
            String simple = name.trim().substring(name.trim().lastIndexOf('.') + 1);
            if (!simple.isEmpty()) {
                names.add(simple);
            }
        }
        if (names.isEmpty()) {
            throw invalid(key, value, "need credentials provider class names");
        }
        if (ANONYMOUS_PROVIDERS.containsAll(names)) {
            return "true";
        }
        List<String> uncovered =
                names.stream().filter(n -> !CHAIN_PROVIDERS.contains(n)).toList();
        if (!uncovered.isEmpty()) {
            LogOnce.warn(
                    "{}: {} not applied by the ForSt-RS native S3 store, which signs with the"
                            + " configured keys, else the AWS_* environment (web identity"
                            + " included), else container or instance credentials (anonymous"
                            + " only when every provider listed is anonymous); set"
                            + " state.backend.forst.fs.force-proxy: true to reach S3 through"
                            + " Flink's S3 plugin",
                    key,
                    uncovered);
        }
        return "false";
    }

    /**
     * Every Flink S3 key the native store reads: those it honours, those it accepts without
     * effect and those it warns about.
     */
    static Set<String> flinkKeys() {
        Set<String> keys = new LinkedHashSet<>(KEYS.keySet());
        keys.addAll(NO_EQUIVALENT.keySet());
        keys.addAll(UNSUPPORTED.keySet());
        return Collections.unmodifiableSet(keys);
    }

    /** The Flink keys of {@code setting}, in table order (for messages and docs). */
    static List<String> keysOf(Setting setting) {
        return KEYS.values().stream().filter(k -> k.setting() == setting).map(FlinkKey::key).toList();
    }
}
