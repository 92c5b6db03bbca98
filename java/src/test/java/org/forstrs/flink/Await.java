package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.client.JobStatusMessage;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;

/**
 * Waits for a condition on a running job, with no deadline: how fast a loaded machine runs never
 * decides a verdict (a hang is bounded by the build's timeout). The wait fails as soon as the job
 * reached a terminal state, since then the condition can no longer become true.
 */
final class Await {

    /** Between two checks of the condition: a poll interval, not part of any verdict. */
    private static final long POLL_MS = 20;

    private Await() {}

    static void until(String what, Callable<Boolean> condition, JobClient job) throws Exception {
        while (!condition.call()) {
            JobStatus status = job.getJobStatus().get();
            if (status.isGloballyTerminalState()) {
                Throwable cause = job.getJobExecutionResult().handle((result, e) -> e).get();
                throw new AssertionError(
                        "the job ended (" + status + ") while waiting for " + what, cause);
            }
            Thread.sleep(POLL_MS);
        }
    }

    /**
     * Until {@code condition} holds, where no running job can end the wait (the JobManager's
     * asynchronous deletions after a job ended, a job's own way to its end): a condition that
     * never holds hangs until the build's timeout.
     */
    static void until(Callable<Boolean> condition) throws Exception {
        while (!condition.call()) {
            Thread.sleep(POLL_MS);
        }
    }

    /** Until the job reached a terminal state; returns that state (a terminal state is final). */
    static JobStatus terminal(JobClient job) throws Exception {
        until(() -> job.getJobStatus().get().isGloballyTerminalState());
        return job.getJobStatus().get();
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
            until(() -> cluster.getJobStatus(id).get().isGloballyTerminalState());
        }
    }
}
