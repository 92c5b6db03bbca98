package org.forstrs.fs;

import org.apache.flink.core.fs.BlockLocation;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileStatus;
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
public final class CountingFileSystem extends FileSystem {

    public static final String SCHEME = "countfs";

    /** Bytes written per file path (without scheme and authority), since the last reset. */
    private static final Map<String, Long> WRITTEN = new ConcurrentHashMap<>();

    private final FileSystem hdfs;
    private final String authority;

    private CountingFileSystem(FileSystem hdfs, String authority) {
        this.hdfs = hdfs;
        this.authority = authority;
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

    private Path toHdfs(Path path) {
        return new Path("hdfs", authority, path.toUri().getPath());
    }

    private Path toOwn(Path path) {
        return new Path(SCHEME, authority, path.toUri().getPath());
    }

    @Override
    public Path getWorkingDirectory() {
        return toOwn(hdfs.getWorkingDirectory());
    }

    @Override
    public Path getHomeDirectory() {
        return toOwn(hdfs.getHomeDirectory());
    }

    @Override
    public URI getUri() {
        return URI.create(SCHEME + "://" + authority + "/");
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        return new OwnStatus(hdfs.getFileStatus(toHdfs(f)));
    }

    @Override
    public BlockLocation[] getFileBlockLocations(FileStatus file, long start, long len)
            throws IOException {
        return hdfs.getFileBlockLocations(hdfs.getFileStatus(toHdfs(file.getPath())), start, len);
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        return hdfs.open(toHdfs(f), bufferSize);
    }

    @Override
    public FSDataInputStream open(Path f) throws IOException {
        return hdfs.open(toHdfs(f));
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        FileStatus[] statuses = hdfs.listStatus(toHdfs(f));
        if (statuses == null) {
            return null;
        }
        FileStatus[] out = new FileStatus[statuses.length];
        for (int i = 0; i < statuses.length; i++) {
            out[i] = new OwnStatus(statuses[i]);
        }
        return out;
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        return hdfs.delete(toHdfs(f), recursive);
    }

    @Override
    public boolean mkdirs(Path f) throws IOException {
        return hdfs.mkdirs(toHdfs(f));
    }

    @Override
    public FSDataOutputStream create(Path f, WriteMode overwriteMode) throws IOException {
        return new CountingOutput(hdfs.create(toHdfs(f), overwriteMode), f.toUri().getPath());
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        boolean renamed = hdfs.rename(toHdfs(src), toHdfs(dst));
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
    private static final class CountingOutput extends FSDataOutputStream {
        private final FSDataOutputStream out;
        private final String path;
        private long bytes;
        private boolean closed;

        CountingOutput(FSDataOutputStream out, String path) {
            this.out = out;
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
        public long getPos() throws IOException {
            return out.getPos();
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        @Override
        public void sync() throws IOException {
            out.sync();
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

    /** HDFS's status under this file system's scheme. */
    private final class OwnStatus implements FileStatus {
        private final FileStatus status;

        OwnStatus(FileStatus status) {
            this.status = status;
        }

        @Override
        public long getLen() {
            return status.getLen();
        }

        @Override
        public long getBlockSize() {
            return status.getBlockSize();
        }

        @Override
        public short getReplication() {
            return status.getReplication();
        }

        @Override
        public long getModificationTime() {
            return status.getModificationTime();
        }

        @Override
        public long getAccessTime() {
            return status.getAccessTime();
        }

        @Override
        public boolean isDir() {
            return status.isDir();
        }

        @Override
        public Path getPath() {
            return toOwn(status.getPath());
        }
    }
}
