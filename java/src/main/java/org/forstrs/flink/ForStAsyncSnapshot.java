package org.forstrs.flink;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.memory.DataOutputViewStreamWrapper;
import org.apache.flink.runtime.checkpoint.SnapshotType.SharingFilesStrategy;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategy.SnapshotResultSupplier;
import org.apache.flink.runtime.state.StateUtil;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.util.function.ThrowingConsumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.function.Consumer;

/**
 * The asynchronous phase of one checkpoint or native savepoint: waits for the frozen data to be
 * flushed, copies the SSTs the checkpoint cannot reuse into the checkpoint directory (inside the
 * storage: hard link or server-side copy), writes the DB manifest and Flink's state meta info,
 * and returns an {@link IncrementalRemoteKeyedStateHandle} whose shared SSTs Flink's
 * SharedStateRegistry owns from then on.
 *
 * <p>A checkpoint shares files ({@code SHARED} scope, earlier confirmed files referenced by
 * placeholder); a savepoint ({@link SharingFilesStrategy#NO_SHARING}) copies every file into its
 * own ({@code EXCLUSIVE}) directory so that it stands alone. On failure, the copies and streams
 * this checkpoint made are deleted; the pin is released either way.
 */
final class ForStAsyncSnapshot<K> implements SnapshotResultSupplier<KeyedStateHandle> {

    private static final Logger LOG = LoggerFactory.getLogger(ForStAsyncSnapshot.class);

    /** Local path of the DB manifest in the handle's private state. */
    static final String MANIFEST_NAME = "MANIFEST";

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
            FsCheckpointStreamFactory fileFactory = fileBased(streamFactory);
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
            Path target = fileFactory.getTargetPath(scope);

            List<HandleAndLocalPath> shared = new ArrayList<>(names.length);
            List<String> toCopy = new ArrayList<>();
            List<String> destNames = new ArrayList<>();
            List<Long> copySizes = new ArrayList<>();
            for (int i = 0; i < names.length; i++) {
                StreamStateHandle previous = reusable.get(names[i]);
                if (previous != null) {
                    shared.add(HandleAndLocalPath.of(previous, names[i]));
                } else {
                    String dest = UUID.randomUUID() + ".sst";
                    toCopy.add(names[i]);
                    destNames.add(dest);
                    copySizes.add(sizes[i]);
                    copies.add(new Path(target, dest));
                }
            }
            long reused = shared.size();
            long throughProcess = 0;
            long bytesCopied = 0;
            if (!toCopy.isEmpty()) {
                throughProcess =
                        checkpoint.copyFiles(
                                toCopy.toArray(new String[0]),
                                target.toString(),
                                destNames.toArray(new String[0]));
            }
            for (int i = 0; i < toCopy.size(); i++) {
                bytesCopied += copySizes.get(i);
                shared.add(
                        HandleAndLocalPath.of(
                                new FileStateHandle(copies.get(i), copySizes.get(i)),
                                toCopy.get(i)));
            }

            StreamStateHandle manifestHandle =
                    writeExclusive(registry, written, out -> out.write(manifest));
            StreamStateHandle metaHandle =
                    writeExclusive(
                            registry,
                            written,
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
                            bytesCopied + manifestHandle.getStateSize() + metaHandle.getStateSize());
            if (!registry.unregisterCloseable(cancelMarker)) {
                throw new CancellationException("Checkpoint " + checkpointId + " was cancelled");
            }
            if (sharedFiles != null) {
                sharedFiles.record(checkpointId, shared);
            }
            statsListener.accept(
                    new CheckpointStats(
                            checkpointId,
                            resources.syncNanos,
                            System.nanoTime() - start,
                            throughProcess,
                            copies.stream().map(Path::toString).toList(),
                            (int) reused,
                            bytesCopied));
            done = true;
            return SnapshotResult.of(handle);
        } finally {
            resources.release();
            if (!done) {
                deleteQuietly(copies, written);
            }
        }
    }

    /** The checkpoint storage must be a file system the native side can copy into. */
    private static FsCheckpointStreamFactory fileBased(CheckpointStreamFactory factory)
            throws IOException {
        if (factory instanceof FsCheckpointStreamFactory) {
            return (FsCheckpointStreamFactory) factory;
        }
        throw new IOException(
                "The ForSt-RS state backend copies its files into the checkpoint directory and"
                        + " needs a file system checkpoint storage: set 'execution.checkpointing.dir'"
                        + " (checkpoint storage 'filesystem'); got "
                        + factory.getClass().getName());
    }

    private StreamStateHandle writeExclusive(
            CloseableRegistry registry,
            List<StreamStateHandle> written,
            ThrowingConsumer<CheckpointStateOutputStream, IOException> body)
            throws IOException {
        CheckpointStateOutputStream out =
                streamFactory.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE);
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
