package org.forstrs.flink.bench;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A pass-through map (chained to the source) that counts completed checkpoints, so a bench run
 * can say how many it took; the job runs in this JVM's MiniCluster, hence a static counter. Only
 * subtask 0 counts, so each checkpoint counts once.
 */
final class CheckpointCounter<T> extends RichMapFunction<T, T> implements CheckpointListener {

    private static final long serialVersionUID = 1L;

    private static final AtomicLong COMPLETED = new AtomicLong();

    static long completed() {
        return COMPLETED.get();
    }

    @Override
    public T map(T value) {
        return value;
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        if (getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
            COMPLETED.incrementAndGet();
        }
    }
}
