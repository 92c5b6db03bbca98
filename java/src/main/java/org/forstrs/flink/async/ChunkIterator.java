package org.forstrs.flink.async;

import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.runtime.asyncprocessing.AbstractStateIterator;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;

import javax.annotation.Nullable;

import java.util.Collection;

/**
 * One chunk of a state's elements. If more follow, iterating issues an {@code ITERATOR_LOADING}
 * request whose payload is {@code nextPayload} (the state's cursor), answered by the next chunk.
 */
final class ChunkIterator<T> extends AbstractStateIterator<T> {

    @Nullable private final Object nextPayload;

    ChunkIterator(
            State state,
            StateRequestType requestType,
            StateRequestHandler handler,
            Collection<T> chunk,
            @Nullable Object nextPayload) {
        super(state, requestType, handler, chunk);
        this.nextPayload = nextPayload;
    }

    @Override
    public boolean hasNextLoading() {
        return nextPayload != null;
    }

    @Override
    protected Object nextPayloadForContinuousLoading() {
        return nextPayload;
    }
}
