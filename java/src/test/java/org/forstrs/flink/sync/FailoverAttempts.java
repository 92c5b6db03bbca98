package org.forstrs.flink.sync;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.StateBackend.KeyedStateBackendParameters;

import org.forstrs.flink.ForStStateBackend;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Flink's V1 test bases give every backend they create or restore a new job id, which covers a
 * restore under a new job only. This backend makes every backend of one test belong to the same
 * job, each the next attempt of its subtask: the way a failover restores.
 */
final class FailoverAttempts {

    /** How the test bases' restores run. */
    enum Restore {
        /** As the base does it: every backend under a new job id. */
        NEW_JOB,
        /** One job for the whole test, each backend the next attempt of the subtask. */
        FAILOVER
    }

    /** The suites' parameters: checkpoint storage ("jobmanager", "filesystem") x {@link Restore}. */
    static List<Object[]> storagesAndRestores() {
        List<Object[]> cases = new ArrayList<>();
        for (String storage : List.of("jobmanager", "filesystem")) {
            for (Restore restore : Restore.values()) {
                cases.add(new Object[] {storage, restore});
            }
        }
        return cases;
    }

    private final JobID job = new JobID();
    private final AtomicInteger attempts = new AtomicInteger();

    /** A backend with {@code settings} that restores as {@code restore} says. */
    ForStStateBackend backend(ReadableConfig settings, Restore restore) {
        return restore == Restore.NEW_JOB
                ? new ForStStateBackend(settings)
                : new SameJobBackend(settings, this);
    }

    private <K> KeyedStateBackendParameters<K> nextAttempt(KeyedStateBackendParameters<K> p) {
        Environment env = withAttempt(p.getEnv(), job, attempts.getAndIncrement());
        return new KeyedStateBackendParametersImpl<>(
                env,
                job,
                p.getOperatorIdentifier(),
                p.getKeySerializer(),
                p.getNumberOfKeyGroups(),
                p.getKeyGroupRange(),
                p.getKvStateRegistry(),
                p.getTtlTimeProvider(),
                p.getMetricGroup(),
                p.getCustomInitializationMetrics(),
                p.getStateHandles(),
                p.getCancelStreamRegistry(),
                p.getManagedMemoryFraction());
    }

    /** {@code env}, except that it is attempt {@code attempt} of its subtask, in {@code job}. */
    static Environment withAttempt(Environment env, JobID job, int attempt) {
        TaskInfo info = env.getTaskInfo();
        TaskInfo next =
                new TaskInfoImpl(
                        info.getTaskName(),
                        info.getMaxNumberOfParallelSubtasks(),
                        info.getIndexOfThisSubtask(),
                        info.getNumberOfParallelSubtasks(),
                        attempt);
        return (Environment)
                Proxy.newProxyInstance(
                        Environment.class.getClassLoader(),
                        new Class<?>[] {Environment.class},
                        (proxy, method, args) -> {
                            switch (method.getName()) {
                                case "getTaskInfo":
                                    return next;
                                case "getJobID":
                                    return job;
                                default:
                                    try {
                                        return method.invoke(env, args);
                                    } catch (InvocationTargetException e) {
                                        throw e.getCause();
                                    }
                            }
                        });
    }

    private static final class SameJobBackend extends ForStStateBackend {
        private static final long serialVersionUID = 1L;

        private final transient FailoverAttempts attempts;

        SameJobBackend(ReadableConfig settings, FailoverAttempts attempts) {
            super(settings);
            this.attempts = attempts;
        }

        @Override
        public <K> ForStSyncKeyedStateBackend<K> createKeyedStateBackend(
                KeyedStateBackendParameters<K> parameters) throws IOException {
            return super.createKeyedStateBackend(attempts.nextAttempt(parameters));
        }
    }
}
