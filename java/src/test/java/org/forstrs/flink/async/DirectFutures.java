package org.forstrs.flink.async;

import org.apache.flink.core.asyncprocessing.AsyncFutureImpl;
import org.apache.flink.core.asyncprocessing.InternalAsyncFuture;

import java.util.List;

/** Futures for requests made outside Flink's controller: callbacks run on the completing thread. */
final class DirectFutures {

    private DirectFutures() {}

    /** A future whose failures (of the request or of a callback) are added to {@code errors}. */
    static <T> InternalAsyncFuture<T> recordingFailures(List<Throwable> errors) {
        return new AsyncFutureImpl<>(
                task -> {
                    try {
                        task.run();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                },
                (message, t) -> errors.add(t));
    }
}
