package org.forstrs.tools;

import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The checkpoints and savepoints under the directory the web monitor serves: the directory
 * itself if it holds a {@code _metadata}, else its sub-directories that do (a job directory's
 * {@code chk-<n>}, savepoints) and one level further (a checkpoint directory's {@code
 * <job>/chk-<n>}). A request names a checkpoint by its name here; a name not listed reads
 * nothing, so no request reaches a path outside the directory.
 */
final class ServedCheckpoints {

    private static final Pattern CHECKPOINT_DIR = Pattern.compile("chk-(\\d{1,18})");

    /** A checkpoint's name (its path below the root, or the root's name) and directory. */
    record Entry(String name, Path dir, Instant modified) {}

    private final Path root;

    ServedCheckpoints(Path root) {
        this.root = root;
    }

    Path root() {
        return root;
    }

    /**
     * The checkpoints, listed afresh (a running job adds and subsumes them): {@code chk-<n>} by
     * {@code n} and others by name, per parent.
     */
    List<Entry> list() throws IOException {
        FileSystem fs = root.getFileSystem();
        List<Entry> entries = new ArrayList<>();
        Optional<Instant> own = metadataTime(fs, root);
        if (own.isPresent()) {
            entries.add(new Entry(root.getName(), root, own.get()));
            return entries;
        }
        for (FileStatus child : sorted(fs.listStatus(root))) {
            String name = child.getPath().getName();
            Optional<Instant> modified = metadataTime(fs, child.getPath());
            if (modified.isPresent()) {
                entries.add(new Entry(name, child.getPath(), modified.get()));
            } else if (!name.equals("shared") && !name.equals("taskowned")) {
                // a job directory under execution.checkpointing.dir; its shared files are
                // never listed (there may be very many)
                for (FileStatus grandchild : sorted(fs.listStatus(child.getPath()))) {
                    Path dir = grandchild.getPath();
                    Optional<Instant> time = metadataTime(fs, dir);
                    if (time.isPresent()) {
                        entries.add(new Entry(name + "/" + dir.getName(), dir, time.get()));
                    }
                }
            }
        }
        return entries;
    }

    /** The checkpoint named {@code name}, if listed now. */
    Optional<Entry> find(String name) throws IOException {
        return list().stream().filter(e -> e.name().equals(name)).findFirst();
    }

    private static Optional<Instant> metadataTime(FileSystem fs, Path dir) throws IOException {
        Path metadata = new Path(dir, "_metadata");
        if (!fs.exists(metadata)) {
            return Optional.empty();
        }
        try {
            return Optional.of(
                    Instant.ofEpochMilli(fs.getFileStatus(metadata).getModificationTime()));
        } catch (java.io.FileNotFoundException e) {
            return Optional.empty(); // subsumed and deleted just now
        }
    }

    private static List<FileStatus> sorted(FileStatus[] statuses) {
        List<FileStatus> dirs = new ArrayList<>();
        for (FileStatus status : statuses == null ? new FileStatus[0] : statuses) {
            if (status.isDir()) {
                dirs.add(status);
            }
        }
        dirs.sort(
                Comparator.comparing((FileStatus s) -> checkpointNumber(s.getPath().getName()))
                        .thenComparing(s -> s.getPath().getName()));
        return dirs;
    }

    /** {@code n} of {@code chk-<n>}; other names after every checkpoint. */
    private static long checkpointNumber(String name) {
        Matcher m = CHECKPOINT_DIR.matcher(name);
        return m.matches() ? Long.parseLong(m.group(1)) : Long.MAX_VALUE;
    }
}
