package org.forstrs.tools;

import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

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
 * that job's files. Jobs that may still run are left alone: a job directory where anything was
 * written more recently than {@code minAge} ago is skipped, since the files of a running job's
 * next checkpoint (and, with {@code checkpoint-dir}, its databases) are referenced by nothing yet.
 */
public final class UnreferencedFiles {

    private static final Pattern JOB_DIR = Pattern.compile("[0-9a-f]{32}");
    private static final Pattern CHECKPOINT_DIR = Pattern.compile("chk-\\d+");

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
     * @param nowMillis the current time, as the file system's modification times count it
     */
    public static List<Job> scan(Path root, Duration minAge, long nowMillis) throws IOException {
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
