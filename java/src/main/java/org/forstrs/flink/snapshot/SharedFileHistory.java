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
 * Savepoints are never recorded, so their files are never shared.
 *
 * <p>It also says when the DB may read a file restored by reference (a NO_CLAIM restore's
 * snapshot, which the user may delete once a checkpoint completed) from a checkpoint's copy
 * instead: exactly when that copy becomes what later checkpoints reference ({@link
 * #relocations}), so the copy the DB reads lives as long as the DB references the file.
 * Thread-safe.
 */
final class SharedFileHistory {

    /** Per checkpoint, every SST it references and the handle of its upload, by SST name. */
    private final SortedMap<Long, Map<String, StreamStateHandle>> filesByCheckpoint =
            new TreeMap<>();

    /** Per checkpoint, the copies it made of files the DB reads from elsewhere, by SST name. */
    private final Map<Long, Map<String, String>> copiesByCheckpoint = new HashMap<>();

    /** Copies of the last confirmed checkpoint the DB does not read from yet, by SST name. */
    private final Map<String, String> unrelocated = new HashMap<>();

    private long lastConfirmed = -1;

    /**
     * Records the SSTs of a checkpoint that shares files (call when its snapshot is built), each
     * with the handle its upload produced (for reused files: the earlier upload's, not the
     * placeholder), so that the storage can be asked whether it may still be reused.
     */
    synchronized void record(long checkpointId, Collection<HandleAndLocalPath> sharedFiles) {
        record(checkpointId, sharedFiles, Map.of());
    }

    /**
     * As {@link #record(long, Collection)}; {@code copiesOfExternal} are the URIs of the copies
     * this checkpoint made of files the DB reads from outside its directory, by SST name.
     */
    synchronized void record(
            long checkpointId,
            Collection<HandleAndLocalPath> sharedFiles,
            Map<String, String> copiesOfExternal) {
        Map<String, StreamStateHandle> files = new HashMap<>();
        for (HandleAndLocalPath file : sharedFiles) {
            files.put(file.getLocalPath(), file.getHandle());
        }
        filesByCheckpoint.put(checkpointId, files);
        if (!copiesOfExternal.isEmpty()) {
            copiesByCheckpoint.put(checkpointId, Map.copyOf(copiesOfExternal));
        }
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
            copiesByCheckpoint.keySet().removeIf(id -> id < checkpointId);
            unrelocated.clear();
            unrelocated.putAll(copiesByCheckpoint.getOrDefault(checkpointId, Map.of()));
            lastConfirmed = checkpointId;
        }
    }

    /** The checkpoint was aborted: the JobManager deletes its copies, so forget them. */
    synchronized void abort(long checkpointId) {
        if (checkpointId != lastConfirmed) {
            filesByCheckpoint.remove(checkpointId);
            copiesByCheckpoint.remove(checkpointId);
        }
    }

    /**
     * The copies the DB should read its restored files from now on, by SST name, each handed out
     * once: those of the last confirmed checkpoint that later checkpoints reference ({@link
     * #reusable}). A copy that a pending checkpoint made again waits until that one completes
     * (then its own copy is the one) or is aborted: the JobManager drops the older copy when the
     * pending one completes, which the DB must not be reading then.
     */
    synchronized Map<String, String> relocations() {
        if (unrelocated.isEmpty()) {
            return Map.of();
        }
        Map<String, StreamStateHandle> reusable = reusable();
        Map<String, String> due = new HashMap<>();
        unrelocated
                .entrySet()
                .removeIf(
                        copy -> {
                            if (!reusable.containsKey(copy.getKey())) {
                                return false;
                            }
                            due.put(copy.getKey(), copy.getValue());
                            return true;
                        });
        return due;
    }

    /** Relocations that could not be applied, to hand out again. */
    synchronized void relocationsFailed(Map<String, String> copies) {
        copies.forEach(unrelocated::putIfAbsent);
    }

    /** Checkpoint ids with a record, oldest first (for tests and logs). */
    synchronized List<Long> recordedCheckpoints() {
        return List.copyOf(filesByCheckpoint.keySet());
    }
}
