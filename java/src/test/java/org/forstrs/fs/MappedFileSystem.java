package org.forstrs.fs;

import org.apache.flink.core.fs.BlockLocation;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import java.io.IOException;
import java.net.URI;

/**
 * Another file system under a scheme of its own ({@code <scheme>://<authority>/<path>} for {@code
 * <inner scheme>://<authority>/<path>}), for test file systems that change how it behaves
 * (delays, faults, counting): the path mapping, the statuses under the scheme and the calls they
 * pass on unchanged.
 */
public abstract class MappedFileSystem extends FileSystem {

    protected final FileSystem inner;

    private final String innerScheme;
    private final String scheme;
    /** Null for none ({@code scheme:///path}). */
    private final String authority;

    protected MappedFileSystem(FileSystem inner, String innerScheme, String scheme, String authority) {
        this.inner = inner;
        this.innerScheme = innerScheme;
        this.scheme = scheme;
        this.authority = authority;
    }

    protected Path toInner(Path path) {
        return new Path(innerScheme, authority, path.toUri().getPath());
    }

    protected Path toOwn(Path path) {
        return new Path(scheme, authority, path.toUri().getPath());
    }

    @Override
    public Path getWorkingDirectory() {
        return toOwn(inner.getWorkingDirectory());
    }

    @Override
    public Path getHomeDirectory() {
        return toOwn(inner.getHomeDirectory());
    }

    @Override
    public URI getUri() {
        return URI.create(scheme + "://" + (authority == null ? "" : authority) + "/");
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        return new OwnStatus(inner.getFileStatus(toInner(f)));
    }

    @Override
    public BlockLocation[] getFileBlockLocations(FileStatus file, long start, long len)
            throws IOException {
        return inner.getFileBlockLocations(inner.getFileStatus(toInner(file.getPath())), start, len);
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        FileStatus[] statuses = inner.listStatus(toInner(f));
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
    public boolean mkdirs(Path f) throws IOException {
        return inner.mkdirs(toInner(f));
    }

    /** The inner file system's status under this file system's scheme. */
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
