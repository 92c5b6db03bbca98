package org.forstrs.flink;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.JobClient;

import java.util.concurrent.Callable;

import static org.assertj.core.api.Assertions.assertThat;

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
            assertThat(status.isGloballyTerminalState())
                    .as("the job ended (%s) while waiting for %s", status, what)
                    .isFalse();
            Thread.sleep(POLL_MS);
        }
    }

    /**
     * Until {@code condition} holds, for what goes on after a job ended (the JobManager's
     * asynchronous deletions): no job to watch, so a condition that never holds hangs until the
     * build's timeout.
     */
    static void until(Callable<Boolean> condition) throws Exception {
        while (!condition.call()) {
            Thread.sleep(POLL_MS);
        }
    }

    /** Until the job reached a terminal state; returns that state. */
    static JobStatus terminal(JobClient job) throws Exception {
        JobStatus status = job.getJobStatus().get();
        while (!status.isGloballyTerminalState()) {
            Thread.sleep(POLL_MS);
            status = job.getJobStatus().get();
        }
        return status;
    }
}
