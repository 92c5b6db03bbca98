package org.forstrs.flink.async;

import org.apache.flink.runtime.asyncprocessing.StateRequest;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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

    /**
     * The keys of a batch (one per request, repeats included: a set would cost the task thread a
     * hash insertion per request for nothing, since registering or releasing a key twice does no
     * harm) and the future its end completes.
     */
    static final class Ticket {
        final Object[] keys;
        final CompletableFuture<Void> finished;

        /** Completes when every earlier batch sharing a key has finished. */
        final CompletableFuture<Void> predecessorsFinished;

        private Ticket(
                Object[] keys,
                CompletableFuture<Void> finished,
                CompletableFuture<Void> predecessorsFinished) {
            this.keys = keys;
            this.finished = finished;
            this.predecessorsFinished = predecessorsFinished;
        }
    }

    /**
     * Registers a batch, in hand-over order (the controller hands batches over from its one task
     * thread), and returns its ticket. The caller must call {@link #finish} once the batch ran.
     */
    Ticket register(List<StateRequest<?, ?, ?, ?>> requests) {
        Object[] keys = new Object[requests.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = requests.get(i).getRecordContext().getKey();
        }
        return register(keys);
    }

    /** {@link #register(List)} for the keys of a batch's requests, in request order. */
    Ticket register(Object[] keys) {
        CompletableFuture<Void> finished = new CompletableFuture<>();
        List<CompletableFuture<Void>> predecessors = new ArrayList<>();
        synchronized (this) {
            for (Object key : keys) {
                CompletableFuture<Void> previous = lastBatchOfKey.put(key, finished);
                if (previous != null && previous != finished && !previous.isDone()) {
                    predecessors.add(previous);
                }
            }
        }
        return new Ticket(
                keys,
                finished,
                CompletableFuture.allOf(predecessors.toArray(new CompletableFuture<?>[0])));
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
