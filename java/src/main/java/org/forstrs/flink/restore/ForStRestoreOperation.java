package org.forstrs.flink.restore;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.RegisteredStateMetaInfoBase;
import org.apache.flink.runtime.state.StateBackend.KeyedStateBackendParameters;
import org.apache.flink.runtime.state.StateSerializerProvider;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.v2.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.util.StateMigrationException;

import org.forstrs.flink.snapshot.ForStAsyncSnapshot;
import org.forstrs.flink.state.AttemptRun;
import org.forstrs.flink.state.DbDirectory;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.ReferencedFiles;
import org.forstrs.flink.state.RestoreSources;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Restores a ForSt-RS keyed backend from native checkpoints or savepoints: one handle (restore)
 * or several (rescale). Reads each handle's state meta info and DB manifest, checks that the key
 * serializer can read the old keys, and builds the new DB from the checkpoint files where they
 * lie, clipped to the new key-group range (no download, no rewrite). SSTs a checkpoint storage
 * kept as bytes rather than files (the JobManager's) are first written next to the new DB ({@link
 * RestoreStaging}), and from there take the same way. Canonical savepoints go through {@link
 * CanonicalRestoreOperation}.
 */
public final class ForStRestoreOperation<K> {

    private static final Logger LOG = LoggerFactory.getLogger(ForStRestoreOperation.class);

    private final Collection<KeyedStateHandle> handles;
    private final StateSerializerProvider<K> keySerializer;
    private final ClassLoader userCodeClassLoader;
    private final KeyGroupRange keyGroupRange;
    private final int numberOfKeyGroups;
    private final CloseableRegistry cancelStreamRegistry;

    /**
     * The outcome: the opened DB, the meta info snapshot of every restored state, by state name,
     * as the checkpoint holds it (V1 or V2 keyed state: each backend converts), and the timer
     * queues a canonical savepoint brought back onto the heap (none from native checkpoints,
     * whose timers come back through the timer service).
     */
    public record Restored<K>(
            NativeDb db,
            TypeSerializer<K> keySerializer,
            Map<String, StateMetaInfoSnapshot> stateMetaInfoSnapshots,
            Map<String, HeapPriorityQueueSnapshotRestoreWrapper<?>> timerQueues) {

        /** The restored states' meta info for the async (State V2) backend. */
        public Map<String, RegisteredKeyValueStateBackendMetaInfo<?, ?>> stateMetaInfos() {
            Map<String, RegisteredKeyValueStateBackendMetaInfo<?, ?>> infos =
                    new LinkedHashMap<>();
            stateMetaInfoSnapshots.forEach(
                    (name, snapshot) -> {
                        // Timer queues' meta info (written by the synchronous backend) is not
                        // keyed state of the DB.
                        if (snapshot.getBackendStateType()
                                != StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE) {
                            infos.put(name, metaInfo(snapshot));
                        }
                    });
            return infos;
        }
    }

    /**
     * Opens a keyed backend's DB at {@code dbUri} (a leftover of an earlier run at that place is
     * removed first), restored from the parameters' state handles if there are any. Shared by the
     * async and the synchronous keyed backend.
     */
    public static <K> Restored<K> openDatabase(
            KeyedStateBackendParameters<K> parameters, String dbUri, String[] nativeOptions)
            throws Exception {
        return openDatabase(parameters, dbUri, nativeOptions, false);
    }

    /**
     * The attempt's run and the checkpoint it restores from (see {@link AttemptRun}): the
     * checkpoint is known when every handle is a native checkpoint's, or there is none.
     */
    private static AttemptRun attemptRun(KeyedStateBackendParameters<?> parameters) {
        // ExecutionAttemptID has no getter for its execution graph's id; its string form starts
        // with it ("<graph>_<vertex>_<attempt>"). Were that to change, no two attempts would
        // share a run and dead attempts would only keep more.
        String runId = parameters.getEnv().getExecutionId().toString().split("_", 2)[0];
        long restoredFrom = 0;
        Set<String> referenced = new HashSet<>();
        for (KeyedStateHandle handle : parameters.getStateHandles()) {
            if (!(handle instanceof IncrementalRemoteKeyedStateHandle)) {
                return new AttemptRun(runId, -1, Set.of());
            }
            IncrementalRemoteKeyedStateHandle checkpoint =
                    (IncrementalRemoteKeyedStateHandle) handle;
            restoredFrom = Math.max(restoredFrom, checkpoint.getCheckpointId());
            for (HandleAndLocalPath file : checkpoint.getSharedState()) {
                if (file.getHandle() instanceof FileStateHandle) {
                    referenced.add(
                            ((FileStateHandle) file.getHandle()).getFilePath().toString());
                }
            }
        }
        return new AttemptRun(runId, restoredFrom, referenced);
    }

    /**
     * As {@link #openDatabase(KeyedStateBackendParameters, String, String[])}; {@code
     * timersInStore}: the timers of a canonical savepoint go into their column families (the
     * backend keeps timers in the store) rather than onto heap queues.
     */
    public static <K> Restored<K> openDatabase(
            KeyedStateBackendParameters<K> parameters,
            String dbUri,
            String[] nativeOptions,
            boolean timersInStore)
            throws Exception {
        DbDirectory.prepare(
                dbUri,
                nativeOptions,
                parameters.getEnv().getTaskInfo().getNumberOfParallelSubtasks(),
                attemptRun(parameters));
        if (parameters.getStateHandles().isEmpty()) {
            return new Restored<>(
                    NativeDb.open(dbUri, nativeOptions),
                    parameters.getKeySerializer(),
                    Map.of(),
                    Map.of());
        }
        long start = System.nanoTime();
        Restored<K> restored;
        try {
            restored =
                    CanonicalRestoreOperation.isCanonical(parameters.getStateHandles())
                            ? restoreCanonical(parameters, dbUri, nativeOptions, timersInStore)
                            : restoreNative(parameters, dbUri, nativeOptions);
        } catch (Throwable t) {
            // No backend owns the half-built directory; the next attempt uses another one.
            try {
                DbDirectory.remove(dbUri, nativeOptions);
            } catch (Throwable cleanup) {
                t.addSuppressed(cleanup);
            }
            throw t;
        }
        LOG.info(
                "Restored ForSt-RS keyed state of {} (key groups {}) from {} handles in {} ms",
                parameters.getOperatorIdentifier(),
                parameters.getKeyGroupRange(),
                parameters.getStateHandles().size(),
                (System.nanoTime() - start) / 1_000_000);
        return restored;
    }

    private static <K> Restored<K> restoreNative(
            KeyedStateBackendParameters<K> parameters, String dbUri, String[] nativeOptions)
            throws Exception {
        return new ForStRestoreOperation<>(
                        parameters.getStateHandles(),
                        parameters.getKeySerializer(),
                        parameters.getEnv().getUserCodeClassLoader().asClassLoader(),
                        parameters.getKeyGroupRange(),
                        parameters.getNumberOfKeyGroups(),
                        parameters.getCancelStreamRegistry())
                .restore(dbUri, nativeOptions);
    }

    private static <K> Restored<K> restoreCanonical(
            KeyedStateBackendParameters<K> parameters,
            String dbUri,
            String[] nativeOptions,
            boolean timersInStore)
            throws Exception {
        NativeDb db = NativeDb.open(dbUri, nativeOptions);
        try {
            return new CanonicalRestoreOperation<>(
                            parameters.getStateHandles(),
                            parameters.getKeySerializer(),
                            parameters.getEnv().getUserCodeClassLoader().asClassLoader(),
                            parameters.getKeyGroupRange(),
                            parameters.getNumberOfKeyGroups(),
                            timersInStore)
                    .restoreInto(db);
        } catch (Throwable t) {
            db.close();
            throw t;
        }
    }

    private ForStRestoreOperation(
            Collection<KeyedStateHandle> handles,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            KeyGroupRange keyGroupRange,
            int numberOfKeyGroups,
            CloseableRegistry cancelStreamRegistry) {
        this.handles = handles;
        this.keySerializer = StateSerializerProvider.fromNewRegisteredSerializer(keySerializer);
        this.userCodeClassLoader = userCodeClassLoader;
        this.keyGroupRange = keyGroupRange;
        this.numberOfKeyGroups = numberOfKeyGroups;
        this.cancelStreamRegistry = cancelStreamRegistry;
    }

    private Restored<K> restore(String dbUri, String[] nativeOptions) throws Exception {
        try (RestoreStaging staging = new RestoreStaging(dbUri, nativeOptions)) {
            return restore(dbUri, nativeOptions, staging);
        }
    }

    private Restored<K> restore(String dbUri, String[] nativeOptions, RestoreStaging staging)
            throws Exception {
        List<byte[]> manifests = new ArrayList<>();
        List<String[]> fileNames = new ArrayList<>();
        List<String[]> fileUris = new ArrayList<>();
        List<Integer> keyGroups = new ArrayList<>();
        Map<String, StateMetaInfoSnapshot> metaInfos = new LinkedHashMap<>();
        Map<String, StreamStateHandle> referenced = new HashMap<>();
        long newestCheckpoint = -1;
        boolean keySerializerChecked = false;
        for (KeyedStateHandle handle : handles) {
            if (handle == null) {
                continue;
            }
            IncrementalRemoteKeyedStateHandle checkpoint = ownHandle(handle);
            if (checkpoint.getKeyGroupRange().getIntersection(keyGroupRange).getNumberOfKeyGroups()
                    == 0) {
                continue;
            }
            KeyedBackendSerializationProxy<K> meta = readMetaData(checkpoint);
            if (!keySerializerChecked) {
                checkKeySerializer(meta);
                keySerializerChecked = true;
            }
            for (StateMetaInfoSnapshot snapshot : meta.getStateMetaInfoSnapshots()) {
                checkKeyedState(snapshot);
                metaInfos.putIfAbsent(snapshot.getName(), snapshot);
            }
            manifests.add(readManifest(checkpoint));
            List<HandleAndLocalPath> shared = checkpoint.getSharedState();
            String[] names = new String[shared.size()];
            String[] uris = new String[shared.size()];
            for (int i = 0; i < shared.size(); i++) {
                names[i] = shared.get(i).getLocalPath();
                uris[i] = fileUri(shared.get(i).getHandle(), checkpoint, staging);
                if (!staging.holds(uris[i])) {
                    referenced.put(names[i], shared.get(i).getHandle());
                }
            }
            newestCheckpoint = Math.max(newestCheckpoint, checkpoint.getCheckpointId());
            fileNames.add(names);
            fileUris.add(uris);
            keyGroups.add(checkpoint.getKeyGroupRange().getStartKeyGroup());
            keyGroups.add(checkpoint.getKeyGroupRange().getEndKeyGroup());
        }
        if (manifests.isEmpty()) {
            // No handle covers our key groups: start empty.
            return new Restored<>(
                    NativeDb.open(dbUri, nativeOptions),
                    keySerializer.currentSchemaSerializer(),
                    metaInfos,
                    Map.of());
        }
        RestoreSources sources =
                new RestoreSources(
                        manifests.toArray(new byte[0][]),
                        fileNames.toArray(new String[0][]),
                        fileUris.toArray(new String[0][]),
                        keyGroups.stream().mapToInt(Integer::intValue).toArray(),
                        keyGroupRange.getStartKeyGroup(),
                        keyGroupRange.getEndKeyGroup(),
                        CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                                numberOfKeyGroups));
        NativeDb db = NativeDb.openRestored(dbUri, nativeOptions, sources);
        db.setReferencedFiles(new ReferencedFiles(newestCheckpoint, referenced));
        if (staging.size() > 0) {
            LOG.info(
                    "Restored {} SSTs of {} from checkpoint streams (not files) through {}",
                    staging.size(),
                    dbUri,
                    RestoreStaging.DIRECTORY);
        }
        return new Restored<>(db, keySerializer.currentSchemaSerializer(), metaInfos, Map.of());
    }

    private static IncrementalRemoteKeyedStateHandle ownHandle(KeyedStateHandle handle) {
        if (handle instanceof IncrementalRemoteKeyedStateHandle) {
            return (IncrementalRemoteKeyedStateHandle) handle;
        }
        throw new IllegalStateException(
                "The ForSt-RS state backend restores its own checkpoints and native"
                        + " savepoints (IncrementalRemoteKeyedStateHandle) and canonical"
                        + " savepoints (KeyGroupsStateHandle), one kind at a time; got "
                        + handle.getClass().getName());
    }

    private KeyedBackendSerializationProxy<K> readMetaData(
            IncrementalRemoteKeyedStateHandle checkpoint) throws IOException {
        KeyedBackendSerializationProxy<K> proxy =
                new KeyedBackendSerializationProxy<>(userCodeClassLoader);
        try (InputStream in = open(checkpoint.getMetaDataStateHandle())) {
            proxy.read(new DataInputViewStreamWrapper(in));
        }
        return proxy;
    }

    private void checkKeySerializer(KeyedBackendSerializationProxy<K> meta)
            throws StateMigrationException {
        TypeSerializer<K> current = keySerializer.currentSchemaSerializer();
        TypeSerializerSchemaCompatibility<K> compatibility =
                keySerializer.setPreviousSerializerSnapshotForRestoredState(
                        meta.getKeySerializerSnapshot());
        if (compatibility.isCompatibleAfterMigration() || compatibility.isIncompatible()) {
            throw new StateMigrationException(
                    "The new key serializer ("
                            + current
                            + ") must be compatible with the previous key serializer ("
                            + keySerializer.previousSchemaSerializer()
                            + ").");
        }
    }

    private static void checkKeyedState(StateMetaInfoSnapshot snapshot) {
        StateMetaInfoSnapshot.BackendStateType type = snapshot.getBackendStateType();
        if (type != StateMetaInfoSnapshot.BackendStateType.KEY_VALUE
                && type != StateMetaInfoSnapshot.BackendStateType.KEY_VALUE_V2
                && type != StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE) {
            throw new IllegalStateException(
                    "State '"
                            + snapshot.getName()
                            + "' is of kind "
                            + type
                            + ", which the ForSt-RS keyed backend cannot restore");
        }
    }

    private static RegisteredKeyValueStateBackendMetaInfo<?, ?> metaInfo(
            StateMetaInfoSnapshot snapshot) {
        RegisteredStateMetaInfoBase info =
                RegisteredKeyValueStateBackendMetaInfo.fromMetaInfoSnapshot(snapshot);
        if (!(info instanceof RegisteredKeyValueStateBackendMetaInfo)) {
            throw new IllegalStateException(
                    "State '"
                            + snapshot.getName()
                            + "' is of kind "
                            + snapshot.getBackendStateType()
                            + ", which the ForSt-RS keyed backend cannot restore");
        }
        return (RegisteredKeyValueStateBackendMetaInfo<?, ?>) info;
    }

    private byte[] readManifest(IncrementalRemoteKeyedStateHandle checkpoint)
            throws IOException {
        for (HandleAndLocalPath file : checkpoint.getPrivateState()) {
            if (ForStAsyncSnapshot.MANIFEST_NAME.equals(file.getLocalPath())) {
                try (InputStream in = open(file.getHandle())) {
                    return in.readAllBytes();
                }
            }
        }
        throw new IllegalStateException(
                "Checkpoint "
                        + checkpoint.getCheckpointId()
                        + " of backend "
                        + checkpoint.getBackendIdentifier()
                        + " has no "
                        + ForStAsyncSnapshot.MANIFEST_NAME
                        + "; it was not written by the ForSt-RS state backend");
    }

    /** Opens a handle so that cancelling the restore closes the stream. */
    private InputStream open(StreamStateHandle handle) throws IOException {
        InputStream in = handle.openInputStream();
        cancelStreamRegistry.registerCloseable(in);
        return new FilterInputStream(in) {
            @Override
            public void close() throws IOException {
                if (cancelStreamRegistry.unregisterCloseable(in)) {
                    in.close();
                }
            }
        };
    }

    /**
     * Where a checkpointed SST is, as a URI the native side opens: a file where it lies, or, for
     * bytes that are not a file (the JobManager's, a segment of a merged file), a staged copy.
     */
    private String fileUri(
            StreamStateHandle handle,
            IncrementalRemoteKeyedStateHandle checkpoint,
            RestoreStaging staging)
            throws IOException {
        if (handle instanceof FileStateHandle) {
            return ((FileStateHandle) handle).getFilePath().toUri().toString();
        }
        if (handle instanceof PlaceholderStreamStateHandle) {
            throw new IllegalStateException(
                    "Checkpoint "
                            + checkpoint.getCheckpointId()
                            + " of backend "
                            + checkpoint.getBackendIdentifier()
                            + " references an SST by a placeholder that was never resolved to"
                            + " the file (its shared state was not registered): "
                            + handle);
        }
        try (InputStream in = open(handle)) {
            return staging.stage(in);
        }
    }
}
