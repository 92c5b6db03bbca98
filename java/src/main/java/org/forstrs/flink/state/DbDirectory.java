package org.forstrs.flink.state;

import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.util.FileUtils;

import org.forstrs.fs.FlinkFsBridge;
import org.forstrs.jni.ForStNative;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A subtask's DB directory, {@code [<job>/]op_<operator>/subtask_<i>_attempt_<n>} under the
 * primary directory: made ready when the backend opens, removed with its empty parents when it is
 * disposed. Opening also collects the directories other attempts of the same subtask left (a task
 * manager killed with SIGKILL never disposes): what their DBs owned goes, the files they handed
 * over to checkpoints stay for the JobManager to delete, and a directory goes once nothing is
 * left in it (the JobManager's last deletion there removes it too: {@link #removeIfEmpty}).
 * Subtasks of one job share the parents and open and dispose concurrently, so neither step may
 * fail because of the other: removing only deletes parents that are empty. On a local disk, the
 * subtasks of one JVM create a directory and remove an empty parent one at a time; creating
 * retries when another process (a task manager sharing the disk) removed a parent it just made
 * before it could create the child. Only our own
 * levels are removed: {@code op_*} and a job directory, never the primary directory or the
 * checkpoint storage's {@code shared} directory above them.
 */
public final class DbDirectory {

    private static final Logger LOG = LoggerFactory.getLogger(DbDirectory.class);

    /** Each retry follows another process's cleanup of a parent; in-JVM ones wait instead. */
    private static final int CREATE_ATTEMPTS = 100;

    /**
     * Held while a local directory is created and while an empty local parent is removed: the
     * subtasks of a JVM then never remove a parent between its creation and its child's.
     */
    private static final Object LOCAL_LAYOUT = new Object();

    /** A DB directory's name: the subtask index and the attempt number. */
    private static final Pattern ATTEMPT_DIR = Pattern.compile("subtask_(\\d+)_attempt_(\\d+)");

    /** The levels above a DB directory that are ours: the operator's, then the job's. */
    private static final Pattern OPERATOR_DIR = Pattern.compile("op_.*");

    private static final Pattern JOB_DIR = Pattern.compile("[0-9a-f]{32}");

    private DbDirectory() {}

    /** The local directory of a {@code file://} URI; null for other schemes. */
    static File localDirectory(String uri) {
        URI parsed = URI.create(uri);
        return "file".equals(parsed.getScheme()) ? new File(parsed.getPath()) : null;
    }

    /**
     * Removes a leftover of an earlier run at {@code uri} (not its parents: other subtasks use
     * them), collects the directories of the subtask's other attempts next to it and, on a local
     * file system, creates the directory.
     */
    public static void prepare(String uri, String[] nativeOptions, int parallelism, AttemptRun run)
            throws IOException {
        delete(uri, nativeOptions, true, null);
        collectOtherAttempts(uri, nativeOptions, parallelism, run);
        File local = localDirectory(uri);
        if (local != null) {
            createRacingCleanup(local.toPath());
        }
        String marker = run.marker();
        if (marker != null) {
            ForStNative.fileFinish(ForStNative.fileCreate(uri, nativeOptions, marker));
        }
    }

    /**
     * Deletes the DB directory (of a closed DB) and its parents if they are left empty; where the
     * DB handed files over to checkpoints, only what it owns, and the directory stays until the
     * JobManager deleted those.
     */
    public static void remove(String uri, String[] nativeOptions) throws IOException {
        if (delete(uri, nativeOptions, false, null)) {
            removeEmptyParents(new Path(uri));
        }
    }

    /**
     * Removes the DB directory {@code dbDir} if it is empty, then its operator and job directory
     * if they are left empty; names not of our layout are never touched. For the JobManager,
     * after it deleted a handed-over file (it has no engine options: Flink's file systems only).
     */
    public static void removeIfEmpty(Path dbDir) {
        if (ATTEMPT_DIR.matcher(dbDir.getName()).matches() && removeEmptyDirectory(dbDir)) {
            removeEmptyParents(dbDir);
        }
    }

    /**
     * Collects the directories of the other attempts of {@code uri}'s subtask (same operator
     * directory, same subtask index, another attempt number): within one execution attempts
     * never run at once, and an attempt number seen again (a new execution graph) finds its own
     * directory removed by {@link #prepare}. Subtask 0 also collects those of subtask indexes the
     * operator no longer has ({@code >= parallelism}): a rescale after a task manager was killed
     * leaves them to nobody else. The current attempt's directory is not touched.
     */
    static void collectOtherAttempts(
            String uri, String[] nativeOptions, int parallelism, AttemptRun run)
            throws IOException {
        // The URI as given, not as Flink's Path prints it ("scheme:/path"), which the engine
        // reads only for file://.
        int slash = uri.lastIndexOf('/');
        Matcher own = ATTEMPT_DIR.matcher(uri.substring(slash + 1));
        if (!own.matches() || slash <= 0) {
            return;
        }
        String operatorDir = uri.substring(0, slash);
        for (String name : children(operatorDir, nativeOptions)) {
            Matcher other = ATTEMPT_DIR.matcher(name);
            if (!other.matches()) {
                continue;
            }
            boolean earlierAttempt =
                    other.group(1).equals(own.group(1)) && !other.group(2).equals(own.group(2));
            boolean goneSubtask =
                    own.group(1).equals("0") && Long.parseLong(other.group(1)) >= parallelism;
            if (earlierAttempt || goneSubtask) {
                String dead = operatorDir + "/" + name;
                LOG.info(
                        "Collecting {}, left by {}",
                        dead,
                        earlierAttempt
                                ? "an earlier attempt of the subtask"
                                : "a subtask the operator no longer has");
                // Another subtask's restore may reference a gone subtask's files: only an earlier
                // attempt of this subtask, in this run, is collected with what its run knows.
                boolean sameRun = earlierAttempt && run.sameRun(children(dead, nativeOptions));
                delete(dead, nativeOptions, false, sameRun ? run : null);
            }
        }
    }

    /**
     * Deletes the temporary files ({@link FlinkFsBridge#TEMP_PREFIX}) under the directory of a
     * closed or dead DB: writes its writer never published (its task manager was killed while it
     * wrote). Where the engine serves the scheme itself (s3), an unfinished upload leaves no file.
     */
    private static void deleteAbandonedTemporaries(String uri, String[] nativeOptions)
            throws IOException {
        File local = localDirectory(uri);
        if (local != null) {
            try (Stream<java.nio.file.Path> files = Files.walk(local.toPath())) {
                for (java.nio.file.Path file : (Iterable<java.nio.file.Path>) files::iterator) {
                    if (file.getFileName().toString().startsWith(FlinkFsBridge.TEMP_PREFIX)) {
                        Files.deleteIfExists(file);
                    }
                }
            } catch (NoSuchFileException gone) {
                // deleted meanwhile (the JobManager removes the directory with its last file)
            } catch (UncheckedIOException e) {
                if (!(e.getCause() instanceof NoSuchFileException)) {
                    throw e.getCause();
                }
            }
            return;
        }
        if (ForStNative.listChildren(uri, nativeOptions) != null) {
            return;
        }
        Path dir = new Path(uri);
        deleteTemporariesUnder(dir.getFileSystem(), dir);
    }

    private static void deleteTemporariesUnder(FileSystem fs, Path dir) throws IOException {
        FileStatus[] entries;
        try {
            entries = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            return;
        }
        for (FileStatus entry : entries == null ? new FileStatus[0] : entries) {
            if (entry.isDir()) {
                deleteTemporariesUnder(fs, entry.getPath());
            } else if (entry.getPath().getName().startsWith(FlinkFsBridge.TEMP_PREFIX)) {
                fs.delete(entry.getPath(), false);
            }
        }
    }

    /** The names under a directory; none if it does not exist or cannot be listed. */
    private static List<String> children(String dirUri, String[] nativeOptions) throws IOException {
        File local = localDirectory(dirUri);
        if (local != null) {
            String[] names = local.list();
            return names == null ? List.of() : List.of(names);
        }
        String[] served = ForStNative.listChildren(dirUri, nativeOptions);
        if (served != null) {
            return List.of(served);
        }
        Path dir = new Path(dirUri);
        FileStatus[] statuses;
        try {
            statuses = dir.getFileSystem().listStatus(dir);
        } catch (FileNotFoundException e) {
            return List.of();
        } catch (IOException e) {
            LOG.warn("Cannot list {} ({})", dirUri, e.toString());
            return List.of();
        }
        List<String> names = new ArrayList<>();
        for (FileStatus status : statuses == null ? new FileStatus[0] : statuses) {
            names.add(status.getPath().getName());
        }
        return names;
    }

    /** Removes the operator directory above {@code dbDir}, then the job directory, while empty. */
    private static void removeEmptyParents(Path dbDir) {
        Path operator = dbDir.getParent();
        if (operator == null
                || !OPERATOR_DIR.matcher(operator.getName()).matches()
                || !removeEmptyDirectory(operator)) {
            return;
        }
        Path job = operator.getParent();
        if (job != null && JOB_DIR.matcher(job.getName()).matches()) {
            removeEmptyDirectory(job);
        }
    }

    /** Deletes {@code dir} if it is an empty directory; whether it is gone. */
    private static boolean removeEmptyDirectory(Path dir) {
        File local = localDirectory(dir.toUri().toString());
        try {
            if (local != null) {
                synchronized (LOCAL_LAYOUT) {
                    Files.deleteIfExists(local.toPath());
                }
                return true;
            }
            FileSystem fs = dir.getFileSystem();
            return fs.delete(dir, false) || !fs.exists(dir);
        } catch (IOException e) { // not empty, or no Flink file system for the scheme
            return false;
        }
    }

    /** Creates {@code dir} and its parents while other subtasks may remove empty parents. */
    static void createRacingCleanup(java.nio.file.Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                synchronized (LOCAL_LAYOUT) {
                    Files.createDirectories(dir);
                }
                return;
            } catch (NoSuchFileException | FileAlreadyExistsException e) {
                // a parent made by this call was removed by another process's cleanup (the JDK
                // reports a parent that vanished between its two checks as "already exists"):
                // once the directory exists, its parents are not empty and no cleanup removes them
                if (attempt == CREATE_ATTEMPTS) {
                    throw new IOException(
                            "Cannot create " + dir + ": its parents were removed " + attempt
                                    + " times while it was being created",
                            e);
                }
            }
        }
    }

    /**
     * Deletes the DB directory itself, unless it holds files the DB handed over to checkpoints:
     * then only what the DB owns goes (their owner, Flink's SharedStateRegistry, deletes the
     * rest), and with {@code reopened} an empty DB stays to protect them from the DB opened there
     * next. Where the engine serves the scheme itself (s3), through the engine's store: it wrote
     * the files with exactly these settings (endpoint, credentials), which Flink may not have a
     * file system for (no flink-s3-fs-* plugin) or may reach with other ones, and it deletes in
     * bulk. Other schemes through Flink's file system, as the engine reaches them. With {@code
     * run}, the DB died in that run: files only aborted checkpoints handed over go too (see {@link
     * AttemptRun}). Returns whether the directory is gone.
     */
    private static boolean delete(
            String uri, String[] nativeOptions, boolean reopened, @Nullable AttemptRun run)
            throws IOException {
        File local = localDirectory(uri);
        if (local != null && !local.exists()) {
            return true;
        }
        int kept;
        try {
            kept =
                    run == null
                            ? ForStNative.deleteDatabase(uri, nativeOptions, reopened, -1, null)
                            : ForStNative.deleteDatabase(
                                    uri,
                                    nativeOptions,
                                    reopened,
                                    run.restoredFrom(),
                                    run.referencedIn(uri));
        } catch (Exception e) { // natives throw IOException without declaring it
            if (String.valueOf(e.getMessage()).contains("UnsupportedFileSystemSchemeException")) {
                LOG.warn("Cannot delete {}: no Flink file system for its scheme ({})", uri, e);
                return false;
            }
            throw e;
        }
        if (kept > 0) {
            // The engine's listings skip files still being written; a dead writer's stay there
            // for good, and would keep the directory from ever being removed once the
            // checkpoints' owner deleted the kept files.
            deleteAbandonedTemporaries(uri, nativeOptions);
            LOG.info("Deleted {}, keeping the {} files that checkpoints own", uri, kept);
            return false;
        }
        if (local != null) {
            FileUtils.deleteDirectory(local);
            return true;
        }
        if (ForStNative.deleteDirectory(uri, nativeOptions)) {
            return true;
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
            return false;
        }
        if (fs.exists(path)) {
            fs.delete(path, true);
        }
        return true;
    }
}
