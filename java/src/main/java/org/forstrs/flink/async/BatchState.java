package org.forstrs.flink.async;

import org.apache.flink.runtime.asyncprocessing.StateRequest;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;

/**
 * A state that turns its requests into ops of a batch (docs/BATCH_WIRE_FORMAT.md) and completes
 * them from the responses. Implemented by every state of {@link ForStKeyedStateBackend}.
 */
interface BatchState {

    /**
     * Writes the ops of {@code request}. On an exception the executor rolls the encoder back and
     * fails the request.
     */
    void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder out) throws Exception;

    /**
     * Reads the responses of the ops {@link #encode} wrote (all of them, even if the request
     * fails) and completes the request's future, normally or exceptionally.
     */
    void complete(StateRequest<?, ?, ?, ?> request, BatchDecoder in);
}
