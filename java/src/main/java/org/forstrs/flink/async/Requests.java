package org.forstrs.flink.async;

import org.apache.flink.core.asyncprocessing.InternalAsyncFuture;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateRequest;

import java.util.function.Supplier;

/** Typed access to the parts of a {@link StateRequest}. */
final class Requests {

    private Requests() {}

    @SuppressWarnings("unchecked")
    static <K> RecordContext<K> context(StateRequest<?, ?, ?, ?> request) {
        return (RecordContext<K>) request.getRecordContext();
    }

    @SuppressWarnings("unchecked")
    static <N> N namespace(StateRequest<?, ?, ?, ?> request) {
        return (N) request.getNamespace();
    }

    @SuppressWarnings("unchecked")
    static <T> T payload(StateRequest<?, ?, ?, ?> request) {
        return (T) request.getPayload();
    }

    @SuppressWarnings("unchecked")
    static <T> void complete(StateRequest<?, ?, ?, ?> request, T result) {
        ((InternalAsyncFuture<T>) request.getFuture()).complete(result);
    }

    static void fail(StateRequest<?, ?, ?, ?> request, Throwable cause) {
        request.getFuture()
                .completeExceptionally(
                        "ForSt-RS failed to execute "
                                + request.getRequestType()
                                + " on state "
                                + request.getState(),
                        cause);
    }

    static UnsupportedOperationException unsupported(StateRequest<?, ?, ?, ?> request) {
        return new UnsupportedOperationException(
                "Request type "
                        + request.getRequestType()
                        + " is not supported by "
                        + request.getState().getClass().getSimpleName());
    }

    /** Runs {@code body}, failing the request (instead of throwing) if it throws. */
    static <T> void completeWith(StateRequest<?, ?, ?, ?> request, ThrowingSupplier<T> body) {
        T result;
        try {
            result = body.get();
        } catch (Throwable t) {
            fail(request, t);
            return;
        }
        complete(request, result);
    }

    /** A {@link Supplier} that may throw. */
    @FunctionalInterface
    interface ThrowingSupplier<T> {
        T get() throws Exception;
    }
}
