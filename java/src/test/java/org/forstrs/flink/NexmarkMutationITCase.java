package org.forstrs.flink;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.forstrs.jni.Failpoints;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The check of {@link NexmarkITCase} notices lost state: with the engine told to lose puts (the
 * {@code drop-put} failpoint, 100 of the first puts of the run), q17's per-auction statistics on
 * ForSt-RS no longer equal the heap backend's. Each lost put is an accumulator update that the
 * auction's next bid does not see.
 */
@Tag(Failpoints.TAG)
class NexmarkMutationITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @AfterEach
    void disarm() {
        Failpoints.arm("drop-put", 0);
    }

    @Test
    void aLostUpdateMakesTheResultDiffer(@TempDir Path dir) throws Exception {
        Map<List<Object>, Integer> heap = NexmarkITCase.run("q17", "hashmap", dir);
        Failpoints.arm("drop-put", 100);
        Map<List<Object>, Integer> ours = NexmarkITCase.run("q17", "forst", dir);
        assertThat(NexmarkITCase.difference(heap, ours))
                .as("q17 rows of the heap backend that ForSt-RS lost")
                .isNotEmpty();
    }
}
