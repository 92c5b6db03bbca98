package org.forstrs.fs;

import org.apache.flink.core.fs.BlockLocation;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.fs.local.LocalFileSystem;

import java.io.IOException;
import java.net.URI;

/**
 * The local file system under another scheme ({@code <scheme>:///<absolute path>}), for test file
 * systems that change how it behaves (delays, faults): the path mapping, the statuses under the
 * scheme and the calls they pass on unchanged.
 */
public abstract class LocalBackedFileSystem extends FileSystem {

    /** Not getLocalFileSystem(): that wraps it in the safety net of the creating task thread. */
    protected final FileSystem local = LocalFileSystem.getSharedInstance();

    private final String scheme;

    protected LocalBackedFileSystem(String scheme) {
        this.scheme = scheme;
    }

    protected static Path toLocal(Path path) {
        return new Path("file", null, path.toUri().getPath());
    }

    private Path toOwn(Path path) {
        return new Path(scheme, null, path.toUri().getPath());
    }

    @Override
    public Path getWorkingDirectory() {
        return toOwn(local.getWorkingDirectory());
    }

    @Override
    public Path getHomeDirectory() {
        return toOwn(local.getHomeDirectory());
    }

    @Override
    public URI getUri() {
        return URI.create(scheme + ":///");
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        return new OwnStatus(local.getFileStatus(toLocal(f)));
    }

    @Override
    public BlockLocation[] getFileBlockLocations(FileStatus file, long start, long len)
            throws IOException {
        return local.getFileBlockLocations(local.getFileStatus(toLocal(file.getPath())), start, len);
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        FileStatus[] statuses = local.listStatus(toLocal(f));
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
        return local.mkdirs(toLocal(f));
    }

    /** The local status under this file system's scheme. */
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
