package org.forstrs.flink.config;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.ForStStateBackendFactory;
import org.forstrs.flink.state.NativeDb;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Flink's {@code s3.*} keys become the engine's S3 settings; the secret never shows. */
class S3SettingsTest {

    private static final String SECRET = "wJalrXUtnFEMI-secret";

    private static S3Settings parse(Map<String, String> settings) {
        return S3Settings.fromConfig(Configuration.fromMap(settings));
    }

    private static void assertRejected(Map<String, String> settings, String... named) {
        assertThatThrownBy(() -> parse(settings))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContainingAll(named);
    }

    @Test
    void flinksKeysMapToTheEnginesStorageKeys() {
        S3Settings s3 =
                parse(
                        Map.of(
                                "s3.endpoint", "http://127.0.0.1:9000",
                                "s3.access-key", "AKIAFLINK",
                                "s3.secret-key", SECRET,
                                "s3.path.style.access", "true",
                                "s3.region", "eu-west-1"));
        assertThat(s3.nativeOptions())
                .containsExactly(
                        "s3.endpoint", "http://127.0.0.1:9000",
                        "s3.access-key", "AKIAFLINK",
                        "s3.secret-key", SECRET,
                        "s3.path-style", "true",
                        "s3.region", "eu-west-1");
    }

    @Test
    void flinksOlderSpellingsAreAccepted() {
        S3Settings s3 =
                parse(
                        Map.of(
                                "s3.access.key", "AKIAFLINK",
                                "s3.secret.key", SECRET,
                                "s3.path-style-access", "false",
                                "s3.endpoint.region", "us-west-2"));
        assertThat(s3.getAccessKey()).isEqualTo("AKIAFLINK");
        assertThat(s3.hasSecretKey()).isTrue();
        assertThat(s3.getPathStyle()).isFalse();
        assertThat(s3.getRegion()).isEqualTo("us-west-2");
    }

    @Test
    void ourKeysOverrideFlinksForTheWorkingDirectory() {
        S3Settings s3 =
                parse(
                        Map.of(
                                "s3.endpoint", "https://s3.example.com",
                                "state.backend.forst.s3.endpoint", "http://minio:9000"));
        assertThat(s3.getEndpoint()).isEqualTo("http://minio:9000");
        // accepted when the whole backend configuration is read, not refused as unknown
        assertThat(
                        ForStBackendConfig.fromConfig(
                                        Configuration.fromMap(
                                                Map.of(
                                                        "state.backend.forst.s3.path.style.access",
                                                        "true")))
                                .getS3()
                                .getPathStyle())
                .isTrue();
    }

    @Test
    void nothingSetLeavesEverythingToTheAwsEnvironment() {
        assertThat(parse(Map.of()).nativeOptions()).isEmpty();
        assertThat(parse(Map.of("s3.endpoint", "  ")).nativeOptions()).isEmpty();
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
    }

    @Test
    void theSecretNeverShowsInWhatIsPrinted() {
        Map<String, String> settings =
                Map.of(
                        "s3.endpoint", "http://127.0.0.1:9000",
                        "s3.access-key", "AKIAFLINK",
                        "s3.secret-key", SECRET);
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

    /** The engine takes every key this class hands it (here for a store that ignores them). */
    @Test
    void theEngineAcceptsTheStorageKeys() {
        List<String> options =
                parse(
                                Map.of(
                                        "s3.endpoint", "http://127.0.0.1:9000",
                                        "s3.access-key", "AKIAFLINK",
                                        "s3.secret-key", SECRET,
                                        "s3.path.style.access", "false",
                                        "s3.region", "eu-west-1"))
                        .nativeOptions();
        NativeDb.open("memory://s3-settings-test", options.toArray(new String[0])).close();
    }
}
