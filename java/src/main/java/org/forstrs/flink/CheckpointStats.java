package org.forstrs.flink;

/**
 * What one checkpoint of a ForSt-RS keyed backend cost.
 *
 * @param checkpointId the checkpoint (or savepoint) id
 * @param syncNanos time on the task thread (freeze, pin, meta info copy)
 * @param asyncNanos time of the asynchronous phase (flush, copies, meta and manifest writes)
 * @param bytesThroughProcess SST bytes that were streamed through this JVM's process by the copy
 *     (0 when every copy stayed inside the storage)
 * @param filesCopied SST files copied for this checkpoint
 * @param filesReused SST files referenced from an earlier confirmed checkpoint
 * @param bytesCopied total size of the copied SST files
 */
public record CheckpointStats(
        long checkpointId,
        long syncNanos,
        long asyncNanos,
        long bytesThroughProcess,
        int filesCopied,
        int filesReused,
        long bytesCopied) {}
