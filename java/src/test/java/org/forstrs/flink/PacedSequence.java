package org.forstrs.flink;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStreamSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The numbers {@code 0..records-1} (split across readers as {@code env.fromSequence} splits them),
 * paced by completed checkpoints instead of by time: between two completed checkpoints each reader
 * emits at most its share of {@code recordsPerCheckpoint}. A job reading it cannot finish before
 * about {@code records / recordsPerCheckpoint} checkpoints completed, on any machine at any load,
 * so checkpoints and failures armed by checkpoints always fall inside the input. A test can also
 * hold a run's total emission at a limit ({@link #holdAt}) to act on a job that is known to be
 * mid-input.
 *
 * <p>State is kept per run id and JVM: {@link #holdAt} and {@link #emitted} see the readers of
 * the tests' MiniCluster, which runs in the test's JVM.
 */
public final class PacedSequence {

    private static final Map<String, Budget> BUDGETS = new ConcurrentHashMap<>();

    private PacedSequence() {}

    /** The numbers themselves. */
    public static DataStreamSource<Long> of(
            StreamExecutionEnvironment env, String run, long records, int recordsPerCheckpoint) {
        return of(env, run, records, recordsPerCheckpoint, i -> i, Types.LONG);
    }

    /** {@code generator} applied to each number. */
    public static <T> DataStreamSource<T> of(
            StreamExecutionEnvironment env,
            String run,
            long records,
            int recordsPerCheckpoint,
            GeneratorFunction<Long, T> generator,
            TypeInformation<T> type) {
        BUDGETS.putIfAbsent(run, new Budget());
        return env.fromSource(
                new DataGeneratorSource<>(
                        new Counted<>(run, generator),
                        records,
                        new PerCheckpoint(run, recordsPerCheckpoint),
                        type),
                WatermarkStrategy.noWatermarks(),
                "paced sequence");
    }

    /** Readers of {@code run} stop once {@code total} records were emitted over all its jobs. */
    public static void holdAt(String run, long total) {
        BUDGETS.get(run).setLimit(total);
    }

    /** Lifts the hold of {@link #holdAt}. */
    public static void release(String run) {
        BUDGETS.get(run).setLimit(Long.MAX_VALUE);
    }

    /** Records emitted so far by all jobs of {@code run} (replays after a restore count again). */
    public static long emitted(String run) {
        return BUDGETS.get(run).emitted();
    }

    /**
     * Records handed downstream so far by all jobs of {@code run}: a record the budget let
     * through ({@link #emitted}) leaves the reader at its next poll, and a checkpoint barrier
     * may come before it. One counted here is in the stream ahead of every later barrier.
     */
    public static long generated(String run) {
        return BUDGETS.get(run).generated.get();
    }

    /** The generator, counting the records it makes (each is emitted as it is made). */
    private static final class Counted<T> implements GeneratorFunction<Long, T> {
        private static final long serialVersionUID = 1L;
        private final String run;
        private final GeneratorFunction<Long, T> generator;

        Counted(String run, GeneratorFunction<Long, T> generator) {
            this.run = run;
            this.generator = generator;
        }

        @Override
        public void open(SourceReaderContext readerContext) throws Exception {
            generator.open(readerContext);
        }

        @Override
        public void close() throws Exception {
            generator.close();
        }

        @Override
        public T map(Long index) throws Exception {
            T record = generator.map(index);
            BUDGETS.computeIfAbsent(run, r -> new Budget()).generated.incrementAndGet();
            return record;
        }
    }

    /** What a run may still emit; waiters are woken when the limit moves. */
    private static final class Budget {
        private final AtomicLong generated = new AtomicLong();
        private long emitted;
        private long limit = Long.MAX_VALUE;
        private final List<CompletableFuture<Void>> waiting = new ArrayList<>();

        synchronized CompletableFuture<Void> take(int permits) {
            if (emitted + permits <= limit) {
                emitted += permits;
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> moved = new CompletableFuture<>();
            waiting.add(moved);
            return moved.thenCompose(ignored -> take(permits));
        }

        void setLimit(long newLimit) {
            List<CompletableFuture<Void>> wake;
            synchronized (this) {
                limit = newLimit;
                wake = new ArrayList<>(waiting);
                waiting.clear();
            }
            wake.forEach(f -> f.complete(null));
        }

        synchronized long emitted() {
            return emitted;
        }
    }

    /** Each reader's share of the records per checkpoint, and the run's budget. */
    private static final class PerCheckpoint implements RateLimiterStrategy<NumberSequenceSplit> {
        private static final long serialVersionUID = 1L;
        private final String run;
        private final int recordsPerCheckpoint;

        PerCheckpoint(String run, int recordsPerCheckpoint) {
            this.run = run;
            this.recordsPerCheckpoint = recordsPerCheckpoint;
        }

        @Override
        public RateLimiter<NumberSequenceSplit> createRateLimiter(int parallelism) {
            // computeIfAbsent: in a task manager of its own, this JVM has not seen the run yet
            return new CheckpointGate(
                    BUDGETS.computeIfAbsent(run, r -> new Budget()),
                    Math.max(1, recordsPerCheckpoint / parallelism));
        }
    }

    /**
     * Lets {@code perCycle} records through, then waits for the next completed checkpoint. Both
     * methods run on the reader's task thread.
     */
    private static final class CheckpointGate implements RateLimiter<NumberSequenceSplit> {
        private final Budget budget;
        private final int perCycle;
        private int left;
        private CompletableFuture<Void> nextCycle = new CompletableFuture<>();

        CheckpointGate(Budget budget, int perCycle) {
            this.budget = budget;
            this.perCycle = perCycle;
            this.left = perCycle;
        }

        @Override
        public CompletionStage<Void> acquire(int permits) {
            CompletableFuture<Void> cycle =
                    left > 0 ? CompletableFuture.completedFuture(null) : nextCycle;
            return cycle.thenCompose(
                    ignored -> {
                        left -= permits;
                        return budget.take(permits);
                    });
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            left = perCycle;
            CompletableFuture<Void> opened = nextCycle;
            nextCycle = new CompletableFuture<>();
            opened.complete(null);
        }
    }
}
