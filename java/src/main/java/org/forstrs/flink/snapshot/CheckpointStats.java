package org.forstrs.flink.snapshot;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * What one checkpoint of a ForSt-RS keyed backend cost.
 *
 * @param checkpointId the checkpoint (or savepoint) id
 * @param syncNanos time on the task thread (freeze, pin, meta info copy)
 * @param asyncNanos time of the asynchronous phase (flush, copies, meta and manifest writes)
 * @param bytesThroughProcess SST bytes that were streamed through this JVM's process (0 when
 *     every copy stayed inside the storage; all new SST bytes for stream-only storages)
 * @param copiedTo where this checkpoint uploaded SST files to: Flink paths, or for bytes the
 *     JobManager keeps the handle's id
 * @param filesReused SST files referenced from an earlier confirmed checkpoint
 * @param bytesCopied total size of the copied SST files
 * @param handedOver new SST files the checkpoint took where they are, in the DB directory (no
 *     byte moved; the DB never deletes them again), as Flink paths
 */
public record CheckpointStats(
        long checkpointId,
        long syncNanos,
        long asyncNanos,
        long bytesThroughProcess,
        List<String> copiedTo,
        int filesReused,
        long bytesCopied,
        List<String> handedOver) {

    private static final Logger LOG = LoggerFactory.getLogger(CheckpointStats.class);

    /**
     * Logs this cost at DEBUG on the logger {@code org.forstrs.flink.snapshot.CheckpointStats},
     * with the record itself as the message's one parameter (appenders may read it whole).
     */
    public void log() {
        LOG.debug("ForSt-RS snapshot cost: {}", this);
    }

    /** SST files copied for this checkpoint. */
    public int filesCopied() {
        return copiedTo.size();
    }

    /** New SST files the checkpoint took where they are. */
    public int filesHandedOver() {
        return handedOver.size();
    }
}
