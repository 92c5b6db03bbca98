package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Passes numbers on. Subtask 0 fails in each of its first {@code failingAttempts} attempts, at the
 * first record after it has passed {@code minRecords} records and a checkpoint completed whose
 * snapshot of this subtask came after at least one record of the attempt: the restore that follows
 * must resume from that checkpoint, past the start of the split. Behind a {@link PacedSequence}
 * with input left after such a checkpoint, every failing attempt fails exactly once.
 *
 * <p>Counters are kept per run id and JVM (the tests' MiniCluster runs in the test's JVM).
 */
public final class FailAfterCheckpoint extends RichMapFunction<Long, Long>
        implements CheckpointListener, CheckpointedFunction {
    private static final long serialVersionUID = 1L;

    private static final Map<String, AtomicInteger> FAILURES = new ConcurrentHashMap<>();
    private static final Map<String, AtomicInteger> RESUMED = new ConcurrentHashMap<>();

    private final String run;
    private final long splitSize;
    private final int failingAttempts;
    private final long minRecords;
    private transient boolean fails;
    private transient long seen;
    private transient Map<Long, Long> seenAtSnapshot;
    private transient boolean armed;

    /**
     * @param splitSize records per source split ({@code records / parallelism}): an attempt whose
     *     first number is not a multiple of it resumed mid-split
     */
    public FailAfterCheckpoint(String run, long splitSize, int failingAttempts, long minRecords) {
        this.run = run;
        this.splitSize = splitSize;
        this.failingAttempts = failingAttempts;
        this.minRecords = minRecords;
        counter(FAILURES, run);
        counter(RESUMED, run);
    }

    /** The run's counter in this JVM (a task manager of its own has not seen the run yet). */
    private static AtomicInteger counter(Map<String, AtomicInteger> counters, String run) {
        return counters.computeIfAbsent(run, r -> new AtomicInteger());
    }

    /** Failures injected so far in {@code run}. */
    public static int failures(String run) {
        return counter(FAILURES, run).get();
    }

    /** Attempts of {@code run} whose first record was not the start of a split. */
    public static int resumedAttempts(String run) {
        return counter(RESUMED, run).get();
    }

    @Override
    public void open(OpenContext openContext) {
        fails =
                getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0
                        && getRuntimeContext().getTaskInfo().getAttemptNumber() < failingAttempts;
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {
        seenAtSnapshot = new HashMap<>();
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) {
        seenAtSnapshot.put(context.getCheckpointId(), seen);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        if (seenAtSnapshot.getOrDefault(checkpointId, 0L) > 0) {
            armed = true;
        }
    }

    @Override
    public Long map(Long value) throws Exception {
        if (++seen == 1 && value % splitSize != 0) {
            counter(RESUMED, run).incrementAndGet();
        }
        if (fails && armed && seen >= minRecords) {
            counter(FAILURES, run).incrementAndGet();
            throw new InjectedFailure(seen);
        }
        return value;
    }

    /** The failure the test injects (recognizable in logs). */
    public static final class InjectedFailure extends Exception {
        private static final long serialVersionUID = 1L;

        InjectedFailure(long record) {
            super("Injected failure at record " + record + " of this attempt");
        }
    }
}
