package org.forstrs.flink.async;

import org.apache.flink.runtime.asyncprocessing.RecordContext;

import java.util.concurrent.CompletableFuture;

/**
 * What this backend keeps on a record's context while the record is in flight, in the context's
 * extra slot (Flink leaves that slot to the state backend; Flink's ForSt caches its serialized key
 * there too).
 *
 * <p>Created only by {@link BatchOrder#register}, on the task thread, before the batch is handed
 * to the executor's threads: those only ever find it, so no two slots of one context can race.
 */
final class RecordSlot {

    /**
     * The end of the latest registered batch holding one of the record's requests. Read and
     * written by the task thread only (batches are registered there, in hand-over order).
     */
    CompletableFuture<Void> lastBatch;

    /** The record's serialized key in the default namespace, once an executor thread built it. */
    volatile byte[] defaultNamespaceKey;

    private RecordSlot() {}

    /** The context's slot, if a batch of the record was registered. */
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
