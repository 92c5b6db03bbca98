package org.forstrs.tools;

import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.AbstractChannelStateHandle;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.StateObject;
import org.apache.flink.runtime.state.filemerging.EmptySegmentFileStateHandle;
import org.apache.flink.runtime.state.filemerging.SegmentFileStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The files a checkpoint or savepoint references, read from its {@code _metadata} with Flink's
 * own deserializer: keyed state of every backend (ForSt-RS, RocksDB, heap), operator and channel
 * state, coordinator state. A handle of a kind this reader does not know makes it fail: a file
 * it cannot see must never be taken for unreferenced.
 */
public final class ReferencedFiles {

    private ReferencedFiles() {}

    /**
     * The files (as {@link #key}s) that the checkpoint or savepoint in {@code checkpointDir}
     * references.
     */
    public static Set<String> of(Path checkpointDir) throws IOException {
        Map<String, Long> files = new TreeMap<>();
        for (OperatorState operator : load(checkpointDir).getOperatorStates()) {
            files.putAll(withSizes(operator));
        }
        return new TreeSet<>(files.keySet());
    }

    /** The {@code _metadata} of the checkpoint or savepoint in {@code checkpointDir}. */
    public static CheckpointMetadata load(Path checkpointDir) throws IOException {
        Path metadataFile = new Path(checkpointDir, "_metadata");
        try (InputStream in = metadataFile.getFileSystem().open(metadataFile)) {
            return Checkpoints.loadCheckpointMetadata(
                    new DataInputStream(in),
                    ReferencedFiles.class.getClassLoader(),
                    checkpointDir.toString());
        }
    }

    /**
     * The files (as {@link #key}s) one operator's state references, each with its size in bytes
     * (as its handle says; a segment of a merged file counts its segment).
     */
    public static Map<String, Long> withSizes(OperatorState operator) throws IOException {
        Map<String, Long> files = new TreeMap<>();
        try {
            add(operator, files);
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        return files;
    }

    private static void add(OperatorState operator, Map<String, Long> files) {
        add(operator.getCoordinatorState(), files);
        for (OperatorSubtaskState subtask : operator.getStates()) {
            subtask.getManagedOperatorState().forEach(h -> add(h, files));
            subtask.getRawOperatorState().forEach(h -> add(h, files));
            subtask.getManagedKeyedState().forEach(h -> add(h, files));
            subtask.getRawKeyedState().forEach(h -> add(h, files));
            subtask.getInputChannelState().forEach(h -> add(h, files));
            subtask.getResultSubpartitionState().forEach(h -> add(h, files));
        }
    }

    /**
     * How a file is compared: its authority and path without the scheme, which Flink and the
     * engine spell differently for one store ({@code s3://} and {@code s3a://}, {@code file:/}
     * and {@code file:///}).
     */
    public static String key(Path file) {
        String authority = file.toUri().getAuthority();
        String path = file.toUri().getPath();
        String trimmed = path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
        return (authority == null ? "" : authority) + trimmed;
    }

    private static void add(StateObject handle, Map<String, Long> files) {
        if (handle == null
                || handle instanceof ByteStreamStateHandle
                || handle instanceof PlaceholderStreamStateHandle
                || handle instanceof EmptySegmentFileStateHandle) {
            // inline bytes, or a file that an earlier checkpoint's handle names
            return;
        }
        if (handle instanceof IncrementalRemoteKeyedStateHandle) {
            IncrementalRemoteKeyedStateHandle incremental =
                    (IncrementalRemoteKeyedStateHandle) handle;
            add(incremental.getMetaDataStateHandle(), files);
            for (HandleAndLocalPath file : incremental.getSharedState()) {
                add(file.getHandle(), files);
            }
            for (HandleAndLocalPath file : incremental.getPrivateState()) {
                add(file.getHandle(), files);
            }
        } else if (handle instanceof KeyGroupsStateHandle) {
            add(((KeyGroupsStateHandle) handle).getDelegateStateHandle(), files);
        } else if (handle instanceof OperatorStreamStateHandle) {
            add(((OperatorStreamStateHandle) handle).getDelegateStateHandle(), files);
        } else if (handle instanceof AbstractChannelStateHandle) {
            add(((AbstractChannelStateHandle<?>) handle).getDelegate(), files);
        } else if (handle instanceof FileStateHandle) {
            FileStateHandle file = (FileStateHandle) handle;
            files.merge(key(file.getFilePath()), file.getStateSize(), Math::max);
        } else if (handle instanceof SegmentFileStateHandle) {
            // a segment of a file that Flink's file merging shares between states
            SegmentFileStateHandle segment = (SegmentFileStateHandle) handle;
            files.merge(key(segment.getFilePath()), segment.getStateSize(), Long::sum);
        } else {
            throw new UncheckedIOException(
                    new IOException(
                    "A checkpoint references state of a kind this tool does not know ("
                            + handle.getClass().getName()
                            + "): it cannot tell which files that state needs"));
        }
    }
}
