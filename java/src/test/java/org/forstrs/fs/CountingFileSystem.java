package org.forstrs.fs;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;
import org.apache.flink.core.fs.Path;

import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * HDFS under the scheme {@code countfs://<namenode host:port>/<path>}, counting the bytes written
 * through it per file: what a job writes to the DFS, by file. Bytes written into a file and then
 * renamed count for the new name (the file-system proxy writes to a temporary file and renames
 * it). Everything else passes through unchanged. Registered through {@code
 * META-INF/services/org.apache.flink.core.fs.FileSystemFactory} in the test resources.
 */
public final class CountingFileSystem extends MappedFileSystem {

    public static final String SCHEME = "countfs";

    /** Bytes written per file path (without scheme and authority), since the last reset. */
    private static final Map<String, Long> WRITTEN = new ConcurrentHashMap<>();

    private CountingFileSystem(FileSystem hdfs, String authority) {
        super(hdfs, "hdfs", SCHEME, authority);
    }

    /** The factory Flink finds by its service file. */
    public static final class Factory implements FileSystemFactory {
        @Override
        public String getScheme() {
            return SCHEME;
        }

        @Override
        public FileSystem create(URI fsUri) throws IOException {
            String authority = fsUri.getAuthority();
            FileSystem hdfs = FileSystem.getUnguardedFileSystem(URI.create("hdfs://" + authority));
            return new CountingFileSystem(hdfs, authority);
        }
    }

    /** {@code countfs://<authority><path>} of an HDFS uri. */
    public static String uri(String hdfsUri) {
        URI uri = URI.create(hdfsUri);
        return SCHEME + "://" + uri.getAuthority() + uri.getPath();
    }

    /** Bytes written through this file system per file path, as of now. */
    public static Map<String, Long> bytesWrittenByFile() {
        return Map.copyOf(WRITTEN);
    }

    public static void reset() {
        WRITTEN.clear();
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        return inner.open(toInner(f), bufferSize);
    }

    @Override
    public FSDataInputStream open(Path f) throws IOException {
        return inner.open(toInner(f));
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        return inner.delete(toInner(f), recursive);
    }

    @Override
    public FSDataOutputStream create(Path f, WriteMode overwriteMode) throws IOException {
        return new CountingOutput(inner.create(toInner(f), overwriteMode), f.toUri().getPath());
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        boolean renamed = inner.rename(toInner(src), toInner(dst));
        if (renamed) {
            Long bytes = WRITTEN.remove(src.toUri().getPath());
            if (bytes != null) {
                WRITTEN.merge(dst.toUri().getPath(), bytes, Long::sum);
            }
        }
        return renamed;
    }

    @Override
    public boolean isDistributedFS() {
        return true;
    }

    /** Counts what passes; adds it to {@link #WRITTEN} once the file is closed. */
    private static final class CountingOutput extends ForwardingOutputStream {
        private final String path;
        private long bytes;
        private boolean closed;

        CountingOutput(FSDataOutputStream out, String path) {
            super(out);
            this.path = path;
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            bytes++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            bytes += len;
        }

        @Override
        public void close() throws IOException {
            out.close();
            if (!closed) {
                closed = true;
                WRITTEN.merge(path, bytes, Long::sum);
            }
        }
    }
}
