package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * {@code ForStTool serve}: a read-only web monitor of the checkpoints under one directory
 * ({@link ServedCheckpoints}), on the JDK's HTTP server. {@code /} is one self-contained page
 * ({@code web/index.html}); it calls the JSON endpoints {@code /api/checkpoints}, {@code
 * /api/inspect?checkpoint=}, {@code /api/entries?checkpoint=&operator=&state=[&key=|&prefix=]
 * [&after=][&limit=]} and {@code /api/diff?a=&b=}, which answer from the same model as {@code
 * inspect}, {@code dump} and {@code diff}. Only GET and HEAD; a bad request gets a 4xx with a
 * JSON {@code {"error":...}}, a failure to read a 500 with its message, never a stack trace.
 */
public final class WebMonitor implements AutoCloseable {

    /** The most entries one page of {@code /api/entries} holds. */
    static final int MAX_LIMIT = 1000;

    private static final int DEFAULT_LIMIT = 50;

    /** The default port: none of Flink's defaults (REST 8081, history 8082, gateway 8083...). */
    public static final int DEFAULT_PORT = 8423;

    /** Requests waiting for one of the two threads; past that, the accepting thread serves. */
    private static final int QUEUE = 64;

    /** Inspections kept, by checkpoint: a checkpoint never changes once written. */
    private static final int KEPT_INSPECTIONS = 32;

    /** Seconds the JDK's server gives a client to send its request and to take the response. */
    private static final String IO_SECONDS = "60";

    private final ServedCheckpoints checkpoints;
    private final Configuration config;
    private final HttpServer server;
    private final ExecutorService executor;

    /** The JSON of each sound checkpoint inspected lately (a damaged one is read again). */
    private final Map<String, String> inspections =
            new LinkedHashMap<>(16, 0.75f, true) {
                private static final long serialVersionUID = 1L;

                @Override
                protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
                    return size() > KEPT_INSPECTIONS;
                }
            };

    private WebMonitor(
            ServedCheckpoints checkpoints,
            Configuration config,
            HttpServer server,
            ExecutorService executor) {
        this.checkpoints = checkpoints;
        this.config = config;
        this.server = server;
        this.executor = executor;
    }

    /**
     * Serves {@code root} on {@code bind}:{@code port} (0: a free port) until {@link #close};
     * {@code config} gives the native reader its storage settings, as for {@code inspect}.
     */
    public static WebMonitor start(Path root, String bind, int port, Configuration config)
            throws IOException {
        // A client that stalls sending its request or taking the response is cut off (the JDK
        // server's own limits, read when it is created; one set by the user stays).
        for (String limit : List.of("maxReqTime", "maxRspTime")) {
            String key = "sun.net.httpserver." + limit;
            System.setProperty(key, System.getProperty(key, IO_SECONDS));
        }
        HttpServer server =
                HttpServer.create(new InetSocketAddress(InetAddress.getByName(bind), port), 0);
        // Two threads: a long inspect of a large checkpoint does not hold up the page's other
        // calls, and the machine's cores stay the job's. A bounded queue: past it the accepting
        // thread answers itself, so a flood slows down instead of piling up.
        ExecutorService executor =
                new ThreadPoolExecutor(
                        2,
                        2,
                        0,
                        TimeUnit.MILLISECONDS,
                        new ArrayBlockingQueue<>(QUEUE),
                        r -> {
                            Thread t = new Thread(r, "forst-web-monitor");
                            t.setDaemon(true);
                            return t;
                        },
                        new ThreadPoolExecutor.CallerRunsPolicy());
        WebMonitor monitor =
                new WebMonitor(new ServedCheckpoints(root), config, server, executor);
        server.createContext("/", monitor::handle);
        server.setExecutor(executor);
        server.start();
        return monitor;
    }

    /** The page's address, e.g. {@code http://127.0.0.1:8423/}. */
    public String url() {
        InetSocketAddress address = server.getAddress();
        String host = address.getAddress().getHostAddress();
        return "http://"
                + (host.contains(":") ? "[" + host + "]" : host)
                + ":"
                + address.getPort()
                + "/";
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }

    /** A request that cannot be answered: its HTTP status and why. */
    static final class HttpError extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;

        HttpError(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    private void handle(HttpExchange exchange) throws IOException {
        try {
            int status = 200;
            String type = "application/json; charset=utf-8";
            byte[] body;
            try {
                String host = exchange.getRequestHeaders().getFirst("Host");
                if (!servesHost(host)) {
                    throw new HttpError(403, "not served under the name " + host);
                }
                String method = exchange.getRequestMethod();
                if (!method.equals("GET") && !method.equals("HEAD")) {
                    exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                    throw new HttpError(405, "method " + method + " not allowed: read-only");
                }
                String path = exchange.getRequestURI().getPath();
                if (path.equals("/") || path.equals("/index.html")) {
                    type = "text/html; charset=utf-8";
                    body = page();
                } else {
                    Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
                    body = api(path, query).getBytes(StandardCharsets.UTF_8);
                }
            } catch (HttpError e) {
                status = e.status;
                body = error(e.getMessage());
            } catch (Exception | LinkageError e) {
                // A checkpoint that cannot be read (damaged, gone, no access): the page shows
                // why, and the server goes on.
                status = 500;
                body = error(e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            exchange.getResponseHeaders().set("Content-Type", type);
            exchange.getResponseHeaders().set("Cache-Control", "no-store");
            exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
            if (exchange.getRequestMethod().equals("HEAD")) {
                exchange.sendResponseHeaders(status, -1);
            } else {
                exchange.sendResponseHeaders(status, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
        } finally {
            exchange.close();
        }
    }

    /**
     * Bound to a loopback address, the monitor answers only requests addressed to a loopback
     * name: a web page elsewhere that points its own host name at 127.0.0.1 (DNS rebinding)
     * gets no state from the browser that shows it. Bound elsewhere on purpose, any name.
     */
    private boolean servesHost(String host) {
        if (!server.getAddress().getAddress().isLoopbackAddress()) {
            return true;
        }
        if (host == null) {
            return false;
        }
        String name = host.replaceFirst(":\\d+$", "");
        return name.equals("localhost")
                || name.equals("[::1]")
                || name.matches("127(\\.\\d{1,3}){3}");
    }

    private String api(String path, Map<String, String> query) throws Exception {
        switch (path) {
            case "/api/checkpoints":
                return checkpointsJson();
            case "/api/inspect":
                return inspection(checkpoint(required(query, "checkpoint")));
            case "/api/entries":
                return entries(query);
            case "/api/diff":
                return Diff.json(
                        Diff.of(
                                checkpoint(required(query, "a")),
                                checkpoint(required(query, "b")),
                                config));
            default:
                throw new HttpError(404, "no such page: " + path);
        }
    }

    /**
     * The inspection of {@code dir}, read once while it is kept: every page load asks for it, and
     * reading it counts every state's entries, which reads every file.
     */
    private String inspection(Path dir) throws IOException {
        String key = dir.toString();
        synchronized (inspections) {
            String kept = inspections.get(key);
            if (kept != null) {
                return kept;
            }
        }
        Inspection.Checkpoint checkpoint = Inspection.of(dir, config);
        String json = Inspection.json(checkpoint);
        if (checkpoint.damage().isEmpty()) {
            synchronized (inspections) {
                inspections.put(key, json);
            }
        }
        return json;
    }

    private String checkpointsJson() throws IOException {
        Json out = new Json().open().field("root", checkpoints.root().toString());
        out.array("checkpoints");
        for (ServedCheckpoints.Entry entry : checkpoints.list()) {
            out.open()
                    .field("name", entry.name())
                    .field("modified", entry.modified().toString())
                    .close();
        }
        return out.end().close().toString();
    }

    private String entries(Map<String, String> query) throws Exception {
        String key = query.get("key");
        String prefix = query.get("prefix");
        if (key != null && prefix != null) {
            throw new HttpError(400, "give key or prefix, not both");
        }
        int limit = DEFAULT_LIMIT;
        if (query.containsKey("limit")) {
            try {
                limit = Integer.parseInt(query.get("limit"));
            } catch (NumberFormatException e) {
                limit = -1;
            }
            if (limit < 1 || limit > MAX_LIMIT) {
                throw new HttpError(400, "limit must be 1.." + MAX_LIMIT);
            }
        }
        StateEntries.Cursor after = null;
        if (query.containsKey("after")) {
            try {
                after = StateEntries.Cursor.parse(query.get("after"));
            } catch (IllegalArgumentException e) {
                throw new HttpError(400, "after is not a cursor of this page: " + e.getMessage());
            }
        }
        String name = required(query, "checkpoint");
        String operatorName = required(query, "operator");
        String state = required(query, "state");
        CheckpointContents contents = CheckpointContents.load(checkpoint(name), config);
        CheckpointContents.Operator operator = contents.operator(operatorName).orElse(null);
        if (operator == null) {
            throw new HttpError(404, "no operator " + operatorName + " in " + name);
        }
        // One entry beyond the page tells whether a next page exists.
        int wanted = limit + 1;
        List<StateEntries.Found> page = new ArrayList<>();
        boolean found =
                StateEntries.read(
                        contents,
                        operator,
                        state,
                        key,
                        prefix,
                        after,
                        f -> {
                            page.add(f);
                            return page.size() < wanted;
                        },
                        null);
        if (!found) {
            throw new HttpError(404, "operator " + operator.label() + " has no state " + state);
        }
        StringBuilder out = new StringBuilder("{\"entries\":[");
        for (int i = 0; i < Math.min(limit, page.size()); i++) {
            out.append(i == 0 ? "" : ",")
                    .append(Dump.json(page.get(i).subtask(), page.get(i).entry()));
        }
        out.append("],\"next\":");
        out.append(
                page.size() > limit
                        ? JsonText.string(page.get(limit - 1).cursor().text())
                        : "null");
        return out.append('}').toString();
    }

    /** The directory of the listed checkpoint {@code name}; 404 for any other name. */
    private Path checkpoint(String name) throws Exception {
        return checkpoints
                .find(name)
                .orElseThrow(() -> new HttpError(404, "no checkpoint " + name + " here"))
                .dir();
    }

    private static String required(Map<String, String> query, String name) throws HttpError {
        String value = query.get(name);
        if (value == null || value.isEmpty()) {
            throw new HttpError(400, "parameter " + name + " is missing");
        }
        return value;
    }

    private static Map<String, String> query(String raw) throws HttpError {
        Map<String, String> query = new HashMap<>();
        if (raw == null || raw.isEmpty()) {
            return query;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            try {
                String name = decode(eq < 0 ? pair : pair.substring(0, eq));
                String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
                query.putIfAbsent(name, value);
            } catch (IllegalArgumentException e) {
                throw new HttpError(400, "bad query: " + e.getMessage());
            }
        }
        return query;
    }

    private static String decode(String text) {
        return URLDecoder.decode(text, StandardCharsets.UTF_8);
    }

    private static byte[] page() throws IOException {
        try (InputStream in = WebMonitor.class.getResourceAsStream("web/index.html")) {
            if (in == null) {
                throw new IOException("web/index.html is missing from the jar");
            }
            return in.readAllBytes();
        }
    }

    private static byte[] error(String message) {
        return new Json()
                .open()
                .field("error", message == null ? "" : message)
                .close()
                .toString()
                .getBytes(StandardCharsets.UTF_8);
    }
}
