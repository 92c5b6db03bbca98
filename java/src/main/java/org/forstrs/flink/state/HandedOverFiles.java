package org.forstrs.flink.state;

import org.forstrs.flink.config.ForStOptions.HandOverScope;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Who owns each file a {@link NativeDb} handed over to checkpoints where it lies, on the task
 * manager. A file the DB wrote is owned by the DB until a checkpoint hands it over; from then on
 * it belongs to Flink's SharedStateRegistry as soon as one checkpoint that handed it over may have
 * reached the JobManager. The task manager learns only the opposite: Flink discards a snapshot
 * result here exactly when it never reported it ({@code AsyncCheckpointRunnable}). So a file is
 * given back only when every checkpoint that handed it over was discarded here: to the DB while it
 * is open (it deletes the file once it no longer reads it), else the caller deletes it. While
 * another such checkpoint is outstanding, or once one was confirmed complete, a discard deletes
 * nothing: the JobManager's registry deletes the file when no retained checkpoint needs it.
 *
 * <p>Lives as long as any handle of the DB's checkpoints (longer than the DB): Flink may discard
 * a result after the task disposed the backend. Thread-safe: hand-overs and discards of one file
 * are decided under one lock, so a discard never gives back a file that a concurrent checkpoint
 * is handing over again.
 */
public final class HandedOverFiles {

    private static final Logger LOG = LoggerFactory.getLogger(HandedOverFiles.class);

    /** What a discard of a handed-over file must do. */
    public enum Discard {
        /** Another checkpoint may still need the file, or the DB owns it again: delete nothing. */
        KEEP,
        /** Nobody owns the file any more: the caller deletes it. */
        DELETE
    }

    private final NativeDb db;

    /** Which of the DB's files checkpoints take where they are; set once per backend. */
    private volatile HandOverScope scope = HandOverScope.SHARED_DIRECTORY;

    /** Per file (name in the DB directory), the checkpoints that handed it over, not discarded. */
    private final Map<String, Set<Long>> outstanding = new HashMap<>();

    HandedOverFiles(NativeDb db) {
        this.db = db;
    }

    public HandOverScope scope() {
        return scope;
    }

    public void setScope(HandOverScope scope) {
        this.scope = scope;
    }

    /** Hands the checkpoint's files {@code names} over (see {@link NativeCheckpoint#handOver}). */
    public synchronized void handOver(NativeCheckpoint checkpoint, long checkpointId, String[] names) {
        checkpoint.handOver(names, checkpointId);
        for (String name : names) {
            outstanding.computeIfAbsent(name, n -> new HashSet<>()).add(checkpointId);
        }
    }

    /**
     * Flink discarded, on this task manager, the result of checkpoint {@code checkpointId} that
     * handed {@code name} over: it never reached the JobManager.
     */
    public synchronized Discard discarded(long checkpointId, String name) {
        Set<Long> checkpoints = outstanding.get(name);
        if (checkpoints == null || !checkpoints.remove(checkpointId) || !checkpoints.isEmpty()) {
            return Discard.KEEP;
        }
        outstanding.remove(name);
        try {
            db.takeBack(new String[] {name});
            return Discard.KEEP;
        } catch (IllegalStateException closed) {
            if (db.isClosed()) {
                return Discard.DELETE;
            }
            throw closed;
        } catch (RuntimeException e) {
            // The DB could not record it: the file stays handed over (a leak, never a loss).
            LOG.warn("ForSt-RS database {} could not take back {}", db.uri(), name, e);
            return Discard.KEEP;
        }
    }

    /**
     * Checkpoint {@code checkpointId} completed: its files are the JobManager's for good, later
     * discards of other checkpoints' handles to them delete nothing.
     */
    public synchronized void confirmed(long checkpointId) {
        outstanding.values().removeIf(checkpoints -> checkpoints.contains(checkpointId));
    }

    /** Files with a checkpoint that may still be discarded here (for tests and logs). */
    public synchronized Set<String> outstandingFiles() {
        return Set.copyOf(outstanding.keySet());
    }
}
