package org.forstrs.flink.snapshot;

import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.StreamStateHandle;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Which SST files earlier checkpoints put into the shared directory, and which of them a new
 * checkpoint may reference by placeholder instead of copying again.
 *
 * <p>Only files of the last checkpoint confirmed complete are reusable: a checkpoint that was not
 * confirmed may be aborted and its files deleted by the JobManager. A file that a later checkpoint
 * copied again (because it ran before the confirmation arrived) is not reused either: once that
 * later checkpoint completes, the JobManager drops the older copy (FLINK-25395, FLINK-23949).
 * Savepoints are never recorded, so their files are never shared. Thread-safe.
 */
final class SharedFileHistory {

    /** Per checkpoint, every SST it references and the handle of its upload, by SST name. */
    private final SortedMap<Long, Map<String, StreamStateHandle>> filesByCheckpoint =
            new TreeMap<>();

    private long lastConfirmed = -1;

    /**
     * Records the SSTs of a checkpoint that shares files (call when its snapshot is built), each
     * with the handle its upload produced (for reused files: the earlier upload's, not the
     * placeholder), so that the storage can be asked whether it may still be reused.
     */
    synchronized void record(long checkpointId, Collection<HandleAndLocalPath> sharedFiles) {
        Map<String, StreamStateHandle> files = new HashMap<>();
        for (HandleAndLocalPath file : sharedFiles) {
            files.put(file.getLocalPath(), file.getHandle());
        }
        filesByCheckpoint.put(checkpointId, files);
    }

    /**
     * The files a checkpoint taken now may reference without copying, with the handles their
     * upload produced (the JobManager holds those; a checkpoint references them by placeholder).
     */
    synchronized Map<String, StreamStateHandle> reusable() {
        Map<String, StreamStateHandle> base = filesByCheckpoint.get(lastConfirmed);
        if (base == null) {
            return Map.of();
        }
        Map<String, StreamStateHandle> reusable = new HashMap<>(base);
        for (Map<String, StreamStateHandle> later :
                filesByCheckpoint.tailMap(lastConfirmed + 1).values()) {
            later.forEach(
                    (name, handle) -> {
                        StreamStateHandle confirmed = reusable.get(name);
                        if (confirmed != null
                                && !confirmed
                                        .getStreamStateHandleID()
                                        .equals(handle.getStreamStateHandleID())) {
                            reusable.remove(name);
                        }
                    });
        }
        return reusable;
    }

    /**
     * The DB was restored from checkpoint {@code checkpointId} referencing its files {@code
     * files} where they are: they are the base, as if that checkpoint had been taken here and
     * confirmed.
     */
    synchronized void restoredFrom(long checkpointId, Map<String, StreamStateHandle> files) {
        if (!files.isEmpty()) {
            filesByCheckpoint.put(checkpointId, new HashMap<>(files));
            lastConfirmed = checkpointId;
        }
    }

    /** The checkpoint completed: its files become the base, older records are dropped. */
    synchronized void confirm(long checkpointId) {
        if (checkpointId > lastConfirmed && filesByCheckpoint.containsKey(checkpointId)) {
            filesByCheckpoint.headMap(checkpointId).clear();
            lastConfirmed = checkpointId;
        }
    }

    /** The checkpoint was aborted: the JobManager deletes its copies, so forget them. */
    synchronized void abort(long checkpointId) {
        if (checkpointId != lastConfirmed) {
            filesByCheckpoint.remove(checkpointId);
        }
    }

    /** Checkpoint ids with a record, oldest first (for tests and logs). */
    synchronized List<Long> recordedCheckpoints() {
        return List.copyOf(filesByCheckpoint.keySet());
    }
}
