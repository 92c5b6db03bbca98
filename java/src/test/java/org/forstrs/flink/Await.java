package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.client.JobStatusMessage;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;

/**
 * Waits for a condition on a running job. What decides a verdict is the condition, never how
 * fast a loaded machine gets there: each wait has a deadline far above any condition's cost
 * ({@link #DEADLINE}), a hang guard that fails naming what it waited for instead of leaving a
 * stalled run to the build's timeout. A wait on a job fails as soon as the job reached a
 * terminal state, since then the condition can no longer become true.
 */
final class Await {

    /** Between two checks of the condition: a poll interval, not part of any verdict. */
    private static final long POLL_MS = 20;

    /** The hang guard of one wait. */
    static final Duration DEADLINE = Duration.ofMinutes(5);

    private Await() {}

    static void until(String what, Callable<Boolean> condition, JobClient job) throws Exception {
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (!condition.call()) {
            JobStatus status = job.getJobStatus().get();
            if (status.isGloballyTerminalState()) {
                Throwable cause = job.getJobExecutionResult().handle((result, e) -> e).get();
                throw new AssertionError(
                        "the job ended (" + status + ") while waiting for " + what, cause);
            }
            pause(what, end);
        }
    }

    /**
     * Until {@code condition} holds, where no running job can end the wait (the JobManager's
     * asynchronous deletions after a job ended, a job's own way to its end).
     */
    static void until(String what, Callable<Boolean> condition) throws Exception {
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (!condition.call()) {
            pause(what, end);
        }
    }

    /** Until the job reached a terminal state; returns that state (a terminal state is final). */
    static JobStatus terminal(JobClient job) throws Exception {
        until(
                "job " + job.getJobID() + " to end",
                () -> job.getJobStatus().get().isGloballyTerminalState());
        return job.getJobStatus().get();
    }

    private static void pause(String what, long end) throws InterruptedException {
        if (System.nanoTime() - end > 0) {
            throw new AssertionError("waited " + DEADLINE.toMinutes() + " min for " + what);
        }
        Thread.sleep(POLL_MS);
    }

    /**
     * Cancels every job of the cluster that has not ended and waits until each has: a test that
     * failed midway must not leave a job holding the shared cluster's slots, or the next test's
     * job cannot be scheduled and fails for a reason not its own.
     */
    static void cancelUnfinished(ClusterClient<?> cluster) throws Exception {
        for (JobStatusMessage job : cluster.listJobs().get()) {
            if (job.getJobState().isGloballyTerminalState()) {
                continue;
            }
            JobID id = job.getJobId();
            try {
                cluster.cancel(id).get();
            } catch (ExecutionException e) {
                // it ended between the listing and the cancel: the wait below sees its end
            }
            until(
                    "cancelled job " + id + " to end",
                    () -> cluster.getJobStatus(id).get().isGloballyTerminalState());
        }
    }
}
