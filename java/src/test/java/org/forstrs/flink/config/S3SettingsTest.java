package org.forstrs.flink.config;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.ForStStateBackendFactory;
import org.forstrs.flink.config.S3Keys.Family;
import org.forstrs.flink.config.S3Keys.FlinkKey;
import org.forstrs.flink.config.S3Keys.Setting;
import org.forstrs.flink.state.NativeDb;

import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The S3 keys of Flink's three S3 file systems (FLIP-555's native one, Presto, Hadoop) become the
 * engine's S3 settings; conflicts and bad values fail naming the keys; secrets never show.
 */
class S3SettingsTest {

    private static final String SECRET = "wJalrXUtnFEMI-secret";

    /** Every key of Flink 2.3's flink-s3-fs-native (NativeS3FileSystemFactory's options). */
    private static final List<String> FLIP_555_KEYS =
            List.of(
                    "s3.access-key",
                    "s3.secret-key",
                    "s3.region",
                    "s3.endpoint",
                    "s3.path-style-access",
                    "s3.chunked-encoding.enabled",
                    "s3.checksum-validation.enabled",
                    "s3.upload.min.part.size",
                    "s3.upload.max.concurrent.uploads",
                    "s3.entropy.key",
                    "s3.entropy.length",
                    "s3.bulk-copy.enabled",
                    "s3.connection.max",
                    "s3.bulk-copy.max-concurrent",
                    "s3.async.enabled",
                    "s3.read.buffer.size",
                    "s3.sse.type",
                    "s3.sse.kms.key-id",
                    "s3.assume-role.arn",
                    "s3.assume-role.external-id",
                    "s3.assume-role.session-name",
                    "s3.assume-role.session-duration",
                    "s3.retry.max-num-retries",
                    "s3.connection.timeout",
                    "s3.socket.timeout",
                    "s3.connection.max-idle-time",
                    "s3.close.timeout",
                    "s3.client.close.timeout",
                    "fs.s3.aws.credentials.provider",
                    // fallback keys
                    "s3.access.key",
                    "s3.secret.key",
                    "s3.path.style.access");

    private static S3Settings parse(Map<String, String> settings) {
        return S3Settings.fromConfig(Configuration.fromMap(settings));
    }

    private static void assertRejected(Map<String, String> settings, String... named) {
        assertThatThrownBy(() -> parse(settings))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContainingAll(named);
    }

    /** A value each key of a setting reads, what the engine gets, and what must come along. */
    private record Sample(
            String value, String storageKey, String expected, Map<String, String> with) {}

    private static Sample sample(Setting setting) {
        String sseKms = "state.backend.forst.s3.sse.type";
        return switch (setting) {
            case ENDPOINT -> new Sample(
                    "http://127.0.0.1:9000", "s3.endpoint", "http://127.0.0.1:9000", Map.of());
            case SSL -> new Sample(
                    "false",
                    "s3.endpoint",
                    "http://minio:9000",
                    Map.of("state.backend.forst.s3.endpoint", "minio:9000"));
            case ACCESS_KEY -> new Sample(
                    "AKIAFLINK",
                    "s3.access-key",
                    "AKIAFLINK",
                    Map.of("state.backend.forst.s3.secret-key", SECRET));
            case SECRET_KEY -> new Sample(
                    SECRET,
                    "s3.secret-key",
                    SECRET,
                    Map.of("state.backend.forst.s3.access-key", "AKIAFLINK"));
            case SESSION_TOKEN -> new Sample("token", "s3.session-token", "token", Map.of());
            case REGION -> new Sample("eu-west-1", "s3.region", "eu-west-1", Map.of());
            case PATH_STYLE -> new Sample("TRUE", "s3.path-style", "true", Map.of());
            case ANONYMOUS -> new Sample(
                    "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider",
                    "s3.anonymous",
                    "true",
                    Map.of());
            case SSE -> new Sample("SSE-KMS", "s3.sse", "aws:kms", Map.of());
            case SSE_ENABLED -> new Sample("false", "s3.sse", "none", Map.of());
            case SSE_KMS_KEY_ID -> new Sample(
                    "alias/flink", "s3.sse.kms-key-id", "alias/flink", Map.of(sseKms, "sse-kms"));
            case SSE_HADOOP_KEY -> new Sample(
                    "c2VjcmV0", "s3.sse.customer-key", "c2VjcmV0", Map.of(sseKms, "SSE-C"));
            case SSE_CUSTOMER_KEY -> throw new AssertionError("no Flink key: S3A's key feeds it");
            case CONNECT_TIMEOUT -> new Sample("5s", "s3.connect-timeout-ms", "5000", Map.of());
            case READ_TIMEOUT -> new Sample("2 min", "s3.read-timeout-ms", "120000", Map.of());
            case REQUEST_TIMEOUT -> new Sample("30s", "s3.request-timeout-ms", "30000", Map.of());
            case POOL_IDLE_TIMEOUT -> new Sample(
                    "1500ms", "s3.pool-idle-timeout-ms", "1500", Map.of());
            case MAX_RETRIES -> new Sample("4", "s3.max-retries", "4", Map.of());
            case PART_SIZE -> new Sample("64M", "s3.multipart.part-size", "67108864", Map.of());
            case PARTS_IN_FLIGHT -> new Sample("3", "s3.multipart.parts-in-flight", "3", Map.of());
        };
    }

    @Test
    void everyKeyOfEveryFamilyReachesItsStorageKey() {
        EnumSet<Family> families = EnumSet.noneOf(Family.class);
        EnumSet<Setting> settings = EnumSet.noneOf(Setting.class);
        for (FlinkKey key : S3Keys.KEYS.values()) {
            Sample sample = sample(key.setting());
            Map<String, String> config = new HashMap<>(sample.with());
            config.put(key.key(), sample.value());
            assertThat(parse(config).storageValue(sample.storageKey()))
                    .as(key.key())
                    .isEqualTo(sample.expected());
            families.addAll(key.families());
            settings.add(key.setting());
        }
        assertThat(families).containsExactlyInAnyOrder(Family.values());
        assertThat(settings).containsAll(EnumSet.complementOf(EnumSet.of(Setting.SSE_CUSTOMER_KEY)));
    }

    @Test
    void ourKeysOverrideFlinksForTheWorkingDirectoryWithoutConflict() {
        for (Setting setting : Setting.values()) {
            if (setting.ourKey == null || setting == Setting.SSE_CUSTOMER_KEY) {
                continue;
            }
            Sample sample = sample(setting);
            Map<String, String> config = new HashMap<>(sample.with());
            config.put(setting.ourKey, sample.value());
            String flinkKey = S3Keys.keysOf(setting).get(0);
            if (setting != Setting.ACCESS_KEY && setting != Setting.SECRET_KEY) {
                // a Flink key the override wins over, even an invalid one is not read
                config.put(flinkKey, "not-read");
            }
            String value = sample.value();
            if (setting == Setting.ANONYMOUS) {
                config.put(setting.ourKey, "true");
            }
            assertThat(parse(config).storageValue(sample.storageKey()))
                    .as(setting.ourKey + " = " + value)
                    .isEqualTo(sample.expected());
        }
        assertThat(
                        parse(
                                        Map.of(
                                                "s3.endpoint", "https://s3.example.com",
                                                "state.backend.forst.s3.endpoint",
                                                        "http://minio:9000"))
                                .getEndpoint())
                .isEqualTo("http://minio:9000");
    }

    @Test
    void everyFlip555KeyIsHonouredOrExplained() {
        for (String key : FLIP_555_KEYS) {
            assertThat(
                            S3Keys.KEYS.containsKey(key)
                                    || S3Keys.NO_EQUIVALENT.containsKey(key)
                                    || S3Keys.UNSUPPORTED.containsKey(key))
                    .as(key)
                    .isTrue();
        }
        assertThat(S3Keys.NO_EQUIVALENT).containsKeys("s3.entropy.key", "s3.read.buffer.size");
    }

    @Test
    void ourKeysAreKnownToTheBackendConfiguration() {
        for (Setting setting : Setting.values()) {
            if (setting.ourKey != null) {
                Sample sample =
                        setting == Setting.SSE_CUSTOMER_KEY
                                ? new Sample("c2VjcmV0", "", "", Map.of())
                                : sample(setting);
                Map<String, String> config = new HashMap<>(sample.with());
                config.put(
                        setting.ourKey, setting == Setting.ANONYMOUS ? "true" : sample.value());
                ForStBackendConfig.fromConfig(Configuration.fromMap(config));
            }
        }
        assertThat(
                        ForStBackendConfig.fromConfig(
                                        Configuration.fromMap(
                                                Map.of(
                                                        "state.backend.forst.s3.path-style-access",
                                                        "true")))
                                .getS3()
                                .getPathStyle())
                .isTrue();
    }

    @Test
    void flinksSpellingsOfOneSettingMustAgree() {
        assertRejected(
                Map.of("s3.path-style-access", "true", "fs.s3a.path.style.access", "false"),
                "s3.path-style-access",
                "fs.s3a.path.style.access",
                "state.backend.forst.s3.path.style.access");
        assertRejected(
                Map.of("s3.upload.min.part.size", "5242880", "fs.s3a.multipart.size", "64M"),
                "s3.upload.min.part.size",
                "fs.s3a.multipart.size");
        assertRejected(
                Map.of("s3.sse.enabled", "false", "s3.sse.type", "sse-kms"),
                "s3.sse.enabled",
                "s3.sse.type");
        assertRejected(
                Map.of(
                        "fs.s3.aws.credentials.provider", "DefaultCredentialsProvider",
                        "fs.s3a.aws.credentials.provider", "AnonymousAWSCredentialsProvider"),
                "fs.s3.aws.credentials.provider",
                "fs.s3a.aws.credentials.provider");
        // equal once read: no conflict
        S3Settings agreed =
                parse(
                        Map.of(
                                "s3.upload.min.part.size", "67108864",
                                "fs.s3a.multipart.size", "64M",
                                "s3.path.style.access", "true",
                                "s3a.path.style.access", "TRUE",
                                "s3.connection.timeout", "5 s",
                                "fs.s3a.connection.establish.timeout", "5000"));
        assertThat(agreed.nativeOptions())
                .containsExactly(
                        "s3.path-style", "true",
                        "s3.connect-timeout-ms", "5000",
                        "s3.multipart.part-size", "67108864");
    }

    @Test
    void aConflictOfSecretsNamesTheKeysButNotTheSecrets() {
        assertThatThrownBy(
                        () ->
                                parse(
                                        Map.of(
                                                "s3.access-key", "AKIAFLINK",
                                                "s3.secret-key", SECRET,
                                                "fs.s3a.secret.key", SECRET + "-other")))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContainingAll("s3.secret-key", "fs.s3a.secret.key", "<redacted>")
                .hasMessageNotContaining(SECRET);
    }

    @Test
    void s3ConnectionTimeoutIsFlip555sConnectTimeoutAndS3asSocketTimeoutKeepsItsOtherNames() {
        S3Settings s3 =
                parse(Map.of("s3.connection.timeout", "3s", "fs.s3a.connection.timeout", "7000"));
        assertThat(s3.storageValue("s3.connect-timeout-ms")).isEqualTo("3000");
        assertThat(s3.storageValue("s3.read-timeout-ms")).isEqualTo("7000");
    }

    @Test
    void encryptionFollowsEachPluginsRules() {
        assertThat(parse(Map.of("s3.sse.enabled", "true")).storageValue("s3.sse"))
                .as("Presto's switch alone means SSE-S3")
                .isEqualTo("AES256");
        assertThat(parse(Map.of("s3.sse.type", "sse-s3")).storageValue("s3.sse"))
                .isEqualTo("AES256");
        S3Settings kmsIdAlone = parse(Map.of("s3.sse.kms.key-id", "alias/k"));
        assertThat(kmsIdAlone.nativeOptions()).as("a KMS key id without SSE-KMS").isEmpty();
        S3Settings s3a =
                parse(
                        Map.of(
                                "fs.s3a.encryption.algorithm", "SSE-KMS",
                                "fs.s3a.encryption.key", "alias/k"));
        assertThat(s3a.nativeOptions())
                .containsExactly("s3.sse", "aws:kms", "s3.sse.kms-key-id", "alias/k");
        assertRejected(Map.of("fs.s3a.encryption.algorithm", "SSE-C"), "SSE-C", "fs.s3a.encryption.key");
        assertRejected(
                Map.of("fs.s3a.encryption.algorithm", "CSE-KMS"),
                "fs.s3a.encryption.algorithm",
                "client-side");
        S3Settings customer =
                parse(
                        Map.of(
                                "s3a.server-side-encryption-algorithm", "SSE-C",
                                "s3a.server-side-encryption.key", "c2VjcmV0"));
        assertThat(customer.storageValue("s3.sse.customer-key")).isEqualTo("c2VjcmV0");
        assertThat(customer.toString()).doesNotContain("c2VjcmV0");
    }

    @Test
    void aBareEndpointIsHttpsUnlessSslIsSwitchedOff() {
        assertThat(parse(Map.of("s3.endpoint", "minio:9000")).getEndpoint())
                .isEqualTo("minio:9000");
        assertThat(
                        parse(Map.of("s3.endpoint", "minio:9000", "s3.ssl.enabled", "false"))
                                .getEndpoint())
                .isEqualTo("http://minio:9000");
        assertThat(
                        parse(
                                        Map.of(
                                                "s3.endpoint",
                                                "https://minio:9000",
                                                "fs.s3a.connection.ssl.enabled",
                                                "false"))
                                .getEndpoint())
                .as("an endpoint's own scheme wins")
                .isEqualTo("https://minio:9000");
    }

    @Test
    void nothingSetLeavesEverythingToTheAwsEnvironment() {
        assertThat(parse(Map.of()).nativeOptions()).isEmpty();
        assertThat(parse(Map.of("s3.endpoint", "  ")).nativeOptions()).isEmpty();
        assertThat(parse(Map.of("s3.entropy.key", "_entropy_", "s3.read.buffer.size", "1048576")).nativeOptions())
                .as("keys without an equivalent are accepted and set nothing")
                .isEmpty();
    }

    @Test
    void badValuesFailNamingTheKey() {
        assertRejected(Map.of("s3.path.style.access", "sometimes"), "s3.path.style.access");
        assertRejected(Map.of("s3.endpoint", "ftp://host"), "s3.endpoint", "ftp://host");
        assertRejected(Map.of("s3.endpoint", "http://"), "s3.endpoint");
        assertRejected(
                Map.of("state.backend.forst.s3.endpoint", "bad host"),
                "state.backend.forst.s3.endpoint");
        assertRejected(Map.of("s3.access-key", "AKIAFLINK"), "s3.access-key", "s3.secret-key");
        assertRejected(Map.of("s3.secret.key", SECRET), "s3.secret.key", "s3.access-key");
        assertRejected(Map.of("s3.upload.min.part.size", "1048576"), "s3.upload.min.part.size", "5 MiB");
        assertRejected(Map.of("s3.multipart.min-part-size", "6GB"), "s3.multipart.min-part-size");
        assertRejected(Map.of("s3.connection.timeout", "soon"), "s3.connection.timeout");
        assertRejected(Map.of("s3.socket-timeout", "0s"), "s3.socket-timeout");
        assertRejected(
                Map.of("fs.s3a.connection.request.timeout", "60"),
                "fs.s3a.connection.request.timeout",
                "unit");
        assertRejected(Map.of("s3.retry.max-num-retries", "-1"), "s3.retry.max-num-retries");
        assertRejected(Map.of("s3.upload.max.concurrent.uploads", "0"), "s3.upload.max.concurrent.uploads");
        assertRejected(Map.of("s3.sse.type", "rot13"), "s3.sse.type", "rot13");
        assertRejected(Map.of("fs.s3.aws.credentials.provider", " , "), "fs.s3.aws.credentials.provider");
    }

    @Test
    void theSecretNeverShowsInWhatIsPrinted() {
        Map<String, String> settings =
                Map.of(
                        "s3.endpoint", "http://127.0.0.1:9000",
                        "s3.access-key", "AKIAFLINK",
                        "s3.secret-key", SECRET,
                        "fs.s3a.session.token", SECRET + "-token");
        ForStStateBackend backend =
                new ForStStateBackendFactory()
                        .createFromConfig(
                                Configuration.fromMap(settings),
                                S3SettingsTest.class.getClassLoader());
        assertThat(backend.getConfig().getS3().toString())
                .contains("http://127.0.0.1:9000", "AKIAFLINK", "<redacted>")
                .doesNotContain(SECRET);
        assertThat(backend.getConfig().toString()).doesNotContain(SECRET);
        assertThat(backend.toString()).doesNotContain(SECRET);
    }

    /** The engine takes every storage key this class hands it (here for a store that ignores them). */
    @Test
    void theEngineAcceptsTheStorageKeys() {
        Map<String, String> all = new HashMap<>();
        for (Setting setting : Set.of(Setting.values())) {
            if (setting != Setting.SSE_CUSTOMER_KEY
                    && setting != Setting.SSE_HADOOP_KEY
                    && setting != Setting.SSE_ENABLED
                    && setting != Setting.SSL) {
                Sample sample = sample(setting);
                all.putAll(sample.with());
                all.put(S3Keys.keysOf(setting).get(0), sample.value());
            }
        }
        all.put("state.backend.forst.s3.sse.type", "sse-kms");
        all.put("state.backend.forst.s3.secret-key", SECRET);
        all.put("state.backend.forst.s3.access-key", "AKIAFLINK");
        List<String> options = parse(all).nativeOptions();
        assertThat(options).contains("s3.multipart.part-size", "s3.session-token", "s3.sse.kms-key-id");
        NativeDb.open("memory://s3-settings-test", options.toArray(new String[0])).close();
        List<String> customer =
                parse(Map.of("fs.s3a.encryption.algorithm", "SSE-C", "fs.s3a.encryption.key", "c2VjcmV0"))
                        .nativeOptions();
        NativeDb.open("memory://s3-settings-test-c", customer.toArray(new String[0])).close();
    }
}
