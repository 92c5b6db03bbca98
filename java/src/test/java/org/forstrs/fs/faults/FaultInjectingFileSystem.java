package org.forstrs.fs.faults;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;
import org.apache.flink.core.fs.Path;

import org.forstrs.fs.ForwardingOutputStream;
import org.forstrs.fs.LocalBackedFileSystem;

import java.io.IOException;
import java.net.URI;

/**
 * A Flink file system for tests, {@code faulty:///<absolute path>}: the local file system with the
 * faults of the active {@link FaultPlan}. Registered through
 * {@code META-INF/services/org.apache.flink.core.fs.FileSystemFactory}; the engine reaches it
 * through the Flink file-system proxy, as it reaches any file system it has no native store for.
 */
public final class FaultInjectingFileSystem extends LocalBackedFileSystem {

    public static final String SCHEME = "faulty";

    public FaultInjectingFileSystem() {
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
            return new FaultInjectingFileSystem();
        }
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        return open(f);
    }

    @Override
    public FSDataInputStream open(Path f) throws IOException {
        FaultPlan plan = FaultPlan.active();
        String path = f.toUri().getPath();
        plan.onOpen(path);
        return new FaultyInput(local.open(toLocal(f)), plan, path);
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        return local.delete(toLocal(f), recursive);
    }

    @Override
    public FSDataOutputStream create(Path f, WriteMode overwriteMode) throws IOException {
        FaultPlan plan = FaultPlan.active();
        FSDataOutputStream out = local.create(toLocal(f), overwriteMode);
        return plan.failsOnWrite() ? new FailingOutput(out, f.toUri().getPath()) : out;
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        return local.rename(toLocal(src), toLocal(dst));
    }

    @Override
    public boolean isDistributedFS() {
        return false;
    }

    /** Reads with the plan's failures and short reads. */
    private static final class FaultyInput extends FSDataInputStream {
        private final FSDataInputStream in;
        private final FaultPlan plan;
        private final String path;

        FaultyInput(FSDataInputStream in, FaultPlan plan, String path) {
            this.in = in;
            this.plan = plan;
            this.path = path;
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
            plan.onRead(path);
            return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            plan.onRead(path);
            return in.read(b, off, plan.readLength(len));
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }

    /** A created file whose first write fails (the file stays, partly written). */
    private static final class FailingOutput extends ForwardingOutputStream {
        private final String path;

        FailingOutput(FSDataOutputStream out, String path) {
            super(out);
            this.path = path;
        }

        private IOException fault() {
            return new IOException("injected fault: write to " + path);
        }

        @Override
        public void write(int b) throws IOException {
            throw fault();
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            throw fault();
        }
    }
}
