package org.forstrs.flink;

import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.util.CloseableIterator;

import java.util.ArrayList;
import java.util.List;

/**
 * {@code executeAndCollect(n)} that returns only once the job has ended: Flink's own returns as
 * soon as it has cancelled the job, while the job's tasks and checkpoints may still write into
 * the test's temporary directory, which JUnit then fails to delete.
 */
public final class CollectFirst {

    private CollectFirst() {}

    /** The first {@code n} results of the job of {@code stream} (fewer if the job ends first). */
    public static <T> List<T> collect(DataStream<T> stream, int n) throws Exception {
        CloseableIterator<T> results = stream.collectAsync();
        JobClient job = stream.getExecutionEnvironment().executeAsync();
        List<T> collected = new ArrayList<>(n);
        try (results) {
            while (collected.size() < n && results.hasNext()) {
                collected.add(results.next());
            }
        } finally {
            // closing the results cancelled the job if it still ran
            Await.terminal(job);
        }
        return collected;
    }
}
