package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real jobs on a MiniCluster keeping async State V2 state in the native engine: a keyed word count
 * checked exactly against an independent count, and backend selection by name and by factory.
 */
class AsyncWordCountITCase {

    private static final int PARALLELISM = 2;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    @AfterEach
    void cancelUnfinishedJobs(@InjectClusterClient ClusterClient<?> cluster) throws Exception {
        Await.cancelUnfinished(cluster);
    }

    /** The word of record {@code i}: 15,000 distinct words with skewed frequencies. */
    static String word(long i) {
        long h = (i * 0x9E3779B97F4A7C15L) >>> 40;
        long bucket = (i % 3 == 0) ? h % 100 : h % 15_000;
        return "w" + bucket;
    }

    /** Counts each word; emits (word, count so far) for every record. */
    static final class CountWords
            extends KeyedProcessFunction<String, String, Tuple2<String, Long>> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            count =
                    getRuntimeContext()
                            .getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(
                String word, Context ctx, Collector<Tuple2<String, Long>> out) {
            count.asyncValue()
                    .thenCompose(
                            current -> {
                                long next = current == null ? 1 : current + 1;
                                return count.asyncUpdate(next)
                                        .thenAccept(ignored -> out.collect(Tuple2.of(word, next)));
                            });
        }
    }

    static StreamExecutionEnvironment environment(Configuration config) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(PARALLELISM);
        return env;
    }

    static DataStream<Tuple2<String, Long>> wordCount(
            StreamExecutionEnvironment env, long records) {
        return env.fromSequence(0, records - 1)
                .map(AsyncWordCountITCase::word)
                .returns(Types.STRING)
                .keyBy(w -> w)
                .enableAsyncState()
                .process(new CountWords())
                .returns(Types.TUPLE(Types.STRING, Types.LONG));
    }

    @Test
    @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
    void wordCountMatchesAnIndependentCount(@TempDir Path primary) throws Exception {
        long records = 1_000_000;
        Map<String, Long> expected = new HashMap<>();
        for (long i = 0; i < records; i++) {
            expected.merge(word(i), 1L, Long::sum);
        }
        assertThat(expected).hasSizeGreaterThanOrEqualTo(10_000);

        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", primary.toUri().toString());

        Map<String, Long> maxCount = new HashMap<>();
        Map<String, Long> emitted = new HashMap<>();
        Map<String, Long> sum = new HashMap<>();
        long total = 0;
        try (CloseableIterator<Tuple2<String, Long>> results =
                wordCount(environment(config), records).executeAndCollect("word count")) {
            while (results.hasNext()) {
                Tuple2<String, Long> r = results.next();
                maxCount.merge(r.f0, r.f1, Math::max);
                emitted.merge(r.f0, 1L, Long::sum);
                sum.merge(r.f0, r.f1, Long::sum);
                total++;
            }
        }

        assertThat(total).isEqualTo(records);
        assertThat(maxCount).isEqualTo(expected);
        assertThat(emitted).isEqualTo(expected);
        // Each word saw the counts 1..n exactly once: n emissions, maximum n, sum n(n+1)/2.
        Map<String, Long> expectedSums = new HashMap<>();
        expected.forEach((w, n) -> expectedSums.put(w, n * (n + 1) / 2));
        assertThat(sum).isEqualTo(expectedSums);
        // dispose() removes the working files (tasks may still be shutting down)
        awaitNoFiles(primary);
    }

    /** Operators without async state get the synchronous keyed backend on the same engine. */
    @Test
    void operatorsWithoutAsyncStateRunOnTheSynchronousBackend(@TempDir Path primary)
            throws Exception {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.primary-dir", primary.toString());
        StreamExecutionEnvironment env = environment(config);
        List<Long> sums =
                CollectFirst.collect(
                        env.fromSequence(0, 99)
                                .setParallelism(1) // one ordered stream: sums in order
                                .keyBy(i -> i % 10)
                                .reduce(Long::sum),
                        100);
        // Every running sum of every key, computed without Flink.
        List<Long> expected = new ArrayList<>();
        Map<Long, Long> running = new HashMap<>();
        for (long i = 0; i < 100; i++) {
            expected.add(running.merge(i % 10, i, Long::sum));
        }
        assertThat(sums).containsExactlyInAnyOrderElementsOf(expected);
    }

    @Test
    void selectedByShortName(@TempDir Path primary) throws Exception {
        assertStateFilesAppearUnder(primary, "forst", "state.backend.forst.primary-dir");
    }

    @Test
    void selectedByFactoryClassNameWithWorkingDirAlias(@TempDir Path primary) throws Exception {
        assertStateFilesAppearUnder(
                primary,
                ForStStateBackendFactory.class.getName(),
                "state.backend.forst.working-dir");
    }

    /** Runs an endless word count on the backend named {@code type} until state files appear. */
    private static void assertStateFilesAppearUnder(Path primary, String type, String dirKey)
            throws Exception {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, type);
        config.setString(dirKey, primary.toString());
        // small memtables so that files are written soon
        config.setString("state.backend.forst.memory.fixed-per-slot", "8mb");
        StreamExecutionEnvironment env = environment(config);
        wordCount(env, Long.MAX_VALUE / 4).sinkTo(new DiscardingSink<>());
        JobClient job = env.executeAsync("selection by " + type);
        Path jobDir = primary.resolve(job.getJobID().toString());
        try {
            Await.until("state files under " + jobDir, () -> regularFiles(jobDir) > 0, job);
            // <job>/op_<operator>/subtask_<index>_attempt_<n>/<files>
            assertThat(CheckpointFiles.regularFilesUnder(jobDir))
                    .allSatisfy(
                            f -> {
                                Path relative = jobDir.toAbsolutePath().normalize().relativize(f);
                                assertThat(relative.getName(0).toString()).startsWith("op_");
                                assertThat(relative.getName(1).toString())
                                        .matches("subtask_\\d+_attempt_\\d+");
                            });
        } finally {
            job.cancel().get();
        }
        // cancelled tasks dispose their backends, which delete the working files
        awaitNoFiles(primary);
    }

    /** No deadline: files that are never deleted hang the test until the hang guard fails it. */
    private static void awaitNoFiles(Path dir) throws Exception {
        while (regularFiles(dir) > 0) {
            Thread.sleep(50);
        }
    }

    private static long regularFiles(Path dir) throws IOException {
        return CheckpointFiles.regularFilesUnder(dir).size();
    }
}
