package org.forstrs.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.state.StateBackendLoader;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;

import org.forstrs.flink.config.FlinkForStKeys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A configuration written for Flink 2.3's built-in ForSt, with every one of its keys set to a
 * valid value other than Flink's default, runs a job on ForSt-RS with exact results.
 */
class FlinkForStConfigITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @Test
    @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
    void everyFlinkForStKeySetStillRunsAnExactWordCount(@TempDir Path dir) throws Exception {
        Configuration config = Configuration.fromMap(FlinkForStKeys.nonDefaultSettings(dir));
        Files.createDirectories(dir.resolve("local"));
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dir.resolve("chk").toUri().toString());
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(200));
        // 'forst' is ours, although Flink's own ForSt is on this class path too
        assertThat(
                        StateBackendLoader.loadStateBackendFromConfig(
                                config, getClass().getClassLoader(), null))
                .isInstanceOf(ForStStateBackend.class);

        long records = 300_000;
        Map<String, Long> expected = new HashMap<>();
        for (long i = 0; i < records; i++) {
            expected.merge(AsyncWordCountITCase.word(i), 1L, Long::sum);
        }
        Map<String, Long> maxCount = new HashMap<>();
        Map<String, Long> emitted = new HashMap<>();
        try (CloseableIterator<Tuple2<String, Long>> results =
                AsyncWordCountITCase.wordCount(AsyncWordCountITCase.environment(config), records)
                        .executeAndCollect("word count, Flink ForSt configuration")) {
            while (results.hasNext()) {
                Tuple2<String, Long> r = results.next();
                maxCount.merge(r.f0, r.f1, Math::max);
                emitted.merge(r.f0, 1L, Long::sum);
            }
        }
        assertThat(maxCount).isEqualTo(expected);
        assertThat(emitted).isEqualTo(expected);
    }
}
