package org.forstrs.flink.state;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystem.WriteMode;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageAccess;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.io.Closeable;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Tells {@code ForStTool gc}, where it looks, that a job's database is open: a small file in the
 * job's shared checkpoint directory ({@code
 * <checkpoints>/<job>/shared/forst-rs-leases/op_<operator>.subtask_<i>_attempt_<n>.lease},
 * holding the database's URI), rewritten every {@link #RENEW_INTERVAL} while the database is open
 * and deleted when it closes. gc leaves a job alone while any of its leases is younger than its
 * lease timeout, however long ago the job last wrote anything else: an open database (with {@code
 * primary-dir: checkpoint-dir}) and the copies of a checkpoint in flight are referenced by no
 * checkpoint yet. A task manager that died leaves its lease to age (gc collects after it) until
 * the subtask's next attempt deletes it.
 */
public final class DbLease implements Closeable {

    private static final Logger LOG = LoggerFactory.getLogger(DbLease.class);

    /** The directory of the leases under a job's shared checkpoint directory. */
    public static final String DIRECTORY = "forst-rs-leases";

    public static final String SUFFIX = ".lease";

    /** A DB directory's name: the subtask index and the attempt number (see DbDirectory). */
    private static final Pattern ATTEMPT = Pattern.compile("subtask_(\\d+)_attempt_(\\d+)");

    /** How often an open database rewrites its lease; gc's timeout must be a few of these. */
    public static final Duration RENEW_INTERVAL = Duration.ofSeconds(30);

    /** One daemon thread for every lease of the process: a renewal is one small write. */
    private static final ScheduledExecutorService RENEWER =
            Executors.newSingleThreadScheduledExecutor(
                    runnable -> {
                        Thread thread = new Thread(runnable, "forst-rs-lease-renewer");
                        thread.setDaemon(true);
                        return thread;
                    });

    /** Each retry follows another lease's close that removed the directory meanwhile. */
    private static final int CREATE_ATTEMPTS = 10;

    private final Path file;
    private final byte[] content;
    private final ScheduledFuture<?> renewal;
    private boolean closed;

    private DbLease(Path file, String dbUri) throws IOException {
        this.file = file;
        this.content = (dbUri + "\n").getBytes(StandardCharsets.UTF_8);
        write();
        long interval = RENEW_INTERVAL.toMillis();
        this.renewal =
                RENEWER.scheduleWithFixedDelay(
                        this::renew, interval, interval, TimeUnit.MILLISECONDS);
    }

    /**
     * Takes a lease for the database at {@code dbUri} in the job's shared checkpoint directory, or
     * returns null where checkpoints do not go to a file system (nothing there for gc to look at).
     *
     * @throws IOException if the lease cannot be written: gc could not see the database
     */
    @Nullable
    public static DbLease take(@Nullable CheckpointStorageAccess storage, String dbUri)
            throws IOException {
        if (!(storage instanceof FsCheckpointStorageAccess)) {
            return null;
        }
        Path dir = directoryOf(((FsCheckpointStorageAccess) storage).getCheckpointsDirectory());
        Path db = new Path(dbUri);
        Matcher attempt = ATTEMPT.matcher(db.getName());
        String operator = db.getParent() == null ? "" : db.getParent().getName();
        if (!attempt.matches() || operator.isEmpty()) {
            return new DbLease(new Path(dir, UUID.randomUUID() + SUFFIX), dbUri);
        }
        // Within one execution a subtask's attempts never run at once: the leases of its other
        // attempts are those of databases that died with their task managers.
        String subtask = operator + "." + "subtask_" + attempt.group(1) + "_attempt_";
        FileSystem fs = dir.getFileSystem();
        FileStatus[] leases = fs.exists(dir) ? fs.listStatus(dir) : null;
        for (FileStatus lease : leases == null ? new FileStatus[0] : leases) {
            String name = lease.getPath().getName();
            if (name.startsWith(subtask) && !name.equals(operator + "." + db.getName() + SUFFIX)) {
                fs.delete(lease.getPath(), false);
            }
        }
        return new DbLease(new Path(dir, operator + "." + db.getName() + SUFFIX), dbUri);
    }

    /** Where the leases of the job whose checkpoint directory is {@code jobDir} lie. */
    public static Path directoryOf(Path jobDir) {
        return new Path(
                new Path(jobDir, AbstractFsCheckpointStorageAccess.CHECKPOINT_SHARED_STATE_DIR),
                DIRECTORY);
    }

    /** The URI of the database a lease file names. */
    public static String readDbUri(Path lease) throws IOException {
        try (FSDataInputStream in = lease.getFileSystem().open(lease)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
        }
    }

    private void write() throws IOException {
        FileSystem fs = file.getFileSystem();
        for (int attempt = 1; ; attempt++) {
            try (FSDataOutputStream out = fs.create(file, WriteMode.OVERWRITE)) {
                out.write(content);
                return;
            } catch (FileNotFoundException | NoSuchFileException e) {
                // another lease's close removed the directory after this create made it
                if (attempt == CREATE_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    /** Under the lock {@link #close} takes: a renewal never writes the lease after its close. */
    private synchronized void renew() {
        if (closed) {
            return;
        }
        try {
            write();
        } catch (IOException | RuntimeException e) {
            LOG.warn("Could not renew the ForSt-RS lease {}; trying again later", file, e);
        }
    }

    /** Stops the renewals and deletes the lease (and its directory, once empty). */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        renewal.cancel(false);
        try {
            FileSystem fs = file.getFileSystem();
            fs.delete(file, false);
        } catch (IOException | RuntimeException e) {
            LOG.warn("Could not delete the ForSt-RS lease {}; it ages out for gc", file, e);
            return;
        }
        try {
            file.getFileSystem().delete(file.getParent(), false);
        } catch (IOException | RuntimeException e) {
            // another database's lease is in it: the last one to close removes it
        }
    }
}
