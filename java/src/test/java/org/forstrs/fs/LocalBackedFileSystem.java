package org.forstrs.fs;

import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.fs.local.LocalFileSystem;

/**
 * The local file system under another scheme ({@code <scheme>:///<absolute path>}), for test file
 * systems that change how it behaves (delays, faults).
 */
public abstract class LocalBackedFileSystem extends MappedFileSystem {

    /** {@link #inner}. Not getLocalFileSystem(): that wraps it in the creating task's safety net. */
    protected final FileSystem local;

    protected LocalBackedFileSystem(String scheme) {
        super(LocalFileSystem.getSharedInstance(), "file", scheme, null);
        this.local = inner;
    }

    protected static Path toLocal(Path path) {
        return new Path("file", null, path.toUri().getPath());
    }
}
