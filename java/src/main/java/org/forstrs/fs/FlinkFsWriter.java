package org.forstrs.fs;

import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.Path;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A file being written through the proxy: bytes go to a temporary file beside the destination,
 * which {@link #finish} publishes under its name (so readers never see a partial file) and {@link
 * #abort} deletes.
 */
public final class FlinkFsWriter {

    /** Copy chunk from a direct buffer into the stream (an OutputStream takes only arrays). */
    private static final int CHUNK_BYTES = 64 * 1024;

    private final FlinkFsBridge bridge;
    private final Path temp;
    private final Path destination;
    private final FSDataOutputStream out;
    private final byte[] chunk = new byte[CHUNK_BYTES];
    private boolean done;

    FlinkFsWriter(FlinkFsBridge bridge, Path temp, Path destination, FSDataOutputStream out) {
        this.bridge = bridge;
        this.temp = temp;
        this.destination = destination;
        this.out = out;
    }

    /** Appends {@code length} bytes of {@code data} (a direct buffer, from index 0). */
    public void write(ByteBuffer data, int length) throws IOException {
        checkOpen();
        data.clear().limit(length);
        try {
            while (data.hasRemaining()) {
                int n = Math.min(chunk.length, data.remaining());
                data.get(chunk, 0, n);
                out.write(chunk, 0, n);
            }
        } catch (IOException e) {
            throw FlinkFsBridge.withPath(e, destination, "write");
        }
    }

    /** Closes the file and publishes it at its destination, replacing any file there. */
    public void finish() throws IOException {
        finish(true);
    }

    /** As {@link #finish()}; without {@code overwrite}, fails if the destination exists. */
    void finish(boolean overwrite) throws IOException {
        checkOpen();
        done = true;
        try {
            out.close();
            bridge.publish(temp, destination, overwrite);
        } catch (IOException e) {
            bridge.deleteQuietly(temp);
            throw FlinkFsBridge.withPath(e, destination, "finish");
        }
    }

    /** Drops the file; nothing becomes visible. */
    public void abort() {
        if (done) {
            return;
        }
        done = true;
        try {
            out.close();
        } catch (IOException | RuntimeException ignored) {
            // The temporary file is deleted next either way.
        }
        bridge.deleteQuietly(temp);
    }

    private void checkOpen() throws IOException {
        if (done) {
            throw new IOException("writer of " + destination + " is already finished or aborted");
        }
    }
}
