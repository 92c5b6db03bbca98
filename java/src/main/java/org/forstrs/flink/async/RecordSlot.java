package org.forstrs.flink.async;

import org.apache.flink.runtime.asyncprocessing.RecordContext;

import java.util.concurrent.CompletableFuture;

/**
 * What this backend keeps on a record's context while the record is in flight, in the context's
 * extra slot (Flink leaves that slot to the state backend; Flink's ForSt caches its serialized key
 * there too).
 *
 * <p>Created on the task thread only: by {@link BatchOrder#register}, before the batch is handed
 * to the executor's threads (those only ever find it, so no two slots of one context can race),
 * or by {@link TaskThreadRequestHandler} when batches run on the task thread.
 */
final class RecordSlot {

    /**
     * The end of the latest registered batch holding one of the record's requests. Read and
     * written by the task thread only (batches are registered there, in hand-over order).
     */
    CompletableFuture<Void> lastBatch;

    /** The record's serialized key in the default namespace, once an executor thread built it. */
    volatile byte[] defaultNamespaceKey;

    /**
     * With batches on the task thread ({@link TaskThreadRequestHandler}): the record's requests
     * handed to the controller and not completed yet, and whether one was answered (the record
     * then holds its key until it is done). Task thread only.
     */
    private int inFlight;

    private boolean answered;

    private RecordSlot() {}

    void issued() {
        inFlight++;
    }

    /** One of the record's requests completed (or failed) in a batch run on the task thread. */
    static void completed(RecordContext<?> context) {
        RecordSlot slot = find(context);
        if (slot != null) {
            slot.inFlight--;
            slot.answered = true;
        }
    }

    boolean holdsKeyWithNothingInFlight() {
        return answered && inFlight == 0;
    }

    /** The context's slot, if it has one. */
    static RecordSlot find(RecordContext<?> context) {
        Object extra = context.getExtra();
        return extra instanceof RecordSlot ? (RecordSlot) extra : null;
    }

    /** The context's slot, created if it has none. Task thread only (see the class comment). */
    static RecordSlot of(RecordContext<?> context) {
        Object extra = context.getExtra();
        if (extra instanceof RecordSlot) {
            return (RecordSlot) extra;
        }
        RecordSlot slot = new RecordSlot();
        context.setExtra(slot);
        return slot;
    }
}
