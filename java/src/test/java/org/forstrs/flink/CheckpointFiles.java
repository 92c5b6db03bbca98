package org.forstrs.flink;

import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;

import org.forstrs.tools.ReferencedFiles;

import java.io.DataInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.security.MessageDigest;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Reads Flink's checkpoint directory layout: {@code <dir>/<job>/{chk-<n>, shared, taskowned}},
 * local (java.nio paths) or on any Flink file system (URIs).
 */
final class CheckpointFiles {

    private CheckpointFiles() {}

    /** The completed checkpoint (with {@code _metadata}) of the highest id, if any. */
    static Optional<Path> latestCompleted(Path jobDir) throws IOException {
        return latestCompleted(jobDir.toUri().toString()).map(uri -> Paths.get(URI.create(uri)));
    }

    /**
     * {@link #latestCompleted(Path)} on any Flink file system: the URI of the checkpoint's
     * directory.
     */
    static Optional<String> latestCompleted(String jobDir) throws IOException {
        org.apache.flink.core.fs.Path dir = new org.apache.flink.core.fs.Path(jobDir);
        FileSystem fs = dir.getFileSystem();
        while (true) {
            if (!fs.exists(dir)) {
                return Optional.empty();
            }
            try {
                return latestCompleted(fs, fs.listStatus(dir));
            } catch (FileNotFoundException e) {
                // A running job subsumed a checkpoint between the listing of its name and the
                // stat of its directory (Flink's local file system does both): list again.
            }
        }
    }

    private static Optional<String> latestCompleted(FileSystem fs, FileStatus[] entries)
            throws IOException {
        Optional<org.apache.flink.core.fs.Path> latest = Optional.empty();
        for (FileStatus status : entries) {
            org.apache.flink.core.fs.Path candidate = status.getPath();
            if (status.isDir()
                    && candidate.getName().startsWith("chk-")
                    && fs.exists(new org.apache.flink.core.fs.Path(candidate, "_metadata"))
                    && latest.map(l -> checkpointId(l.getName()) < checkpointId(candidate.getName()))
                            .orElse(true)) {
                latest = Optional.of(candidate);
            }
        }
        return latest.map(p -> p.toUri().toString());
    }

    /** The ids of the completed ({@code _metadata} written) checkpoints under {@code jobDir}. */
    static Set<Long> completedIds(String jobDir) throws IOException {
        org.apache.flink.core.fs.Path dir = new org.apache.flink.core.fs.Path(jobDir);
        FileSystem fs = dir.getFileSystem();
        Set<Long> ids = new TreeSet<>();
        FileStatus[] entries;
        try {
            entries = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            return ids;
        }
        for (FileStatus entry : entries == null ? new FileStatus[0] : entries) {
            String name = entry.getPath().getName();
            if (name.matches("chk-\\d+")
                    && fs.exists(new org.apache.flink.core.fs.Path(entry.getPath(), "_metadata"))) {
                ids.add(Long.parseLong(name.substring(4)));
            }
        }
        return ids;
    }

    static long checkpointId(Path checkpointDir) {
        return checkpointId(checkpointDir.getFileName().toString());
    }

    /** The id of a checkpoint directory's name or URI ({@code .../chk-<n>}). */
    static long checkpointId(String checkpointDir) {
        String name = checkpointDir.substring(checkpointDir.lastIndexOf('/') + 1);
        return Long.parseLong(name.substring(4));
    }

    /**
     * Every file under {@code <jobDir>/shared}; what is deleted while it is walked (the
     * JobManager discards subsumed checkpoints asynchronously) is left out.
     */
    static Set<Path> sharedFiles(Path jobDir) throws IOException {
        return regularFilesUnder(jobDir.resolve("shared"));
    }

    /**
     * The regular files under {@code dir} (absolute, normalized), none if it does not exist;
     * files and directories deleted while it is walked (by a running job or the JobManager) are
     * left out instead of failing the walk.
     */
    static Set<Path> regularFilesUnder(Path dir) throws IOException {
        Set<Path> files = new HashSet<>();
        if (!Files.isDirectory(dir)) {
            return files;
        }
        Files.walkFileTree(
                dir,
                new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                        if (attrs.isRegularFile()) {
                            files.add(file.toAbsolutePath().normalize());
                        }
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult visitFileFailed(Path file, IOException e)
                            throws IOException {
                        if (e instanceof NoSuchFileException) {
                            return FileVisitResult.CONTINUE;
                        }
                        throw e;
                    }
                });
        return files;
    }

    /**
     * Every directory under {@code <jobDir>/shared} (not itself) that holds nothing. Throws
     * {@link UncheckedIOException} if a directory vanished while it was walked (ask again).
     */
    static Set<Path> emptySharedDirectories(Path jobDir) throws IOException {
        Path shared = jobDir.resolve("shared");
        if (!Files.isDirectory(shared)) {
            return Set.of();
        }
        Set<Path> empty = new HashSet<>();
        try (Stream<Path> dirs = Files.walk(shared)) {
            for (Path dir : dirs.filter(Files::isDirectory).collect(Collectors.toList())) {
                try (Stream<Path> entries = Files.list(dir)) {
                    if (!dir.equals(shared) && entries.findAny().isEmpty()) {
                        empty.add(dir.toAbsolutePath().normalize());
                    }
                } catch (NoSuchFileException e) {
                    // removed since the walk saw it
                }
            }
        }
        return empty;
    }

    /** A DB directory's name: the subtask index and the attempt number. */
    private static final Pattern ATTEMPT_DIR = Pattern.compile("subtask_(\\d+)_attempt_(\\d+)");

    /**
     * The SSTs under {@code <jobDir>/shared} that nothing references: in the directory of an
     * attempt that is not its subtask's latest (so no open DB owns them) and referenced by no
     * completed checkpoint. A checkpoint subsumed while its metadata is read makes the whole
     * look start again (a newer one, completed since, may hold the same files). Files the
     * JobManager is deleting still show until they are gone.
     */
    static Set<Path> unreferencedOfEarlierAttempts(Path jobDir) throws IOException {
        while (true) {
            Set<Path> unreferenced = sstsOfEarlierAttempts(sharedFiles(jobDir));
            try {
                for (long id : completedIds(jobDir.toUri().toString())) {
                    unreferenced.removeAll(referencedSstFiles(jobDir.resolve("chk-" + id)));
                }
            } catch (FileNotFoundException | NoSuchFileException subsumedMeanwhile) {
                continue;
            }
            unreferenced.removeIf(file -> !Files.exists(file));
            return unreferenced;
        }
    }

    /** Of {@code files}, the SSTs in a DB directory of an attempt that is not its subtask's latest. */
    private static Set<Path> sstsOfEarlierAttempts(Set<Path> files) {
        Map<String, Integer> latestAttempt = new HashMap<>();
        for (Path file : files) {
            Matcher attempt = attemptOf(file);
            if (attempt != null) {
                latestAttempt.merge(
                        subtaskOf(file, attempt), Integer.parseInt(attempt.group(2)), Math::max);
            }
        }
        Set<Path> earlier = new HashSet<>();
        for (Path file : files) {
            Matcher attempt = attemptOf(file);
            if (attempt != null
                    && file.getFileName().toString().endsWith(".sst")
                    && Integer.parseInt(attempt.group(2))
                            < latestAttempt.get(subtaskOf(file, attempt))) {
                earlier.add(file);
            }
        }
        return earlier;
    }

    private static Matcher attemptOf(Path file) {
        Path dir = file.getParent();
        Matcher attempt = dir == null ? null : ATTEMPT_DIR.matcher(dir.getFileName().toString());
        return attempt != null && attempt.matches() ? attempt : null;
    }

    /** The operator directory and subtask index of a file in a DB directory. */
    private static String subtaskOf(Path file, Matcher attempt) {
        return file.getParent().getParent() + "#" + attempt.group(1);
    }

    /** The SST files the checkpoint's ForSt-RS keyed state handles reference. */
    static Set<Path> referencedSstFiles(Path checkpointDir) throws IOException {
        Set<Path> files = new HashSet<>();
        for (IncrementalRemoteKeyedStateHandle handle : keyedHandles(checkpointDir)) {
            for (HandleAndLocalPath sst : handle.getSharedState()) {
                files.add(localPath(sst.getHandle()));
            }
        }
        return files;
    }

    /** The ForSt-RS keyed state handles in a checkpoint's or savepoint's {@code _metadata}. */
    static Set<IncrementalRemoteKeyedStateHandle> keyedHandles(Path checkpointDir)
            throws IOException {
        return keyedHandles(checkpointDir.toUri().toString());
    }

    /** {@link #keyedHandles(Path)} on any Flink file system. */
    static Set<IncrementalRemoteKeyedStateHandle> keyedHandles(String checkpointDir)
            throws IOException {
        org.apache.flink.core.fs.Path metadataFile =
                new org.apache.flink.core.fs.Path(checkpointDir, "_metadata");
        CheckpointMetadata metadata;
        try (InputStream in = metadataFile.getFileSystem().open(metadataFile)) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            new DataInputStream(in),
                            CheckpointFiles.class.getClassLoader(),
                            checkpointDir);
        }
        Set<IncrementalRemoteKeyedStateHandle> handles = new HashSet<>();
        for (OperatorState operator : metadata.getOperatorStates()) {
            for (OperatorSubtaskState subtask : operator.getStates()) {
                for (KeyedStateHandle keyed : subtask.getManagedKeyedState()) {
                    if (keyed instanceof IncrementalRemoteKeyedStateHandle) {
                        handles.add((IncrementalRemoteKeyedStateHandle) keyed);
                    }
                }
            }
        }
        return handles;
    }

    private static Path localPath(StreamStateHandle handle) {
        if (!(handle instanceof FileStateHandle)) {
            throw new AssertionError("SST held as " + handle + ", expected a file");
        }
        return Paths.get(((FileStateHandle) handle).getFilePath().toUri().getPath())
                .toAbsolutePath()
                .normalize();
    }

    /**
     * Waits for a checkpoint of {@code job} triggered after now and completed; returns its URI.
     * Flink runs one checkpoint at a time in the tests: of two that complete after now, the
     * second was triggered after the first completed, so its barrier follows every record the
     * input handed on so far.
     */
    static String checkpointAfterNow(JobClient job, String jobDir) throws Exception {
        Set<Long> before = completedIds(jobDir);
        Await.until(
                "two checkpoints completed after " + before,
                () -> {
                    Set<Long> since = completedIds(jobDir);
                    since.removeAll(before);
                    return since.size() >= 2;
                },
                job);
        Set<Long> since = completedIds(jobDir);
        since.removeAll(before);
        return jobDir + "/chk-" + Collections.max(since);
    }

    /**
     * Everything under {@code dir} on any Flink file system, by {@link ReferencedFiles#key}: each
     * file with a hash of its bytes and its modification time, each directory as {@code "dir"}
     * (key ending in '/'). Files the JobManager deletes meanwhile are left out.
     */
    static Map<String, String> hashedContents(String dir) throws Exception {
        Map<String, String> files = new TreeMap<>();
        org.apache.flink.core.fs.Path root = new org.apache.flink.core.fs.Path(dir);
        collect(root.getFileSystem(), root, files);
        return files;
    }

    private static void collect(
            FileSystem fs, org.apache.flink.core.fs.Path dir, Map<String, String> files)
            throws Exception {
        FileStatus[] children = fs.listStatus(dir);
        for (FileStatus child : children == null ? new FileStatus[0] : children) {
            if (child.isDir()) {
                files.put(ReferencedFiles.key(child.getPath()) + "/", "dir");
                collect(fs, child.getPath(), files);
                continue;
            }
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            try (InputStream in = fs.open(child.getPath())) {
                digest.update(in.readAllBytes());
            } catch (FileNotFoundException e) {
                continue; // the JobManager discarding a subsumed checkpoint meanwhile
            }
            files.put(
                    ReferencedFiles.key(child.getPath()),
                    HexFormat.of().formatHex(digest.digest()) + " " + child.getModificationTime());
        }
    }
}
