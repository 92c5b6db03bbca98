package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The web monitor's HTTP API without a browser and without a job: what it lists, its answers to
 * bad requests (400, 404, 405, each a JSON error and never a stack trace), that no request reads
 * outside the served directory, and that serving writes nothing. The page on a real checkpoint
 * is {@code WebMonitorITCase}'s.
 */
class WebMonitorTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @TempDir Path dir;
    private Path job;
    private ServingTool serve;

    @BeforeEach
    void serve() throws Exception {
        job = dir.resolve("job");
        // chk-3 and chk-12 are "checkpoints" whose _metadata is not one: reading them fails.
        for (String chk : new String[] {"chk-12", "chk-3"}) {
            Files.createDirectories(job.resolve(chk));
            Files.writeString(job.resolve(chk).resolve("_metadata"), "not a checkpoint");
        }
        Files.createDirectories(job.resolve("chk-5")); // in progress: no _metadata yet
        Files.createDirectories(job.resolve("shared"));
        Files.writeString(job.resolve("shared").resolve("a.sst"), "x");
        Files.createDirectories(dir.resolve("outside"));
        Files.writeString(dir.resolve("outside").resolve("_metadata"), "not served");
        serve = ServingTool.start(job.toUri().toString(), new Configuration());
    }

    @AfterEach
    void stop() throws Exception {
        assertThat(serve.stop()).as(serve.err()).isZero();
    }

    @Test
    void listsTheCheckpointsWithMetadataInOrder() throws Exception {
        HttpResponse<String> list = get("/api/checkpoints");
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.headers().firstValue("Content-Type"))
                .hasValue("application/json; charset=utf-8");
        JsonNode body = JSON.readTree(list.body());
        assertThat(body.get("root").asText()).endsWith("/job");
        assertThat(body.get("checkpoints")).hasSize(2);
        assertThat(body.get("checkpoints").get(0).get("name").asText()).isEqualTo("chk-3");
        assertThat(body.get("checkpoints").get(1).get("name").asText()).isEqualTo("chk-12");
        assertThat(body.get("checkpoints").get(0).get("modified").asText())
                .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z");
    }

    @Test
    void servesThePage() throws Exception {
        HttpResponse<String> page = get("/");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.headers().firstValue("Content-Type")).hasValue("text/html; charset=utf-8");
        assertThat(page.body()).contains("<title>ForSt-RS checkpoint monitor</title>");
        HttpResponse<String> head =
                HTTP.send(
                        request("/").method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.body()).isEmpty();
    }

    @Test
    void refusesBadRequestsWithJsonErrors() throws Exception {
        error("/api/inspect", 400, "parameter checkpoint is missing");
        error("/api/inspect?checkpoint=chk-5", 404, "no checkpoint chk-5");
        error("/api/inspect?checkpoint=chk-99", 404, "no checkpoint chk-99");
        error("/api/diff?a=chk-3", 400, "parameter b is missing");
        error("/api/diff?a=chk-3&b=chk-4", 404, "no checkpoint chk-4");
        error("/api/entries?checkpoint=chk-3&operator=o&state=s&limit=0", 400, "limit");
        error("/api/entries?checkpoint=chk-3&operator=o&state=s&limit=x", 400, "limit");
        error("/api/entries?checkpoint=chk-3&operator=o&state=s&key=a&prefix=b", 400, "not both");
        error("/api/entries?checkpoint=chk-3&operator=o&state=s&after=zz", 400, "cursor");
        error("/api/entries?checkpoint=chk-3&operator=o", 400, "parameter state is missing");
        error("/api/entries?checkpoint=nope&operator=o&state=s", 404, "no checkpoint nope");
        error("/api/nothing", 404, "no such page");
        error("/favicon.ico", 404, "no such page");
        // Unreadable _metadata: a 500 that says why, and the server goes on.
        HttpResponse<String> broken = get("/api/inspect?checkpoint=chk-3");
        assertThat(broken.statusCode()).isEqualTo(500);
        assertThat(JSON.readTree(broken.body()).get("error").asText()).isNotEmpty();
        assertThat(broken.body()).doesNotContain("\tat ", "at org.");
        assertThat(get("/api/checkpoints").statusCode()).isEqualTo(200);
    }

    @Test
    void refusesEveryMethodButGetAndHead() throws Exception {
        for (String method : new String[] {"POST", "PUT", "DELETE", "PATCH"}) {
            HttpResponse<String> answer =
                    HTTP.send(
                            request("/api/checkpoints")
                                    .method(method, HttpRequest.BodyPublishers.ofString("x"))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(answer.statusCode()).as(method).isEqualTo(405);
            assertThat(answer.headers().firstValue("Allow")).hasValue("GET, HEAD");
            assertThat(JSON.readTree(answer.body()).get("error").asText()).contains("read-only");
        }
    }

    @Test
    void readsNothingOutsideTheServedDirectory() throws Exception {
        for (String name :
                new String[] {
                    "../outside",
                    "..%2Foutside",
                    "%2E%2E/outside",
                    dir.resolve("outside").toString(),
                    dir.resolve("outside").toUri().toString(),
                    "job/../outside",
                    "shared"
                }) {
            error("/api/inspect?checkpoint=" + name.replace("/", "%2F"), 404, "no checkpoint");
            error("/api/diff?a=chk-3&b=" + name.replace("/", "%2F"), 404, "no checkpoint");
        }
        // A raw request line with dot segments reaches no file either: only fixed paths exist.
        for (String path : new String[] {"/../outside/_metadata", "/api/../../outside/_metadata"}) {
            assertThat(rawStatusLine(path)).as(path).contains(" 404 ");
        }
    }

    @Test
    void answersOnlyRequestsAddressedToALoopbackName() throws Exception {
        URI url = URI.create(serve.url());
        assertThat(statusLine(url, "evil.example:" + url.getPort())).contains(" 403 ");
        assertThat(statusLine(url, "localhost:" + url.getPort())).contains(" 200 ");
        assertThat(statusLine(url, "127.0.0.1:" + url.getPort())).contains(" 200 ");
    }

    /** The status line of a GET of /api/checkpoints sent with {@code host} as its Host. */
    private static String statusLine(URI url, String host) throws Exception {
        try (Socket socket = new Socket(url.getHost(), url.getPort())) {
            socket.getOutputStream()
                    .write(
                            ("GET /api/checkpoints HTTP/1.1\r\nHost: "
                                            + host
                                            + "\r\nConnection: close\r\n\r\n")
                                    .getBytes(StandardCharsets.US_ASCII));
            return new BufferedReader(
                            new InputStreamReader(
                                    socket.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
        }
    }

    @Test
    void servingWritesNothing() throws Exception {
        Map<String, String> before = listing(dir);
        get("/");
        get("/api/checkpoints");
        get("/api/inspect?checkpoint=chk-3");
        get("/api/entries?checkpoint=chk-12&operator=o&state=s");
        get("/api/diff?a=chk-3&b=chk-12");
        assertThat(listing(dir)).isEqualTo(before);
    }

    @Test
    void serveCommandChecksItsArguments() throws Exception {
        assertThat(tool("serve")).isEqualTo(2);
        assertThat(tool("serve", dir.toString(), "--port", "x")).isEqualTo(2);
        assertThat(tool("serve", dir.toString(), "--port", "70000")).isEqualTo(2);
        assertThat(tool("serve", dir.toString(), "--colour")).isEqualTo(2);
        assertThat(tool("serve", dir.resolve("missing").toString())).isEqualTo(1);
    }

    private void error(String path, int status, String message) throws Exception {
        HttpResponse<String> answer = get(path);
        assertThat(answer.statusCode()).as(path).isEqualTo(status);
        assertThat(answer.headers().firstValue("Content-Type"))
                .hasValue("application/json; charset=utf-8");
        JsonNode body = JSON.readTree(answer.body());
        assertThat(body.fieldNames()).toIterable().containsExactly("error");
        assertThat(body.get("error").asText()).as(path).contains(message);
    }

    private HttpResponse<String> get(String path) throws Exception {
        return HTTP.send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create(serve.url() + path.substring(1)));
    }

    /** The status line of a request sent as written (an HTTP client would normalize it). */
    private String rawStatusLine(String path) throws IOException {
        URI url = URI.create(serve.url());
        try (Socket socket = new Socket(url.getHost(), url.getPort())) {
            OutputStream out = socket.getOutputStream();
            out.write(
                    ("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            String answer = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            return answer.substring(0, Math.max(0, answer.indexOf("\r\n")));
        }
    }

    private static int tool(String... args) throws Exception {
        PrintStream quiet = new PrintStream(new ByteArrayOutputStream(), true);
        return ForStTool.run(args, quiet, quiet, new Configuration());
    }

    /** Every file and directory under {@code root} with its size and modification time. */
    private static Map<String, String> listing(Path root) throws IOException {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                files.put(
                        root.relativize(p).toString(),
                        Files.isDirectory(p)
                                ? "dir"
                                : Files.size(p) + "@" + Files.getLastModifiedTime(p));
            }
        }
        return files;
    }
}
