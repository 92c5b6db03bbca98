package org.forstrs.fs;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.ICloseableRegistry;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.fs.PathsCopyingFileSystem;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * One Flink {@link FileSystem} as the native storage seam sees it. Native code (the file-system
 * proxy in rust/storage/flink_proxy/) makes one instance per storage root with {@link #forUri} and
 * calls the methods below with full path strings; bytes travel in direct buffers over native
 * memory.
 *
 * <p>Errors are {@link IOException}s whose message names the path; a missing file is a {@link
 * FileNotFoundException} (the native side maps it to "not found").
 *
 * <p>Files are published atomically: written under a temporary name ({@value #TEMP_PREFIX}...) in
 * the destination's directory, then renamed. Where the file system's rename does not replace (HDFS),
 * an overwrite deletes the old file first, as Flink's ForSt does.
 */
public final class FlinkFsBridge {

    /** Names starting with this are files being written; the native side skips them. */
    public static final String TEMP_PREFIX = ".tmp-";

    /** Open streams per file for concurrent positional reads (Flink's ForSt uses 32 too). */
    static final int STREAMS_PER_FILE = 32;

    private final FileSystem fs;

    private FlinkFsBridge(FileSystem fs) {
        this.fs = fs;
    }

    /**
     * The bridge to the file system of {@code uri}. Uses the unguarded file system: streams are
     * opened later from native threads, outside any task's safety net.
     */
    public static FlinkFsBridge forUri(String uri) throws IOException {
        return new FlinkFsBridge(FileSystem.getUnguardedFileSystem(URI.create(uri)));
    }

    /** The class of the Flink file system, for messages and tests. */
    public String fileSystemClass() {
        return fs.getClass().getName();
    }

    /** Size of a file; -1 if there is no file (missing, or a directory). */
    public long size(String path) throws IOException {
        Path p = new Path(path);
        try {
            FileStatus status = fs.getFileStatus(p);
            return status.isDir() ? -1 : status.getLen();
        } catch (FileNotFoundException e) {
            return -1;
        } catch (IOException e) {
            throw withPath(e, p, "stat");
        }
    }

    public boolean exists(String path) throws IOException {
        return fs.exists(new Path(path));
    }

    /** Files under {@code dir}, recursively; a missing directory has none. */
    public FileListing list(String dir) throws IOException {
        List<String> paths = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        Path root = new Path(dir);
        try {
            listInto(root, "", paths, sizes);
        } catch (IOException e) {
            throw withPath(e, root, "list");
        }
        long[] sizeArray = new long[sizes.size()];
        for (int i = 0; i < sizeArray.length; i++) {
            sizeArray[i] = sizes.get(i);
        }
        return new FileListing(paths.toArray(new String[0]), sizeArray);
    }

    private void listInto(Path dir, String prefix, List<String> paths, List<Long> sizes)
            throws IOException {
        FileStatus[] children;
        try {
            children = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            return;
        }
        if (children == null) {
            return;
        }
        for (FileStatus child : children) {
            String name = child.getPath().getName();
            if (name.startsWith(TEMP_PREFIX)) {
                continue;
            }
            String relative = prefix.isEmpty() ? name : prefix + "/" + name;
            if (child.isDir()) {
                listInto(child.getPath(), relative, paths, sizes);
            } else {
                paths.add(relative);
                sizes.add(child.getLen());
            }
        }
    }

    /** Deletes a file; a missing file is not an error. */
    public void delete(String path) throws IOException {
        Path p = new Path(path);
        try {
            fs.delete(p, false);
        } catch (FileNotFoundException e) {
            // Already gone: what was asked for.
        } catch (IOException e) {
            throw withPath(e, p, "delete");
        }
    }

    /** Renames {@code from} to {@code to}, replacing {@code to}. */
    public void rename(String from, String to) throws IOException {
        Path source = new Path(from);
        if (!fs.exists(source)) {
            throw new FileNotFoundException("rename: no file " + source);
        }
        try {
            publish(source, new Path(to), true);
        } catch (IOException e) {
            throw withPath(e, source, "rename to " + to);
        }
    }

    /**
     * Copies {@code from} to {@code to} (full URIs, possibly on another Flink file system):
     * through {@link PathsCopyingFileSystem#copyFiles} when the file system can copy the two
     * paths itself, otherwise by streaming the bytes into a temporary file that is then renamed.
     *
     * @return true if the file system copied the file itself
     */
    public boolean copy(String from, String to) throws IOException {
        Path source = new Path(from);
        Path destination = new Path(to);
        FileSystem sourceFs = fileSystemOf(source);
        FileSystem destinationFs = fileSystemOf(destination);
        try {
            long size = sourceFs.getFileStatus(source).getLen();
            if (sourceFs == destinationFs
                    && sourceFs instanceof PathsCopyingFileSystem
                    && ((PathsCopyingFileSystem) sourceFs).canCopyPaths(source, destination)) {
                destinationFs.mkdirs(destination.getParent());
                ((PathsCopyingFileSystem) sourceFs)
                        .copyFiles(
                                List.of(
                                        PathsCopyingFileSystem.CopyRequest.of(
                                                source, destination, size)),
                                ICloseableRegistry.NO_OP);
                return true;
            }
            Path temp = tempBeside(destination);
            try (FSDataInputStream in = sourceFs.open(source);
                    FSDataOutputStream out =
                            destinationFs.create(temp, FileSystem.WriteMode.NO_OVERWRITE)) {
                in.transferTo(out);
            } catch (IOException e) {
                deleteQuietly(destinationFs, temp);
                throw e;
            }
            publish(destinationFs, temp, destination, true);
            return false;
        } catch (FileNotFoundException e) {
            throw new FileNotFoundException("copy: no file " + source + " (" + e.getMessage() + ")");
        } catch (IOException e) {
            throw withPath(e, source, "copy to " + destination);
        }
    }

    private FileSystem fileSystemOf(Path path) throws IOException {
        URI uri = path.toUri();
        if (uri.getScheme() == null) {
            return fs;
        }
        return FileSystem.getUnguardedFileSystem(uri);
    }

    /** Starts a file written sequentially; nothing is visible at {@code path} until finish. */
    public FlinkFsWriter create(String path) throws IOException {
        Path destination = new Path(path);
        Path temp = tempBeside(destination);
        try {
            FSDataOutputStream out = fs.create(temp, FileSystem.WriteMode.NO_OVERWRITE);
            return new FlinkFsWriter(this, temp, destination, out);
        } catch (IOException e) {
            throw withPath(e, destination, "create");
        }
    }

    /**
     * Writes a whole file from {@code length} bytes of {@code data} (a direct buffer) and
     * publishes it; with {@code overwrite} false, fails if the file exists.
     */
    public void put(String path, ByteBuffer data, int length, boolean overwrite)
            throws IOException {
        Path destination = new Path(path);
        if (!overwrite && fs.exists(destination)) {
            throw new IOException("put " + destination + ": file already exists");
        }
        FlinkFsWriter writer = create(path);
        try {
            writer.write(data, length);
        } catch (IOException e) {
            writer.abort();
            throw e;
        }
        writer.finish(overwrite);
    }

    /** A reader for concurrent positional reads of {@code path}; opens streams on demand. */
    public FlinkFsReader openReader(String path) {
        return new FlinkFsReader(fs, new Path(path), STREAMS_PER_FILE);
    }

    void publish(Path temp, Path destination, boolean overwrite) throws IOException {
        publish(fs, temp, destination, overwrite);
    }

    /**
     * Renames a complete file into place. Creates the parent directory first (HDFS rename does
     * not). Without {@code overwrite}, an existing destination fails the call; the check and the
     * rename are atomic only where rename refuses to replace (HDFS), which is where it matters.
     */
    private static void publish(FileSystem fs, Path temp, Path destination, boolean overwrite)
            throws IOException {
        Path parent = destination.getParent();
        if (parent != null) {
            fs.mkdirs(parent);
        }
        if (!overwrite && fs.exists(destination)) {
            deleteQuietly(fs, temp);
            throw new IOException(destination + ": file already exists");
        }
        if (fs.rename(temp, destination)) {
            return;
        }
        if (!fs.exists(destination) || !overwrite) {
            deleteQuietly(fs, temp);
            throw new IOException(
                    "cannot rename " + temp + " to " + destination + " (file system said no)");
        }
        // A rename that does not replace: delete the old file, then rename again.
        fs.delete(destination, false);
        if (!fs.rename(temp, destination)) {
            deleteQuietly(fs, temp);
            throw new IOException("cannot rename " + temp + " to " + destination);
        }
    }

    void deleteQuietly(Path path) {
        deleteQuietly(fs, path);
    }

    private static void deleteQuietly(FileSystem fs, Path path) {
        try {
            fs.delete(path, false);
        } catch (IOException | RuntimeException ignored) {
            // Best effort: a leftover temporary file is skipped by listings.
        }
    }

    private static Path tempBeside(Path destination) {
        return new Path(
                destination.getParent(),
                TEMP_PREFIX + UUID.randomUUID() + "-" + destination.getName());
    }

    /** {@code e} with the path and operation in its message, keeping its class where it can. */
    static IOException withPath(IOException e, Path path, String operation) {
        String message = e.getMessage();
        if (message != null && message.contains(path.toString())) {
            return e;
        }
        String text = operation + " " + path + ": " + message;
        IOException out =
                e instanceof FileNotFoundException
                        ? new FileNotFoundException(text)
                        : e instanceof java.io.EOFException
                                ? new java.io.EOFException(text)
                                : new IOException(text);
        out.initCause(e);
        return out;
    }
}
