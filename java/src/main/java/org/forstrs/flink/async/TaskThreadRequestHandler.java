package org.forstrs.flink.async;

import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.core.asyncprocessing.InternalAsyncFuture;
import org.apache.flink.core.asyncprocessing.InternalAsyncFutureUtils;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.internal.InternalPartitionedState;

import javax.annotation.Nonnull;
import javax.annotation.Nullable;

import java.util.EnumSet;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The handler our states issue requests through when batches run on the task thread. Two things
 * it does that Flink's controller alone would not:
 *
 * <ul>
 *   <li>Writes behind ({@code executor.write-behind}): a write whose record holds its key and has
 *       no request in flight completes at once and waits, encoded, at the head of the next batch
 *       ({@link ForStStateExecutor#writeBehind}) instead of making a round trip of its own. A
 *       record's read-then-write of a key (an update, a reduce, an add) then costs one batch, not
 *       two, and a record of a hot key no longer waits a round trip for its write.
 *   <li>Running at issue ({@code executor.run-at-issue}): any other request goes to the controller
 *       as a synchronous one, which runs it at once if no other record holds its key (else when
 *       the key is free, as before). Its future is then complete before the caller registers
 *       callbacks on it, so they run at once instead of each through Flink's mailbox, as on a
 *       synchronous backend. This holds only while reads are answered from memory or a local
 *       disk: once a batch waited for storage, requests are batched (their reads go out in one
 *       flight) until a batch no longer waits.
 * </ul>
 *
 * <p>Order is kept. A record that holds its key (one of its requests was answered, so the
 * controller let it occupy the key) is the only record of that key with requests in flight, and
 * with none of its own in flight nothing issued before the write is still waiting; everything
 * issued after the write runs in a later batch, which applies the write first. Every other
 * request goes to the controller, counted on the record's {@link RecordSlot} until it completes.
 */
final class TaskThreadRequestHandler implements StateRequestHandler {

    /** Requests that only write, computed in full on the Java side, and answer nothing. */
    private static final Set<StateRequestType> PLAIN_WRITES =
            EnumSet.of(
                    StateRequestType.VALUE_UPDATE,
                    StateRequestType.REDUCING_ADD,
                    StateRequestType.AGGREGATING_ADD,
                    StateRequestType.CLEAR,
                    StateRequestType.MAP_PUT,
                    StateRequestType.MAP_PUT_ALL,
                    StateRequestType.MAP_REMOVE,
                    StateRequestType.LIST_ADD,
                    StateRequestType.LIST_ADD_ALL,
                    StateRequestType.LIST_UPDATE);

    private final StateExecutionController<?> controller;
    private final Supplier<ForStStateExecutor> executor;
    private final boolean writeBehind;
    private final boolean runAtIssue;

    /**
     * @param controller Flink's controller, where every other request goes
     * @param executor the one executor running this backend's batches on the task thread, or null
     *     when there is none (then every request goes to the controller)
     * @param writeBehind whether writes may go behind
     * @param runAtIssue whether a request goes to the controller as a synchronous one: it runs at
     *     once when its key is free, so callbacks registered on it run at once
     */
    TaskThreadRequestHandler(
            StateExecutionController<?> controller,
            Supplier<ForStStateExecutor> executor,
            boolean writeBehind,
            boolean runAtIssue) {
        this.controller = controller;
        this.executor = executor;
        this.writeBehind = writeBehind;
        this.runAtIssue = runAtIssue;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public <IN, OUT> InternalAsyncFuture<OUT> handleRequest(
            @Nullable State state, StateRequestType type, @Nullable IN payload) {
        RecordContext<?> context = controller.getCurrentContext();
        RecordSlot slot = RecordSlot.of(context);
        ForStStateExecutor target = executor.get();
        if (target != null
                && writeBehind
                && slot.holdsKeyWithNothingInFlight()
                && PLAIN_WRITES.contains(type)
                && state instanceof BatchState) {
            InternalAsyncFuture<OUT> done = InternalAsyncFutureUtils.completedVoidFuture();
            target.writeBehind(new StateRequest(state, type, false, payload, done, context));
            return done;
        }
        slot.issued();
        boolean now = target != null && runAtIssue && target.readsAnswerAtOnce();
        return controller.handleRequest(state, type, now, payload, false);
    }

    @Override
    public <IN, OUT> OUT handleRequestSync(
            State state, StateRequestType type, @Nullable IN payload) {
        RecordSlot.of(controller.getCurrentContext()).issued();
        return controller.handleRequestSync(state, type, payload);
    }

    @Override
    public <N> void setCurrentNamespaceForState(
            @Nonnull InternalPartitionedState<N> state, N namespace) {
        controller.setCurrentNamespaceForState(state, namespace);
    }
}
