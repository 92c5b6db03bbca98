package org.forstrs.soak;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.plugin.PluginUtils;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.StateObject;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.AbstractChannelStateHandle;

import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.TreeSet;

/**
 * Prints the files a checkpoint's or savepoint's {@code _metadata} references, one URI a line:
 * {@code java MetadataFiles <local copy of _metadata> <the checkpoint's directory URI>...} (pairs).
 * Relative handles (savepoints) resolve against the directory URI, so nothing but the local copy
 * is read (the directory's file system must be there to resolve them: the cluster's configuration
 * from {@code FLINK_CONF_DIR} and its plugins from {@code FLINK_PLUGINS_DIR}). A handle of a kind
 * not known here is printed as {@code UNKNOWN <class>}.
 */
public final class MetadataFiles {

    private MetadataFiles() {}

    public static void main(String[] args) throws IOException {
        Configuration config =
                GlobalConfiguration.loadConfiguration(System.getenv("FLINK_CONF_DIR"));
        FileSystem.initialize(config, PluginUtils.createPluginManagerFromRootFolder(config));
        TreeSet<String> files = new TreeSet<>();
        for (int a = 0; a + 1 < args.length; a += 2) {
            CheckpointMetadata metadata;
            try (DataInputStream in = new DataInputStream(new FileInputStream(args[a]))) {
                metadata =
                        Checkpoints.loadCheckpointMetadata(
                                in, MetadataFiles.class.getClassLoader(), args[a + 1]);
            }
            for (OperatorState operator : metadata.getOperatorStates()) {
                if (operator.getCoordinatorState() != null) {
                    add(operator.getCoordinatorState(), files);
                }
                for (OperatorSubtaskState subtask : operator.getStates()) {
                    subtask.getManagedOperatorState().forEach(h -> add(h, files));
                    subtask.getRawOperatorState().forEach(h -> add(h, files));
                    subtask.getManagedKeyedState().forEach(h -> add(h, files));
                    subtask.getRawKeyedState().forEach(h -> add(h, files));
                    subtask.getInputChannelState().forEach(h -> add(h, files));
                    subtask.getResultSubpartitionState().forEach(h -> add(h, files));
                }
            }
        }
        files.forEach(System.out::println);
    }

    private static void add(StateObject handle, TreeSet<String> files) {
        if (handle instanceof IncrementalRemoteKeyedStateHandle) {
            IncrementalRemoteKeyedStateHandle incremental =
                    (IncrementalRemoteKeyedStateHandle) handle;
            add(incremental.getMetaDataStateHandle(), files);
            incremental.getSharedState().forEach(f -> add(f.getHandle(), files));
            incremental.getPrivateState().forEach(f -> add(f.getHandle(), files));
        } else if (handle instanceof KeyGroupsStateHandle) {
            add(((KeyGroupsStateHandle) handle).getDelegateStateHandle(), files);
        } else if (handle instanceof OperatorStreamStateHandle) {
            add(((OperatorStreamStateHandle) handle).getDelegateStateHandle(), files);
        } else if (handle instanceof AbstractChannelStateHandle) {
            add(((AbstractChannelStateHandle<?>) handle).getDelegate(), files);
        } else if (handle instanceof FileStateHandle) {
            files.add(((FileStateHandle) handle).getFilePath().toString());
        } else if (handle instanceof ByteStreamStateHandle
                || handle instanceof PlaceholderStreamStateHandle) {
            // inline bytes, or a file an earlier checkpoint's handle names
        } else if (handle instanceof StreamStateHandle) {
            files.add("UNKNOWN " + handle.getClass().getName());
        } else if (handle != null) {
            files.add("UNKNOWN " + handle.getClass().getName());
        }
    }
}
