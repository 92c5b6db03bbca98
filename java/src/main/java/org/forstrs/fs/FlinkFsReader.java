package org.forstrs.fs;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Semaphore;

/**
 * Positional reads of one file from many threads at once. Each read borrows an open stream from a
 * bounded pool (opening one when none is idle), so concurrent reads run in parallel on separate
 * streams instead of queueing on one lock; at most {@code capacity} streams are open.
 *
 * <p>A stream whose read failed is closed rather than returned, so a broken connection is not
 * reused. After {@link #close()}, reads fail and streams are closed as they come back.
 */
public final class FlinkFsReader implements Closeable {

    private final FileSystem fs;
    private final Path path;
    private final Semaphore permits;
    private final ConcurrentLinkedDeque<PooledStream> idle = new ConcurrentLinkedDeque<>();
    private volatile boolean closed;

    FlinkFsReader(FileSystem fs, Path path, int capacity) {
        this.fs = fs;
        this.path = path;
        this.permits = new Semaphore(capacity);
    }

    /**
     * Reads {@code length} bytes at {@code position} into {@code buffer} (a direct buffer over
     * native memory, filled from index 0).
     *
     * @throws java.io.EOFException if the file ends first; other IOExceptions name the path
     */
    public void readFully(long position, ByteBuffer buffer, int length) throws IOException {
        buffer.clear().limit(length);
        acquire();
        PooledStream stream = null;
        try {
            stream = borrow();
            stream.read.readFully(position, buffer);
            giveBack(stream);
            stream = null;
        } catch (IOException e) {
            throw FlinkFsBridge.withPath(e, path, "read " + length + " bytes at " + position);
        } finally {
            if (stream != null) {
                stream.closeQuietly();
            }
            permits.release();
        }
    }

    /** The read path of the streams of this file ("hadoop-bytebuffer", "flink-bytebuffer"...). */
    public String readKind() throws IOException {
        acquire();
        try {
            PooledStream stream = borrow();
            giveBack(stream);
            return stream.read.kind();
        } finally {
            permits.release();
        }
    }

    private void acquire() throws IOException {
        if (closed) {
            throw new IOException("reader of " + path + " is closed");
        }
        try {
            permits.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting to read " + path);
        }
    }

    private PooledStream borrow() throws IOException {
        PooledStream stream = idle.pollFirst();
        if (stream != null) {
            return stream;
        }
        FSDataInputStream in = fs.open(path);
        return new PooledStream(in, PositionalRead.of(in));
    }

    private void giveBack(PooledStream stream) {
        // Most recently used first: a warm stream (open connection, read-ahead) is reused soonest.
        idle.addFirst(stream);
        if (closed && idle.remove(stream)) {
            stream.closeQuietly();
        }
    }

    @Override
    public void close() {
        closed = true;
        PooledStream stream;
        while ((stream = idle.pollFirst()) != null) {
            stream.closeQuietly();
        }
    }

    private static final class PooledStream {
        final FSDataInputStream in;
        final PositionalRead read;

        PooledStream(FSDataInputStream in, PositionalRead read) {
            this.in = in;
            this.read = read;
        }

        void closeQuietly() {
            try {
                in.close();
            } catch (IOException | RuntimeException ignored) {
                // The stream is being dropped; its close error changes nothing.
            }
        }
    }
}
