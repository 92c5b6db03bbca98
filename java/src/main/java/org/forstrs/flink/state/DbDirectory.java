package org.forstrs.flink.state;

import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.util.FileUtils;

import org.forstrs.jni.ForStNative;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;

/**
 * A subtask's DB directory, {@code <job>/op_<operator>/subtask_<i>_attempt_<n>}: made ready when the
 * backend opens, removed with its empty parents when it is disposed. Subtasks of one job share the
 * parents and open and dispose concurrently, so neither step may fail because of the other:
 * removing only deletes parents that are empty, and creating retries when a parent it just made was
 * removed that way before it could create the child.
 */
public final class DbDirectory {

    private static final Logger LOG = LoggerFactory.getLogger(DbDirectory.class);

    /** Enough for any interleaving seen in practice; each retry follows another subtask's cleanup. */
    private static final int CREATE_ATTEMPTS = 100;

    private DbDirectory() {}

    /** The local directory of a {@code file://} URI; null for other schemes. */
    static File localDirectory(String uri) {
        URI parsed = URI.create(uri);
        return "file".equals(parsed.getScheme()) ? new File(parsed.getPath()) : null;
    }

    /**
     * Removes a leftover of an earlier run at {@code uri} (not its parents: other subtasks use
     * them) and, on a local file system, creates the directory.
     */
    public static void prepare(String uri, String[] nativeOptions) throws IOException {
        delete(uri, nativeOptions);
        File local = localDirectory(uri);
        if (local != null) {
            createRacingCleanup(local.toPath());
        }
    }

    /** Deletes the DB directory, then its parents up to the job directory if they are left empty. */
    public static void remove(String uri, String[] nativeOptions) throws IOException {
        delete(uri, nativeOptions);
        File local = localDirectory(uri);
        File parent = local == null ? null : local.getParentFile();
        for (int i = 0; i < 2 && parent != null; i++) {
            try {
                Files.deleteIfExists(parent.toPath());
            } catch (DirectoryNotEmptyException e) {
                break;
            }
            parent = parent.getParentFile();
        }
    }

    /** Creates {@code dir} and its parents while other subtasks may remove empty parents. */
    static void createRacingCleanup(java.nio.file.Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                Files.createDirectories(dir);
                return;
            } catch (NoSuchFileException | FileAlreadyExistsException e) {
                // a parent made by this call was removed by another subtask's cleanup (the JDK
                // reports a parent that vanished between its two checks as "already exists"):
                // once the directory exists, its parents are not empty and no cleanup removes them
                if (attempt == CREATE_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    /**
     * Deletes the DB directory itself, unless it holds files the DB handed over to checkpoints:
     * then only what the DB owns goes (their owner, Flink's SharedStateRegistry, deletes the rest).
     * Where the engine serves the scheme itself (s3), through
     * the engine's store: it wrote the files with exactly these settings (endpoint, credentials),
     * which Flink may not have a file system for (no flink-s3-fs-* plugin) or may reach with other
     * ones, and it deletes in bulk. Other schemes through Flink's file system, as the engine
     * reaches them.
     */
    private static void delete(String uri, String[] nativeOptions) throws IOException {
        File local = localDirectory(uri);
        if (local != null && !local.exists()) {
            return;
        }
        int kept;
        try {
            kept = ForStNative.deleteDatabase(uri, nativeOptions);
        } catch (Exception e) { // natives throw IOException without declaring it
            if (String.valueOf(e.getMessage()).contains("UnsupportedFileSystemSchemeException")) {
                LOG.warn("Cannot delete {}: no Flink file system for its scheme ({})", uri, e);
                return;
            }
            throw e;
        }
        if (kept > 0) {
            LOG.info("Deleted {}, keeping the {} files that checkpoints own", uri, kept);
            return;
        }
        if (local != null) {
            FileUtils.deleteDirectory(local);
            return;
        }
        if (ForStNative.deleteDirectory(uri, nativeOptions)) {
            return;
        }
        Path path = new Path(uri);
        FileSystem fs;
        try {
            fs = path.getFileSystem();
        } catch (IOException e) {
            LOG.warn(
                    "Cannot delete {}: no Flink file system for its scheme ({})",
                    uri,
                    e.toString());
            return;
        }
        if (fs.exists(path)) {
            fs.delete(path, true);
        }
    }
}
