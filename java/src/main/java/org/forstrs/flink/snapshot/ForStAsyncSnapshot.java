package org.forstrs.flink.snapshot;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.memory.DataOutputViewStreamWrapper;
import org.apache.flink.runtime.checkpoint.SnapshotType.SharingFilesStrategy;
import org.apache.flink.runtime.checkpoint.filemerging.FileMergingSnapshotManager;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategy.SnapshotResultSupplier;
import org.apache.flink.runtime.state.StateUtil;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;
import org.apache.flink.util.function.ThrowingConsumer;

import org.forstrs.flink.state.NativeCheckpoint;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.function.Consumer;

/**
 * The asynchronous phase of one checkpoint or native savepoint: waits for the frozen data to be
 * flushed, uploads the SSTs the checkpoint cannot reuse, writes the DB manifest and Flink's state
 * meta info, and returns an {@link IncrementalRemoteKeyedStateHandle} whose shared SSTs Flink's
 * SharedStateRegistry owns from then on.
 *
 * <p>A checkpoint whose shared directory is on the DB's file system ({@link FileHandOver}) takes
 * the new SSTs where they are: they are handed over (the DB never deletes them again) and the
 * handle points at them in the DB directory, so no byte moves. Otherwise uploads are copies into
 * the checkpoint directory inside the storage (hard link, server-side copy) where the checkpoint
 * storage is a file system ({@link #inStorageTarget}); any other storage (the JobManager's) gets
 * each SST's bytes, read through the native side, as one Flink checkpoint stream. Savepoints
 * always copy: they must own their files.
 *
 * <p>A checkpoint shares files ({@code SHARED} scope, earlier confirmed files referenced by
 * placeholder); a savepoint ({@link SharingFilesStrategy#NO_SHARING}) uploads every file in its
 * own ({@code EXCLUSIVE}) scope so that it stands alone. On failure, the copies and streams this
 * checkpoint made are deleted; the pin is released either way.
 */
public final class ForStAsyncSnapshot<K> implements SnapshotResultSupplier<KeyedStateHandle> {

    private static final Logger LOG = LoggerFactory.getLogger(ForStAsyncSnapshot.class);

    /** Local path of the DB manifest in the handle's private state. */
    public static final String MANIFEST_NAME = "MANIFEST";

    private final long checkpointId;
    private final ForStSnapshotResources resources;
    private final CheckpointStreamFactory streamFactory;
    private final SharingFilesStrategy sharing;
    private final TypeSerializer<K> keySerializer;
    private final KeyGroupRange keyGroupRange;
    private final UUID backendUid;
    @Nullable private final SharedFileHistory sharedFiles;
    private final Consumer<CheckpointStats> statsListener;

    ForStAsyncSnapshot(
            long checkpointId,
            ForStSnapshotResources resources,
            CheckpointStreamFactory streamFactory,
            SharingFilesStrategy sharing,
            TypeSerializer<K> keySerializer,
            KeyGroupRange keyGroupRange,
            UUID backendUid,
            @Nullable SharedFileHistory sharedFiles,
            Consumer<CheckpointStats> statsListener) {
        this.checkpointId = checkpointId;
        this.resources = resources;
        this.streamFactory = streamFactory;
        this.sharing = sharing;
        this.keySerializer = keySerializer;
        this.keyGroupRange = keyGroupRange;
        this.backendUid = backendUid;
        this.sharedFiles = sharedFiles;
        this.statsListener = statsListener;
    }

    @Override
    public SnapshotResult<KeyedStateHandle> get(CloseableRegistry registry) throws Exception {
        long start = System.nanoTime();
        List<Path> copies = new ArrayList<>();
        List<StreamStateHandle> written = new ArrayList<>();
        // Flink closes the registry when it cancels the snapshot; a result returned after that is
        // dropped, so the copies made meanwhile must be deleted here or nobody would.
        Closeable cancelMarker = () -> {};
        registry.registerCloseable(cancelMarker);
        boolean done = false;
        try {
            NativeCheckpoint checkpoint = resources.checkpoint;
            byte[] manifest = checkpoint.manifest();
            String[] names = checkpoint.fileNames();
            long[] sizes = checkpoint.fileSizes();

            CheckpointedStateScope scope =
                    sharing == SharingFilesStrategy.NO_SHARING
                            ? CheckpointedStateScope.EXCLUSIVE
                            : CheckpointedStateScope.SHARED;
            Map<String, StreamStateHandle> reusable =
                    sharing == SharingFilesStrategy.FORWARD_BACKWARD
                            ? resources.reusableFiles
                            : Map.of();

            // What the handle references (placeholders for reused files), and what the history
            // records (each upload's own handle).
            List<HandleAndLocalPath> shared = new ArrayList<>(names.length);
            List<HandleAndLocalPath> uploads = new ArrayList<>(names.length);
            List<StreamStateHandle> reusedUploads = new ArrayList<>();
            List<Integer> newFiles = new ArrayList<>();
            List<StreamStateHandle> reusedSegments = new ArrayList<>();
            for (int i = 0; i < names.length; i++) {
                StreamStateHandle previous = reusable.get(names[i]);
                if (previous != null && mayReuse(previous)) {
                    shared.add(HandleAndLocalPath.of(placeholderOf(previous), names[i]));
                    uploads.add(HandleAndLocalPath.of(previous, names[i]));
                    reusedUploads.add(previous);
                    if (FileMergingSnapshotManager.isFileMergingHandle(previous)) {
                        reusedSegments.add(previous);
                    }
                } else {
                    newFiles.add(i);
                }
            }
            if (!reusedSegments.isEmpty()) {
                // The file-merging manager keeps the physical files of reused segments alive.
                streamFactory.reusePreviousStateHandle(reusedSegments);
            }

            long newBytes = 0;
            for (int i : newFiles) {
                newBytes += sizes[i];
            }
            List<String> copiedTo = new ArrayList<>(newFiles.size());
            long throughProcess;
            long bytesCopied = newBytes;
            Path target = inStorageTarget(streamFactory, scope);
            String[] handOver = null;
            List<String> handedOverTo = new ArrayList<>();
            Map<String, String> copiesOfExternal = Map.of();
            if (target != null
                    && sharing != SharingFilesStrategy.NO_SHARING
                    && FileHandOver.applies(
                            checkpoint.dbUri(),
                            target,
                            checkpoint.db().handedOverFiles().scope())) {
                // Files restored by reference (elsewhere, owned by an earlier checkpoint) that
                // this checkpoint may not reference by placeholder (the first one after a
                // restore in NO_CLAIM mode) are copied; the DB's own are handed over.
                String[] locations = checkpoint.fileLocations();
                List<Integer> toCopy = new ArrayList<>();
                List<String> toHandOver = new ArrayList<>();
                for (int i : newFiles) {
                    if (locations[i] != null) {
                        toCopy.add(i);
                        continue;
                    }
                    toHandOver.add(names[i]);
                    Path inDb = new Path(checkpoint.dbUri() + "/" + names[i]);
                    handedOverTo.add(inDb.toString());
                    HandleAndLocalPath file =
                            HandleAndLocalPath.of(
                                    new HandedOverFileHandle(
                                            inDb,
                                            sizes[i],
                                            checkpoint.db().handedOverFiles(),
                                            checkpointId,
                                            names[i]),
                                    names[i]);
                    shared.add(file);
                    uploads.add(file);
                }
                handOver = toHandOver.toArray(new String[0]);
                throughProcess = copyInStorage(checkpoint, names, toCopy, target, copies);
                bytesCopied =
                        addCopies(toCopy, names, sizes, copies, shared, uploads, copiedTo, scope);
                copiesOfExternal = copiesOfExternal(toCopy, names, locations, copies);
            } else if (target != null) {
                throughProcess = copyInStorage(checkpoint, names, newFiles, target, copies);
                addCopies(newFiles, names, sizes, copies, shared, uploads, copiedTo, scope);
                copiesOfExternal =
                        copiesOfExternal(newFiles, names, checkpoint.fileLocations(), copies);
            } else {
                throughProcess = newBytes;
                for (int i : newFiles) {
                    String name = names[i];
                    long size = sizes[i];
                    StreamStateHandle upload =
                            writeStream(
                                    registry,
                                    written,
                                    scope,
                                    out -> checkpoint.streamFile(name, size, out));
                    HandleAndLocalPath file = HandleAndLocalPath.of(upload, name);
                    shared.add(file);
                    uploads.add(file);
                    copiedTo.add(describe(upload));
                }
            }

            StreamStateHandle manifestHandle =
                    writeStream(
                            registry,
                            written,
                            CheckpointedStateScope.EXCLUSIVE,
                            out -> out.write(manifest));
            StreamStateHandle metaHandle =
                    writeStream(
                            registry,
                            written,
                            CheckpointedStateScope.EXCLUSIVE,
                            out ->
                                    new KeyedBackendSerializationProxy<>(
                                                    keySerializer, resources.stateMetaInfos, false)
                                            .write(new DataOutputViewStreamWrapper(out)));

            IncrementalRemoteKeyedStateHandle handle =
                    new IncrementalRemoteKeyedStateHandle(
                            backendUid,
                            keyGroupRange,
                            checkpointId,
                            shared,
                            List.of(HandleAndLocalPath.of(manifestHandle, MANIFEST_NAME)),
                            metaHandle,
                            newBytes + manifestHandle.getStateSize() + metaHandle.getStateSize());
            if (!registry.unregisterCloseable(cancelMarker)) {
                throw new CancellationException("Checkpoint " + checkpointId + " was cancelled");
            }
            if (handOver != null && handOver.length > 0) {
                // Last, once nothing can cancel the checkpoint any more: a cancelled one leaves
                // its files with the DB, which deletes them as usual.
                checkpoint.db().handedOverFiles().handOver(checkpoint, checkpointId, handOver);
            }
            if (sharedFiles != null) {
                sharedFiles.record(checkpointId, uploads, copiesOfExternal);
            }
            statsListener.accept(
                    new CheckpointStats(
                            checkpointId,
                            resources.syncNanos,
                            System.nanoTime() - start,
                            throughProcess,
                            copiedTo,
                            reusedUploads.size(),
                            bytesCopied,
                            handedOverTo));
            done = true;
            return SnapshotResult.of(handle);
        } finally {
            resources.release();
            if (!done) {
                deleteQuietly(copies, written);
            }
        }
    }

    /**
     * Where new SSTs can be copied inside the storage (hard link, server-side copy), or null where
     * the checkpoint storage takes streams only (the JobManager's). A file-merging location
     * qualifies too: its target directories are the job's plain ones, and SSTs, tens of MB each,
     * gain nothing from being packed into merged files (the small manifest and meta streams
     * still are).
     */
    @Nullable
    static Path inStorageTarget(CheckpointStreamFactory factory, CheckpointedStateScope scope) {
        if (factory instanceof FsCheckpointStreamFactory) {
            return ((FsCheckpointStreamFactory) factory).getTargetPath(scope);
        }
        return null;
    }

    /**
     * Copies the files {@code newFiles} into {@code target} under new unique names, inside the
     * storage where it can, and adds each destination to {@code copies} (same order).
     *
     * @return bytes that passed through this process
     */
    private static long copyInStorage(
            NativeCheckpoint checkpoint,
            String[] names,
            List<Integer> newFiles,
            Path target,
            List<Path> copies) {
        if (newFiles.isEmpty()) {
            return 0;
        }
        String[] sources = new String[newFiles.size()];
        String[] destNames = new String[newFiles.size()];
        for (int j = 0; j < newFiles.size(); j++) {
            sources[j] = names[newFiles.get(j)];
            destNames[j] = UUID.randomUUID() + ".sst";
            copies.add(new Path(target, destNames[j]));
        }
        return checkpoint.copyFiles(sources, target.toString(), destNames);
    }

    /**
     * Adds the handles of the files {@code copied} (indexes into {@code names}), which {@link
     * #copyInStorage} copied to {@code copies} (same order). In a savepoint's own ({@code
     * EXCLUSIVE}) directory a handle names its file relative to that directory, as Flink's own
     * savepoint files do, so that the savepoint can be moved and still restores.
     *
     * @return their total size
     */
    private static long addCopies(
            List<Integer> copied,
            String[] names,
            long[] sizes,
            List<Path> copies,
            List<HandleAndLocalPath> shared,
            List<HandleAndLocalPath> uploads,
            List<String> copiedTo,
            CheckpointedStateScope scope) {
        long bytes = 0;
        for (int j = 0; j < copied.size(); j++) {
            int i = copied.get(j);
            Path copy = copies.get(j);
            FileStateHandle handle =
                    scope == CheckpointedStateScope.EXCLUSIVE
                            ? new RelativeFileStateHandle(copy, copy.getName(), sizes[i])
                            : new FileStateHandle(copy, sizes[i]);
            HandleAndLocalPath file = HandleAndLocalPath.of(handle, names[i]);
            shared.add(file);
            uploads.add(file);
            copiedTo.add(copy.toString());
            bytes += sizes[i];
        }
        return bytes;
    }

    /**
     * The copies, by SST name, of the files among {@code copied} (indexes into {@code names},
     * copied to {@code copies} in the same order) that the DB reads from outside its directory.
     */
    private static Map<String, String> copiesOfExternal(
            List<Integer> copied, String[] names, String[] locations, List<Path> copies) {
        Map<String, String> external = new HashMap<>();
        for (int j = 0; j < copied.size(); j++) {
            int i = copied.get(j);
            if (locations[i] != null) {
                external.put(names[i], copies.get(j).toString());
            }
        }
        return external;
    }

    /**
     * Whether an earlier upload may be referenced again. A segment of a merged file only with the
     * file-merging manager's consent (it may want to stop extending an old physical file's life).
     * Any other handle always: the SharedStateRegistry alone owns it. (The file-merging manager
     * answers no for every handle it does not manage, which would disable incremental reuse of
     * the SSTs copied into the shared directory.)
     */
    private boolean mayReuse(StreamStateHandle previous) {
        return !FileMergingSnapshotManager.isFileMergingHandle(previous)
                || streamFactory.couldReuseStateHandle(previous);
    }

    /** How a checkpoint references a file that an earlier checkpoint uploaded. */
    private static StreamStateHandle placeholderOf(StreamStateHandle upload) {
        return new PlaceholderStreamStateHandle(
                upload.getStreamStateHandleID(),
                upload.getStateSize(),
                FileMergingSnapshotManager.isFileMergingHandle(upload));
    }

    /** A file's path where the upload made one, else the handle's id (JobManager-held bytes). */
    private static String describe(StreamStateHandle upload) {
        return upload instanceof FileStateHandle
                ? ((FileStateHandle) upload).getFilePath().toString()
                : upload.getStreamStateHandleID().getKeyString();
    }

    /** Writes one stream of the checkpoint; its handle is discarded if the checkpoint fails. */
    private StreamStateHandle writeStream(
            CloseableRegistry registry,
            List<StreamStateHandle> written,
            CheckpointedStateScope scope,
            ThrowingConsumer<CheckpointStateOutputStream, IOException> body)
            throws IOException {
        CheckpointStateOutputStream out = streamFactory.createCheckpointStateOutputStream(scope);
        registry.registerCloseable(out);
        try {
            body.accept(out);
            if (!registry.unregisterCloseable(out)) {
                throw new IOException("Checkpoint " + checkpointId + " was cancelled");
            }
            StreamStateHandle handle = out.closeAndGetHandle();
            written.add(handle);
            return handle;
        } finally {
            if (registry.unregisterCloseable(out)) {
                out.close();
            }
        }
    }

    private void deleteQuietly(List<Path> copies, List<StreamStateHandle> written) {
        for (Path copy : copies) {
            try {
                FileSystem fs = copy.getFileSystem();
                fs.delete(copy, false);
            } catch (IOException e) {
                LOG.warn("Could not delete {} of failed checkpoint {}", copy, checkpointId, e);
            }
        }
        for (StreamStateHandle handle : written) {
            StateUtil.discardStateObjectQuietly(handle);
        }
    }
}
