package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ForStTool serve <dir> --port 0} run in-process on its own thread, as a user runs it:
 * the URL is read from the first line it prints; {@link #close} interrupts it and waits for it
 * to end.
 */
public final class ServingTool implements AutoCloseable {

    private final Thread thread;
    private final CompletableFuture<Integer> status;
    private final ByteArrayOutputStream err;
    private final String url;

    private ServingTool(
            Thread thread,
            CompletableFuture<Integer> status,
            ByteArrayOutputStream err,
            String url) {
        this.thread = thread;
        this.status = status;
        this.err = err;
        this.url = url;
    }

    public static ServingTool start(String dir, Configuration config) throws Exception {
        PipedInputStream lines = new PipedInputStream();
        PrintStream out =
                new PrintStream(new PipedOutputStream(lines), true, StandardCharsets.UTF_8);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
        CompletableFuture<Integer> status = new CompletableFuture<>();
        Thread thread =
                new Thread(
                        () -> {
                            try {
                                status.complete(
                                        ForStTool.run(
                                                new String[] {"serve", dir, "--port", "0"},
                                                out,
                                                errStream,
                                                config));
                            } catch (Throwable t) {
                                status.completeExceptionally(t);
                            } finally {
                                out.close();
                            }
                        },
                        "forst-tool-serve");
        thread.setDaemon(true);
        thread.start();
        // Blocks until serve printed its first line or ended (the pipe closes).
        String first =
                new BufferedReader(new InputStreamReader(lines, StandardCharsets.UTF_8))
                        .readLine();
        assertThat(first)
                .as("serve's first line (stderr: %s)", err.toString(StandardCharsets.UTF_8))
                .isNotNull()
                .matches("serving http://127\\.0\\.0\\.1:\\d+/");
        return new ServingTool(thread, status, err, first.substring("serving ".length()));
    }

    /** The page's URL, e.g. {@code http://127.0.0.1:41234/}. */
    public String url() {
        return url;
    }

    /** Stops serve; its exit status. */
    public int stop() throws ExecutionException {
        thread.interrupt();
        try {
            thread.join();
            return status.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while stopping serve", e);
        }
    }

    public String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws ExecutionException {
        if (thread.isAlive()) {
            stop();
        }
    }
}
