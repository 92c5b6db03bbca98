package org.forstrs.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.plugin.DefaultPluginManager;
import org.apache.flink.core.plugin.DirectoryBasedPluginFinder;
import org.apache.flink.core.plugin.PluginManager;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The repository's S3-compatible test server (moto, started by {@code tests/support/s3_server.py}
 * as the Rust tests start it) on 127.0.0.1 over plain http, for the test class: the script picks a
 * free port, creates the bucket and prints {@code READY <endpoint> <bucket> <log>}; closing its
 * stdin stops it. moto checks no signatures, so the bucket is listed with plain GETs.
 */
final class S3TestServer implements BeforeAllCallback, AfterAllCallback {

    private static final String SCRIPT = "tests/support/s3_server.py";
    private static final long START_TIMEOUT_SECONDS = 120;
    private static final Pattern KEY = Pattern.compile("<Key>([^<]*)</Key>");

    private Process process;
    private String endpoint;
    private String bucket;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        process =
                new ProcessBuilder("python3", script().toString())
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
        BufferedReader out =
                new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> ready =
                CompletableFuture.supplyAsync(
                        () -> {
                            StringBuilder seen = new StringBuilder();
                            try {
                                for (String line; (line = out.readLine()) != null; ) {
                                    if (line.startsWith("READY ")) {
                                        return line;
                                    }
                                    seen.append(line).append('\n');
                                }
                            } catch (IOException e) {
                                seen.append(e);
                            }
                            throw new IllegalStateException(
                                    "the S3 test server exited before it was ready (needs moto:"
                                            + " scripts/install-deps.sh): "
                                            + seen);
                        });
        String[] words;
        try {
            words = ready.get(START_TIMEOUT_SECONDS, TimeUnit.SECONDS).split(" ");
        } catch (Exception e) {
            afterAll(context);
            throw e;
        }
        endpoint = words[1];
        bucket = words[2];
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (process == null) {
            return;
        }
        process.getOutputStream().close();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
        process = null;
    }

    /** The script, found from the working directory (Maven runs tests in java/). */
    private static Path script() {
        Path dir = Paths.get("").toAbsolutePath();
        for (int up = 0; up < 3 && dir != null; up++, dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve(SCRIPT))) {
                return dir.resolve(SCRIPT);
            }
        }
        throw new IllegalStateException("cannot find " + SCRIPT + " above the working directory");
    }

    /** {@code http://127.0.0.1:<port>}. */
    String endpoint() {
        return endpoint;
    }

    String bucket() {
        return bucket;
    }

    /**
     * Flink's {@code s3.*} keys for this server into {@code config} (moto takes neither
     * aws-chunked uploads nor the SDK's checksum headers), and Flink's file systems initialized
     * with them and the S3 plugin failsafe unpacked; {@link #resetFlinkFileSystems} undoes it.
     */
    void initializeFlinkFileSystems(Configuration config) throws Exception {
        setFlinkKeys(config);
        FileSystem.initialize(config, flinkPlugins(config));
    }

    /** Flink's {@code s3.*} keys for this server into {@code config}. */
    void setFlinkKeys(Configuration config) {
        config.setString("s3.endpoint", endpoint);
        config.setString("s3.region", "us-east-1");
        config.setString("s3.access-key", "flink-access-key");
        config.setString("s3.secret-key", "flink-secret-key");
        config.setString("s3.path-style-access", "true");
        config.setString("s3.chunked-encoding.enabled", "false");
        config.setString("s3.checksum-validation.enabled", "false");
    }

    static void resetFlinkFileSystems() {
        FileSystem.initialize(new Configuration(), null);
    }

    /** Flink's plugins as failsafe unpacked them (the S3 file system). */
    static PluginManager flinkPlugins(Configuration config) throws IOException {
        String dir = System.getProperty("flink.plugins.dir");
        assertThat(dir).as("system property flink.plugins.dir (set by failsafe)").isNotNull();
        return new DefaultPluginManager(
                new DirectoryBasedPluginFinder(Paths.get(dir)).findPlugins(),
                CoreOptions.getPluginParentFirstLoaderPatterns(config));
    }

    /** Keys of every object in the bucket under {@code prefix} (moto answers up to 1000). */
    List<String> keys(String prefix) throws IOException, InterruptedException {
        URI uri =
                URI.create(
                        endpoint
                                + "/"
                                + bucket
                                + "?list-type=2&max-keys=1000&prefix="
                                + URLEncoder.encode(prefix, StandardCharsets.UTF_8));
        HttpResponse<String> response =
                HttpClient.newHttpClient()
                        .send(
                                HttpRequest.newBuilder(uri).GET().build(),
                                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException("listing " + uri + ": " + response.statusCode());
        }
        List<String> keys = new ArrayList<>();
        Matcher matcher = KEY.matcher(response.body());
        while (matcher.find()) {
            keys.add(matcher.group(1));
        }
        return keys;
    }
}
