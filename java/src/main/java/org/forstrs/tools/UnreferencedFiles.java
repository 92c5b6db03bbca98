package org.forstrs.tools;

import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import org.forstrs.flink.state.DbLease;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The files under the {@code shared} directories of a checkpoint directory ({@code
 * execution.checkpointing.dir}: {@code <root>/<job id>/{chk-<n>, shared, taskowned}}) that no
 * retained checkpoint under it references. Flink leaves such files when a job is cancelled or
 * stopped while checkpoints are in flight (it ignores their acknowledgements once its checkpoint
 * coordinator shut down), when a JobManager fails before it deleted subsumed files, or after a
 * job was stopped abruptly; with {@code primary-dir: checkpoint-dir} also the directories of
 * databases whose task manager died with the job. Nothing else deletes them.
 *
 * <p>A file counts as referenced when the {@code _metadata} of any {@code chk-<n>} of any job
 * under the root names it: a job restored from another job's checkpoint (claim mode) references
 * that job's files. Jobs that may still run are left alone, since the files of a running job's
 * next checkpoint (and, with {@code checkpoint-dir}, its databases) are referenced by nothing yet:
 * a job with a {@link DbLease} renewed within the lease timeout (an open database), a job with a
 * database directory (one holding a {@code LOCK}) that no lease names (gc cannot tell whether it
 * is open: a version without leases may run it), and, as an extra guard, a job directory where
 * anything was written more recently than {@code minAge} ago.
 */
public final class UnreferencedFiles {

    private static final Pattern JOB_DIR = Pattern.compile("[0-9a-f]{32}");
    private static final Pattern CHECKPOINT_DIR = Pattern.compile("chk-\\d+");
    /** What a database directory holds while its database is open (the engine's writer lock). */
    private static final String LOCK = "LOCK";

    /** A job directory's verdict. */
    public static final class Job {
        public final Path dir;
        /** The retained checkpoints found in it ({@code chk-<n>} with {@code _metadata}). */
        public final List<Path> checkpoints = new ArrayList<>();
        /** Files under its {@code shared} directory that no retained checkpoint references. */
        public final List<FileStatus> unreferenced = new ArrayList<>();
        /** Files under its {@code shared} directory, referenced or not. */
        public int sharedFiles;
        /** Why the job was left alone, or null. */
        public String skipped;

        Job(Path dir) {
            this.dir = dir;
        }

        public long unreferencedBytes() {
            return unreferenced.stream().mapToLong(FileStatus::getLen).sum();
        }
    }

    private UnreferencedFiles() {}

    /**
     * Scans every job directory under {@code root}; deletes nothing.
     *
     * @param minAge how long ago the last write into a job directory must be for it to be scanned
     * @param leaseTimeout how long a lease counts as renewed by an open database
     * @param nowMillis the current time, as the file system's modification times count it
     */
    public static List<Job> scan(Path root, Duration minAge, Duration leaseTimeout, long nowMillis)
            throws IOException {
        FileSystem fs = root.getFileSystem();
        List<Job> jobs = new ArrayList<>();
        for (FileStatus entry : list(fs, root)) {
            if (entry.isDir() && JOB_DIR.matcher(entry.getPath().getName()).matches()) {
                jobs.add(new Job(entry.getPath()));
            }
        }
        Set<String> referenced = new HashSet<>();
        for (Job job : jobs) {
            for (FileStatus entry : list(fs, job.dir)) {
                Path metadata = new Path(entry.getPath(), "_metadata");
                if (entry.isDir()
                        && CHECKPOINT_DIR.matcher(entry.getPath().getName()).matches()
                        && fs.exists(metadata)) {
                    job.checkpoints.add(entry.getPath());
                    referenced.addAll(ReferencedFiles.of(entry.getPath()));
                }
            }
        }
        for (Job job : jobs) {
            job.skipped = liveness(fs, job.dir, leaseTimeout, nowMillis);
            if (job.skipped != null) {
                continue;
            }
            List<FileStatus> all = new ArrayList<>();
            walk(fs, job.dir, all, new ArrayList<>());
            long newest = all.stream().mapToLong(FileStatus::getModificationTime).max().orElse(0);
            if (nowMillis - newest < minAge.toMillis()) {
                job.skipped =
                        "written "
                                + Duration.ofMillis(Math.max(0, nowMillis - newest)).toSeconds()
                                + " s ago, less than the minimum age "
                                + minAge.toSeconds()
                                + " s: it may be running";
                continue;
            }
            List<FileStatus> shared = new ArrayList<>();
            walk(fs, new Path(job.dir, "shared"), shared, new ArrayList<>());
            job.sharedFiles = shared.size();
            for (FileStatus file : shared) {
                if (!referenced.contains(ReferencedFiles.key(file.getPath()))) {
                    job.unreferenced.add(file);
                }
            }
        }
        return jobs;
    }

    /**
     * Why the job must be left alone as possibly running, or null: a lease renewed within {@code
     * leaseTimeout}, or a database directory under {@code shared} no lease names.
     */
    private static String liveness(FileSystem fs, Path jobDir, Duration leaseTimeout, long now)
            throws IOException {
        List<String> renewed = new ArrayList<>();
        Set<String> leased = new HashSet<>();
        for (FileStatus lease : list(fs, DbLease.directoryOf(jobDir))) {
            String db;
            try {
                db = DbLease.readDbUri(lease.getPath());
            } catch (FileNotFoundException e) {
                continue; // closed meanwhile
            }
            leased.add(pathOf(db));
            if (now - lease.getModificationTime() < leaseTimeout.toMillis()) {
                renewed.add(db);
            }
        }
        if (!renewed.isEmpty()) {
            return "running: "
                    + renewed.size()
                    + " open database(s) renewed their lease within "
                    + leaseTimeout.toSeconds()
                    + " s, e.g. "
                    + renewed.get(0);
        }
        List<FileStatus> shared = new ArrayList<>();
        walk(fs, new Path(jobDir, "shared"), shared, new ArrayList<>());
        for (FileStatus file : shared) {
            Path dbDir = file.getPath().getParent();
            if (file.getPath().getName().equals(LOCK) && !leased.contains(pathOf(dbDir))) {
                return "cannot tell whether the database at "
                        + dbDir
                        + " is open: it holds a LOCK but no lease names it (written by a version"
                        + " without leases?); once its job ended, delete that LOCK to let gc in";
            }
        }
        return null;
    }

    /** A location's path alone, to compare locations written with different schemes. */
    private static String pathOf(Object location) {
        String path = new Path(location.toString()).toUri().getPath();
        return path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
    }

    /**
     * Deletes a scanned job's unreferenced files, then the directories under its {@code shared}
     * directory left empty (deepest first). Returns the number of files deleted.
     */
    public static int delete(Job job) throws IOException {
        if (job.skipped != null) {
            return 0;
        }
        Path shared = new Path(job.dir, "shared");
        FileSystem fs = shared.getFileSystem();
        int deleted = 0;
        for (FileStatus file : job.unreferenced) {
            if (fs.delete(file.getPath(), false)) {
                deleted++;
            }
        }
        List<Path> dirs = new ArrayList<>();
        walk(fs, shared, new ArrayList<>(), dirs);
        // walk lists a directory before what it holds: deepest last, so go backwards
        for (int i = dirs.size() - 1; i >= 0; i--) {
            if (list(fs, dirs.get(i)).length == 0) {
                fs.delete(dirs.get(i), false);
            }
        }
        return deleted;
    }

    /** Files and directories (not {@code dir} itself) under {@code dir}, parents first. */
    private static void walk(FileSystem fs, Path dir, List<FileStatus> files, List<Path> dirs)
            throws IOException {
        for (FileStatus entry : list(fs, dir)) {
            if (entry.isDir()) {
                dirs.add(entry.getPath());
                walk(fs, entry.getPath(), files, dirs);
            } else {
                files.add(entry);
            }
        }
    }

    /** The entries of a directory; none if it does not exist (any more). */
    private static FileStatus[] list(FileSystem fs, Path dir) throws IOException {
        try {
            FileStatus[] entries = fs.listStatus(dir);
            return entries == null ? new FileStatus[0] : entries;
        } catch (FileNotFoundException e) {
            return new FileStatus[0];
        }
    }
}
