package org.forstrs.flink.snapshot;

import org.apache.flink.runtime.state.SnapshotResources;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import org.forstrs.flink.state.NativeCheckpoint;

import java.util.List;
import java.util.Map;

/**
 * What the synchronous phase of a checkpoint captured: the pinned native checkpoint, the state
 * meta info at that moment, and the shared files it may reuse. {@link #release()} unpins.
 */
public final class ForStSnapshotResources implements SnapshotResources {

    final NativeCheckpoint checkpoint;
    final List<StateMetaInfoSnapshot> stateMetaInfos;
    final Map<String, StreamStateHandle> reusableFiles;
    final long syncNanos;

    ForStSnapshotResources(
            NativeCheckpoint checkpoint,
            List<StateMetaInfoSnapshot> stateMetaInfos,
            Map<String, StreamStateHandle> reusableFiles,
            long syncNanos) {
        this.checkpoint = checkpoint;
        this.stateMetaInfos = stateMetaInfos;
        this.reusableFiles = reusableFiles;
        this.syncNanos = syncNanos;
    }

    @Override
    public void release() {
        checkpoint.release();
    }
}
