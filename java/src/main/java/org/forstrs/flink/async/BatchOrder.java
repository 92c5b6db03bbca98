package org.forstrs.flink.async;

import org.apache.flink.runtime.asyncprocessing.StateRequest;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Keeps the requests of one record in the order the controller handed them over, across batches
 * that run on several threads: a batch may start only once every earlier batch holding a request
 * of one of its records has finished (its reads done and its writes applied). Other batches run
 * concurrently and overlap their I/O.
 *
 * <p>Why this is needed: one record's requests can be split across two batches (it may issue
 * several without waiting, and the controller cuts batches by size), and the second batch must
 * not overtake the first.
 *
 * <p>Why ordering by record is ordering by key: the controller lets a record's requests run only
 * while that record holds its key (sync requests included), and hands the key to the next record
 * only once every request of the holder completed and its callbacks ran. A batch's ticket is
 * finished before its requests' futures complete, so every batch of one record has finished
 * before any request of the next record of the same key is handed over. Claims therefore live on
 * the record's context ({@link RecordSlot}): registering costs the task thread a field read and
 * write per request, and finishing costs nothing per request.
 */
final class BatchOrder {

    private BatchOrder() {}

    /** The future a batch's end completes, and what must finish before the batch starts. */
    static final class Ticket {
        private final CompletableFuture<Void> finished;

        /** Completes when every earlier batch sharing a record has finished. */
        final CompletableFuture<Void> predecessorsFinished;

        private Ticket(
                CompletableFuture<Void> finished, List<CompletableFuture<Void>> predecessors) {
            this.finished = finished;
            this.predecessorsFinished =
                    CompletableFuture.allOf(predecessors.toArray(new CompletableFuture<?>[0]));
        }

        /** Marks the batch finished and lets its successors run; idempotent. */
        void finish() {
            finished.complete(null);
        }
    }

    /**
     * Registers a batch and returns its ticket. Task thread only, in hand-over order (the
     * controller hands batches over from there). The caller must call {@link Ticket#finish} once
     * the batch ran.
     */
    static Ticket register(List<StateRequest<?, ?, ?, ?>> requests) {
        List<CompletableFuture<Void>> predecessors = new ArrayList<>();
        CompletableFuture<Void> finished = new CompletableFuture<>();
        for (StateRequest<?, ?, ?, ?> request : requests) {
            RecordSlot slot = RecordSlot.of(request.getRecordContext());
            CompletableFuture<Void> previous = slot.lastBatch;
            if (previous != finished) {
                slot.lastBatch = finished;
                if (previous != null && !previous.isDone()) {
                    predecessors.add(previous);
                }
            }
        }
        return new Ticket(finished, predecessors);
    }
}
