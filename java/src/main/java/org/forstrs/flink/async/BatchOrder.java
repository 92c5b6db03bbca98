package org.forstrs.flink.async;

import org.apache.flink.runtime.asyncprocessing.StateRequest;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Keeps the requests of one key in the order the controller handed them over, across batches that
 * run on several threads: a batch may start only once every earlier batch sharing one of its keys
 * has finished (its reads done and its writes applied). Batches without a common key still run
 * concurrently and overlap their I/O.
 *
 * <p>Why this is needed: Flink lets one record per key be in flight, but one record's requests can
 * be split across two batches, and the second batch must not overtake the first.
 *
 * <p>Keys are Flink's keys (the record context's key), compared with {@code equals}, as the
 * controller's own key accounting does. Every state request addresses its record's key only.
 */
final class BatchOrder {

    /** For each key, the end of the latest batch that touches it and has not finished yet. */
    private final Map<Object, CompletableFuture<Void>> lastBatchOfKey = new HashMap<>();

    /** The keys of a batch and the future its end completes. */
    static final class Ticket {
        final Set<Object> keys;
        final CompletableFuture<Void> finished = new CompletableFuture<>();

        /** Completes when every earlier batch sharing a key has finished. */
        final CompletableFuture<Void> predecessorsFinished;

        private Ticket(Set<Object> keys, CompletableFuture<Void> predecessorsFinished) {
            this.keys = keys;
            this.predecessorsFinished = predecessorsFinished;
        }
    }

    /**
     * Registers a batch, in hand-over order (the controller hands batches over from its one task
     * thread), and returns its ticket. The caller must call {@link #finish} once the batch ran.
     */
    Ticket register(List<StateRequest<?, ?, ?, ?>> requests) {
        Set<Object> keys = new HashSet<>();
        for (StateRequest<?, ?, ?, ?> request : requests) {
            keys.add(request.getRecordContext().getKey());
        }
        List<CompletableFuture<Void>> predecessors = new ArrayList<>();
        Ticket ticket;
        synchronized (this) {
            for (Object key : keys) {
                CompletableFuture<Void> previous = lastBatchOfKey.get(key);
                if (previous != null && !previous.isDone()) {
                    predecessors.add(previous);
                }
            }
            ticket =
                    new Ticket(
                            keys,
                            CompletableFuture.allOf(
                                    predecessors.toArray(new CompletableFuture<?>[0])));
            for (Object key : keys) {
                lastBatchOfKey.put(key, ticket.finished);
            }
        }
        return ticket;
    }

    /** Marks the batch of {@code ticket} finished and lets its successors run; idempotent. */
    void finish(Ticket ticket) {
        synchronized (this) {
            for (Object key : ticket.keys) {
                lastBatchOfKey.remove(key, ticket.finished);
            }
        }
        ticket.finished.complete(null);
    }
}
