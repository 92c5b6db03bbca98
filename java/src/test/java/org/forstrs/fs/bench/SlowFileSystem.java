package org.forstrs.fs.bench;

import org.apache.flink.core.fs.ByteBufferReadable;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;
import org.apache.flink.core.fs.Path;

import org.forstrs.fs.LocalBackedFileSystem;

import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;

/**
 * A Flink file system for benchmarks, {@code slowfs:///<absolute path>}: the local file system
 * made to behave like a remote DFS. Every open and every read call first waits a fixed delay
 * (system properties {@code slowfs.open-delay-us} and {@code slowfs.read-delay-us}, default 1500
 * µs each, FLIP-423's HDFS latency), without holding any lock, so concurrent calls overlap as
 * requests in flight do. Calls are counted ({@link SlowFsCounters}). Registered through {@code
 * META-INF/services/org.apache.flink.core.fs.FileSystemFactory} in the test resources, so both
 * ForSt-RS (through its Flink file-system proxy) and Flink's ForSt reach it the same way.
 */
public final class SlowFileSystem extends LocalBackedFileSystem {

    public static final String SCHEME = "slowfs";

    private static final long OPEN_DELAY_NANOS =
            Long.getLong("slowfs.open-delay-us", 1500) * 1000;
    private static final long READ_DELAY_NANOS =
            Long.getLong("slowfs.read-delay-us", 1500) * 1000;

    public SlowFileSystem() {
        super(SCHEME);
    }

    /** The factory Flink finds by its service file. */
    public static final class Factory implements FileSystemFactory {
        @Override
        public String getScheme() {
            return SCHEME;
        }

        @Override
        public FileSystem create(URI fsUri) {
            return new SlowFileSystem();
        }
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        SlowFsCounters.STATUS.increment();
        return super.getFileStatus(f);
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        return open(f);
    }

    @Override
    public FSDataInputStream open(Path f) throws IOException {
        SlowFsCounters.OPENS.increment();
        Delay.pause(OPEN_DELAY_NANOS);
        FSDataInputStream in = local.open(toLocal(f));
        return in instanceof ByteBufferReadable ? new SlowBufferInput(in) : new SlowInput(in);
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        SlowFsCounters.LISTS.increment();
        return super.listStatus(f);
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        SlowFsCounters.DELETES.increment();
        return local.delete(toLocal(f), recursive);
    }

    @Override
    public FSDataOutputStream create(Path f, WriteMode overwriteMode) throws IOException {
        SlowFsCounters.CREATES.increment();
        return local.create(toLocal(f), overwriteMode);
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        SlowFsCounters.RENAMES.increment();
        return local.rename(toLocal(src), toLocal(dst));
    }

    @Override
    public boolean isDistributedFS() {
        return true;
    }

    /** Waits without a lock: concurrent calls overlap their delays. */
    private static final class Delay {
        static void pause(long nanos) {
            long deadline = System.nanoTime() + nanos;
            long left;
            // Bounded: each park returns at the deadline at the latest (or on a spurious wakeup).
            while ((left = deadline - System.nanoTime()) > 0) {
                LockSupport.parkNanos(left);
            }
        }
    }

    /** A stream whose bulk reads each wait the read delay (one-byte reads are not requests). */
    private static class SlowInput extends FSDataInputStream {
        final FSDataInputStream in;

        SlowInput(FSDataInputStream in) {
            this.in = in;
        }

        static void readCall() {
            SlowFsCounters.READS.increment();
            Delay.pause(READ_DELAY_NANOS);
        }

        static int counted(int read) {
            if (read > 0) {
                SlowFsCounters.BYTES_READ.add(read);
            }
            return read;
        }

        @Override
        public void seek(long desired) throws IOException {
            in.seek(desired);
        }

        @Override
        public long getPos() throws IOException {
            return in.getPos();
        }

        @Override
        public int read() throws IOException {
            return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            readCall();
            return counted(in.read(b, off, len));
        }

        @Override
        public long skip(long n) throws IOException {
            return in.skip(n);
        }

        @Override
        public int available() throws IOException {
            return in.available();
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }

    /** {@link SlowInput} over a stream with positional and buffer reads (the local one). */
    private static final class SlowBufferInput extends SlowInput implements ByteBufferReadable {
        SlowBufferInput(FSDataInputStream in) {
            super(in);
        }

        @Override
        public int read(ByteBuffer buffer) throws IOException {
            readCall();
            return counted(((ByteBufferReadable) in).read(buffer));
        }

        @Override
        public int read(long position, ByteBuffer buffer) throws IOException {
            readCall();
            return counted(((ByteBufferReadable) in).read(position, buffer));
        }
    }
}
