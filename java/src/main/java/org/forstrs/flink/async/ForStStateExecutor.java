package org.forstrs.flink.async;

import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.runtime.asyncprocessing.AsyncRequestContainer;
import org.apache.flink.runtime.asyncprocessing.StateExecutor;
import org.apache.flink.runtime.asyncprocessing.StateRequest;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;
import org.forstrs.flink.state.NativeDb;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs a batch of the async execution controller as ONE native call (FLIP-426): every request of
 * the batch is encoded into one direct request buffer, {@code executeBatch} runs all gets as one
 * multi-get and all writes as one atomic write batch, and each request's future is completed from
 * the one response buffer (grown and retried when too small; the native side applies nothing then).
 *
 * <p>Requests of one key take effect in the order they were issued: within a batch the native side
 * answers each read with the batch's earlier writes applied (docs/BATCH_WIRE_FORMAT.md); across
 * batches, which run on the executor's own threads ({@code executor.batch-threads}), {@link
 * BatchOrder} starts a batch only after the earlier batches sharing one of its records (and so
 * its keys: one record per key has requests in flight). With {@code
 * executor.inline-coordinator} batches run one after another on the calling task thread.
 */
final class ForStStateExecutor implements StateExecutor {

    private static final Logger LOG = LoggerFactory.getLogger(ForStStateExecutor.class);

    private static final int INITIAL_REQUEST_BYTES = 64 << 10;
    private static final int INITIAL_RESPONSE_BYTES = 64 << 10;

    /** Bytes of writes behind that make them go to the store at once, without waiting for a batch. */
    private static final int WRITES_BEHIND_FLUSH_BYTES = 256 << 10;
    private static final AtomicInteger EXECUTOR_IDS = new AtomicInteger();

    private final NativeDb db;
    private final ExecutorService threads;
    private final int maxInFlight;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final ConcurrentLinkedQueue<Buffers> idleBuffers = new ConcurrentLinkedQueue<>();
    private volatile boolean shutdown;

    /**
     * Batches on the task thread only: writes that completed when issued ({@link
     * TaskThreadRequestHandler}), encoded in issue order; the next batch carries them ahead of its
     * own requests. Task thread only.
     */
    private final BatchEncoder writesBehind = new BatchEncoder(INITIAL_REQUEST_BYTES);

    /**
     * Why a batch carrying writes behind failed: their futures completed already, so every later
     * request fails with it rather than run on a store that lacks them.
     */
    @Nullable private Throwable lostWrites;

    /** Whether a read of the latest batch waited for storage. Task thread, batches inline only. */
    private boolean lastBatchWaitedOnStorage;

    /** Batches run and requests in them (including single sync requests). */
    private final AtomicLong batches = new AtomicLong();

    private final AtomicLong requestsRun = new AtomicLong();

    /** Writes that completed when issued and went with a later batch. */
    private final AtomicLong writesBehindRun = new AtomicLong();

    /**
     * @param threadCount threads running batches; 0 runs each batch on the calling thread
     */
    ForStStateExecutor(NativeDb db, int threadCount) {
        this.db = db;
        this.maxInFlight = Math.max(1, threadCount);
        writesBehind.begin();
        if (threadCount == 0) {
            this.threads = null;
        } else {
            int id = EXECUTOR_IDS.incrementAndGet();
            AtomicInteger n = new AtomicInteger();
            this.threads =
                    Executors.newFixedThreadPool(
                            threadCount,
                            r -> {
                                Thread t =
                                        new Thread(
                                                r,
                                                "forst-rs-executor-"
                                                        + id
                                                        + "-"
                                                        + n.incrementAndGet());
                                t.setDaemon(true);
                                return t;
                            });
        }
    }

    /** The requests of one batch, in the order the controller offered them. */
    static final class Batch implements AsyncRequestContainer<StateRequest<?, ?, ?, ?>> {
        final List<StateRequest<?, ?, ?, ?>> requests = new ArrayList<>();

        @Override
        public void offer(StateRequest<?, ?, ?, ?> request) {
            requests.add(request);
        }

        @Override
        public boolean isEmpty() {
            return requests.isEmpty();
        }
    }

    /** Request and response buffers, reused across batches. */
    private static final class Buffers {
        final BatchEncoder request = new BatchEncoder(INITIAL_REQUEST_BYTES);
        ByteBuffer response = allocate(INITIAL_RESPONSE_BYTES);

        static ByteBuffer allocate(int capacity) {
            return ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    @Override
    public AsyncRequestContainer<StateRequest<?, ?, ?, ?>> createRequestContainer() {
        return new Batch();
    }

    @Override
    public CompletableFuture<Void> executeBatchRequests(
            AsyncRequestContainer<StateRequest<?, ?, ?, ?>> container) {
        List<StateRequest<?, ?, ?, ?>> requests = ((Batch) container).requests;
        if (threads == null) {
            run(requests, null);
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        inFlight.incrementAndGet();
        BatchOrder.Ticket ticket = BatchOrder.register(requests);
        Runnable batch =
                () -> {
                    try {
                        run(requests, ticket);
                        done.complete(null);
                    } catch (Throwable t) {
                        done.completeExceptionally(t);
                    } finally {
                        inFlight.decrementAndGet();
                        ticket.finish();
                    }
                };
        // at once if no earlier batch shares a record, else on the thread that finishes the last
        ticket.predecessorsFinished.whenComplete(
                (ignored, failure) -> submit(batch, requests, ticket, done));
        return done;
    }

    private void submit(
            Runnable batch,
            List<StateRequest<?, ?, ?, ?>> requests,
            BatchOrder.Ticket ticket,
            CompletableFuture<Void> done) {
        try {
            threads.execute(batch);
        } catch (RejectedExecutionException e) {
            inFlight.decrementAndGet();
            ticket.finish();
            IllegalStateException error =
                    new IllegalStateException("ForSt-RS state executor is shut down", e);
            failAll(requests, 0, error);
            done.completeExceptionally(error);
        }
    }

    @Override
    public void executeRequestSync(StateRequest<?, ?, ?, ?> request) {
        List<StateRequest<?, ?, ?, ?>> requests = Collections.singletonList(request);
        if (threads == null) {
            run(requests, null);
            return;
        }
        BatchOrder.Ticket ticket = BatchOrder.register(requests);
        try {
            ticket.predecessorsFinished.join();
            run(requests, ticket);
        } finally {
            ticket.finish();
        }
    }

    @Override
    public boolean fullyLoaded() {
        return threads != null && inFlight.get() >= maxInFlight;
    }

    @Override
    public void shutdown() {
        if (!shutdown) {
            long n = batches.get();
            LOG.debug(
                    "ForSt-RS state executor shutting down: {} batches, {} requests ({} per batch),"
                            + " {} writes behind",
                    n,
                    requestsRun.get(),
                    n == 0 ? 0 : requestsRun.get() / n,
                    writesBehindRun.get());
        }
        shutdown = true;
        if (threads != null) {
            threads.shutdown();
            try {
                if (!threads.awaitTermination(1, TimeUnit.MINUTES)) {
                    LOG.warn("ForSt-RS state executor: batches still running after 1 minute");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        idleBuffers.clear();
    }

    /**
     * Whether the latest batch's reads were all answered at once, from memory or a local disk:
     * then a request may as well run when issued. Task thread, batches inline only.
     */
    boolean readsAnswerAtOnce() {
        return !lastBatchWaitedOnStorage;
    }

    /** Whether batches run on the calling task thread (then writes may go behind). */
    boolean runsInline() {
        return threads == null;
    }

    /**
     * Encodes a write whose future its caller completed already; the next batch applies it first.
     * Task thread, batches inline only.
     */
    void writeBehind(StateRequest<?, ?, ?, ?> request) {
        if (lostWrites != null) {
            throw lostWritesError();
        }
        long mark = writesBehind.mark();
        try {
            stateOf(request).encode(request, writesBehind);
        } catch (Throwable t) {
            writesBehind.reset(mark);
            throw new IllegalStateException(
                    "ForSt-RS failed to encode " + request.getRequestType(), t);
        }
        writesBehindRun.incrementAndGet();
        if (writesBehind.size() >= WRITES_BEHIND_FLUSH_BYTES) {
            flushWritesBehind();
        }
    }

    /**
     * Applies the writes behind now: before anything reads the store other than through a batch
     * (a checkpoint). Task thread; throws if they could not be applied.
     */
    void flushWritesBehind() {
        if (writesBehind.count() == 0) {
            return;
        }
        run(Collections.emptyList(), null);
        if (lostWrites != null) {
            throw lostWritesError();
        }
    }

    /** Writes behind that no batch has carried yet. */
    @VisibleForTesting
    int pendingWritesBehind() {
        return writesBehind.count();
    }

    private IllegalStateException lostWritesError() {
        return new IllegalStateException(
                "ForSt-RS could not apply writes whose requests had completed", lostWrites);
    }

    boolean isShutdown() {
        return shutdown;
    }

    /**
     * Runs one batch; never throws: every request's future is completed one way or the other. The
     * batch's {@code ticket} (if ordered) is finished as soon as the native call returned, before
     * any future completes: its reads are answered and its writes applied, and the callbacks of
     * its requests may at once issue requests of the same keys in a new batch, which need not
     * wait for this one to complete its futures.
     */
    private void run(
            List<StateRequest<?, ?, ?, ?>> requests, @Nullable BatchOrder.Ticket ticket) {
        if (lostWrites != null) {
            requests.forEach(this::completedInline);
            failAll(requests, 0, lostWritesError());
            return;
        }
        batches.incrementAndGet();
        requestsRun.addAndGet(requests.size());
        Buffers buffers = idleBuffers.poll();
        if (buffers == null) {
            buffers = new Buffers();
        }
        List<StateRequest<?, ?, ?, ?>> encoded = new ArrayList<>(requests.size());
        int completed = 0;
        int settled = 0; // requests no longer counted in flight on their record
        boolean carriesWritesBehind = writesBehind.count() > 0;
        boolean applied = false;
        try {
            BatchEncoder enc = buffers.request;
            enc.begin();
            if (carriesWritesBehind) {
                // Taken before the batch's own requests are encoded: a request completed by this
                // batch may issue writes behind again, which the next batch carries.
                enc.append(writesBehind);
                writesBehind.begin();
            }
            for (StateRequest<?, ?, ?, ?> request : requests) {
                long mark = enc.mark();
                try {
                    stateOf(request).encode(request, enc);
                    encoded.add(request);
                } catch (Throwable t) {
                    enc.reset(mark);
                    completedInline(request);
                    Requests.fail(request, t);
                }
            }
            if (encoded.isEmpty() && !carriesWritesBehind) {
                return;
            }
            int count = enc.count();
            int length = enc.finish();
            long written = db.executeBatch(enc.buffer(), length, buffers.response);
            if (written < 0) {
                long needed = -written;
                if (needed > Integer.MAX_VALUE - 8) {
                    throw new IllegalStateException(
                            "ForSt-RS batch response larger than 2 GiB (" + needed + " bytes)");
                }
                long grown = Math.max(needed, 2L * buffers.response.capacity());
                buffers.response = Buffers.allocate((int) Math.min(Integer.MAX_VALUE - 8, grown));
                written = db.executeBatch(enc.buffer(), length, buffers.response);
                if (written < 0) {
                    throw new IllegalStateException(
                            "ForSt-RS batch response needs "
                                    + (-written)
                                    + " bytes after growing the buffer to "
                                    + buffers.response.capacity());
                }
            }
            applied = true;
            if (ticket != null) {
                ticket.finish();
            }
            BatchDecoder dec = new BatchDecoder(buffers.response, (int) written, count);
            lastBatchWaitedOnStorage = dec.waitedOnStorage();
            for (StateRequest<?, ?, ?, ?> request : encoded) {
                // before its callbacks run: a write they issue may go behind
                completedInline(request);
                settled++;
                stateOf(request).complete(request, dec);
                completed++;
            }
        } catch (Throwable t) {
            if (carriesWritesBehind && !applied) {
                lostWrites = t;
            }
            encoded.subList(settled, encoded.size()).forEach(this::completedInline);
            failAll(encoded, completed, t);
        } finally {
            if (!shutdown) {
                idleBuffers.offer(buffers);
            }
        }
    }

    private static BatchState stateOf(StateRequest<?, ?, ?, ?> request) {
        Object state = request.getState();
        if (state instanceof BatchState) {
            return (BatchState) state;
        }
        throw new IllegalArgumentException(
                "State "
                        + state
                        + " does not belong to the ForSt-RS backend (request "
                        + request.getRequestType()
                        + ")");
    }

    /** Batches on the task thread: the record's request is no longer in flight. */
    private void completedInline(StateRequest<?, ?, ?, ?> request) {
        if (threads == null) {
            RecordSlot.completed(request.getRecordContext());
        }
    }

    private static void failAll(List<StateRequest<?, ?, ?, ?>> requests, int from, Throwable t) {
        for (int i = from; i < requests.size(); i++) {
            try {
                Requests.fail(requests.get(i), t);
            } catch (Throwable suppressed) {
                t.addSuppressed(suppressed);
            }
        }
    }
}
