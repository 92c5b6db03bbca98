package org.forstrs.flink.snapshot;

import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SnapshotType.SharingFilesStrategy;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategy;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import org.forstrs.flink.state.NativeCheckpoint;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.ReferencedFiles;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nonnull;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Checkpoints and native savepoints of a ForSt-RS DB (FLIP-428), to any checkpoint storage. The
 * synchronous phase only pins the DB's files and copies the state meta info; the asynchronous
 * phase ({@link ForStAsyncSnapshot}) uploads the files (inside the storage, or as checkpoint
 * streams) and writes the Flink handles. Takes the DB, the state meta infos and the stream factory
 * as parameters, not a backend, so any keyed backend over a {@link NativeDb} can use it.
 */
public final class ForStSnapshotStrategy<K>
        implements SnapshotStrategy<KeyedStateHandle, ForStSnapshotResources>, CheckpointListener {

    private static final Logger LOG = LoggerFactory.getLogger(ForStSnapshotStrategy.class);

    private final NativeDb db;
    private final TypeSerializer<K> keySerializer;
    private final Supplier<List<StateMetaInfoSnapshot>> stateMetaInfos;
    private final KeyGroupRange keyGroupRange;
    private final UUID backendUid;
    private final SharedFileHistory sharedFiles = new SharedFileHistory();
    private final Consumer<CheckpointStats> statsListener;

    public ForStSnapshotStrategy(
            NativeDb db,
            TypeSerializer<K> keySerializer,
            Supplier<List<StateMetaInfoSnapshot>> stateMetaInfos,
            KeyGroupRange keyGroupRange,
            UUID backendUid,
            Consumer<CheckpointStats> statsListener) {
        this.db = db;
        this.keySerializer = keySerializer;
        this.stateMetaInfos = stateMetaInfos;
        this.keyGroupRange = keyGroupRange;
        this.backendUid = backendUid;
        this.statsListener = statsListener;
        ReferencedFiles restored = db.referencedFiles();
        sharedFiles.restoredFrom(restored.checkpointId(), restored.files());
    }

    @Override
    public ForStSnapshotResources syncPrepareResources(long checkpointId) {
        long start = System.nanoTime();
        List<StateMetaInfoSnapshot> metaInfos = stateMetaInfos.get();
        Map<String, StreamStateHandle> reusable = sharedFiles.reusable();
        NativeCheckpoint checkpoint = db.prepareCheckpoint();
        return new ForStSnapshotResources(
                checkpoint, metaInfos, reusable, System.nanoTime() - start);
    }

    @Override
    public SnapshotResultSupplier<KeyedStateHandle> asyncSnapshot(
            ForStSnapshotResources resources,
            long checkpointId,
            long timestamp,
            @Nonnull CheckpointStreamFactory streamFactory,
            @Nonnull CheckpointOptions checkpointOptions) {
        if (resources.stateMetaInfos.isEmpty()) {
            // No state was ever registered: nothing to restore, nothing to copy.
            resources.release();
            return registry -> SnapshotResult.empty();
        }
        SharingFilesStrategy sharing =
                checkpointOptions.getCheckpointType().getSharingFilesStrategy();
        return new ForStAsyncSnapshot<>(
                checkpointId,
                resources,
                streamFactory,
                sharing,
                keySerializer,
                keyGroupRange,
                backendUid,
                sharing == SharingFilesStrategy.NO_SHARING ? null : sharedFiles,
                this::report);
    }

    private void report(CheckpointStats stats) {
        // one line per subtask per checkpoint: DEBUG, or it floods the task managers' logs
        LOG.debug(
                "ForSt-RS checkpoint {} of backend {}: sync {} us, async {} ms, {} files copied"
                        + " ({} bytes), {} handed over, {} reused, {} bytes through the process",
                stats.checkpointId(),
                backendUid,
                stats.syncNanos() / 1_000,
                stats.asyncNanos() / 1_000_000,
                stats.filesCopied(),
                stats.bytesCopied(),
                stats.filesHandedOver(),
                stats.filesReused(),
                stats.bytesThroughProcess());
        statsListener.accept(stats);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        sharedFiles.confirm(checkpointId);
        db.handedOverFiles().confirmed(checkpointId);
        relocateRestoredFiles();
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) {
        sharedFiles.abort(checkpointId);
        relocateRestoredFiles();
    }

    /**
     * After a NO_CLAIM restore the DB reads its restored files from the snapshot, which the user
     * may delete once a checkpoint completed: from then on it reads the checkpoint's copies of
     * them (the same bytes; nothing is read again). A failure leaves the DB reading the snapshot
     * and is tried again at the next notification.
     */
    private void relocateRestoredFiles() {
        Map<String, String> copies = sharedFiles.relocations();
        if (copies.isEmpty()) {
            return;
        }
        try {
            int moved = db.relocate(copies);
            LOG.info(
                    "ForSt-RS database {} reads {} restored files from the checkpoint's copies",
                    db.uri(),
                    moved);
        } catch (Exception e) {
            if (db.isClosed()) {
                return;
            }
            sharedFiles.relocationsFailed(copies);
            LOG.warn(
                    "ForSt-RS database {} still reads {} restored files from their snapshot",
                    db.uri(),
                    copies.size(),
                    e);
        }
    }

    /** For tests: checkpoint ids whose shared files are still tracked. */
    SharedFileHistory sharedFiles() {
        return sharedFiles;
    }
}
