package org.forstrs.flink.sync;

import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.StateBackendTestBase;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;
import org.apache.flink.util.IOUtils;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions;
import org.forstrs.flink.config.ForStOptions.TimerServiceType;
import org.forstrs.flink.sync.FailoverAttempts.Restore;

import org.junit.jupiter.api.TestTemplate;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's generic keyed state backend suite ({@link StateBackendTestBase}, the suite of Flink's
 * heap and RocksDB backends) against the synchronous ForSt-RS keyed backend, with JobManager and
 * file-system checkpoint storage, restoring as a failover (same job, next attempt) and under a new
 * job ({@link FailoverAttempts}), with timers in the store and on the heap.
 */
@ExtendWith(ParameterizedTestExtension.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a hang guard only, far above any template's cost
class ForStSyncStateBackendTest extends StateBackendTestBase<ForStStateBackend> {

    @TempDir static Path tempDir;

    @Parameter public String checkpointStorage;

    @Parameter(1)
    public Restore restore;

    @Parameter(2)
    public TimerServiceType timerService;

    private final FailoverAttempts attempts = new FailoverAttempts();

    @Parameters(name = "checkpoint storage: {0}, restore: {1}, timers: {2}")
    public static List<Object[]> parameters() {
        List<Object[]> cases = new ArrayList<>();
        for (Object[] storageAndRestore : FailoverAttempts.storagesAndRestores()) {
            for (TimerServiceType timers : TimerServiceType.values()) {
                cases.add(new Object[] {storageAndRestore[0], storageAndRestore[1], timers});
            }
        }
        return cases;
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        Configuration settings = new Configuration();
        settings.set(ForStOptions.LOCAL_DIRECTORIES, tempDir.resolve("local").toString());
        settings.set(ForStOptions.TIMER_SERVICE_FACTORY, timerService);
        return attempts.backend(settings, restore);
    }

    @Override
    protected CheckpointStorage getCheckpointStorage() {
        return "jobmanager".equals(checkpointStorage)
                ? new JobManagerCheckpointStorage()
                : new FileSystemCheckpointStorage(tempDir.resolve("checkpoints").toUri());
    }

    /** The engine keeps serialized bytes; restored state is read with the new serializers. */
    @Override
    protected boolean isSerializerPresenceRequiredOnRestore() {
        return false;
    }

    @Override
    protected boolean supportsAsynchronousSnapshots() {
        return true;
    }

    /**
     * The restore mode reaches the backend: two backends of one test share the job directory as
     * consecutive attempts of the subtask (failover; the second collects the first's directory,
     * as it does when a killed task manager left it), or each has its own job (new job).
     */
    @TestTemplate
    void restoreModeDecidesJobAndAttempt() throws Exception {
        Path root = tempDir.resolve("local/forst-rs");
        Set<Path> before = dbDirectories(root);
        CheckpointableKeyedStateBackend<Integer> first = createKeyedBackend(IntSerializer.INSTANCE);
        Set<Path> firstOpened = dbDirectories(root);
        firstOpened.removeAll(before);
        CheckpointableKeyedStateBackend<Integer> second = createKeyedBackend(IntSerializer.INSTANCE);
        try {
            assertThat(firstOpened).hasSize(1);
            Path firstDb = firstOpened.iterator().next();
            Set<Path> opened = dbDirectories(root);
            opened.removeAll(before);
            if (restore == Restore.FAILOVER) {
                assertThat(opened).hasSize(1).doesNotContain(firstDb);
                Path secondDb = opened.iterator().next();
                assertThat(secondDb.getParent()).isEqualTo(firstDb.getParent());
                assertThat(List.of(firstDb, secondDb))
                        .allMatch(db -> db.getName(2).toString().matches("subtask_0_attempt_\\d+"));
            } else {
                assertThat(opened).hasSize(2).contains(firstDb);
                Set<String> jobs = new HashSet<>();
                for (Path db : opened) {
                    jobs.add(db.getName(0).toString());
                    assertThat(db.getName(2).toString()).isEqualTo("subtask_0_attempt_0");
                }
                assertThat(jobs).hasSize(2);
            }
        } finally {
            IOUtils.closeQuietly(first::dispose);
            IOUtils.closeQuietly(second::dispose);
        }
    }

    /** {@code <job>/op_<operator>/<subtask>} of every DB directory under {@code root}. */
    private static Set<Path> dbDirectories(Path root) throws IOException {
        if (!Files.exists(root)) {
            return new HashSet<>();
        }
        try (Stream<Path> paths = Files.walk(root, 3)) {
            return paths.filter(p -> root.relativize(p).getNameCount() == 3)
                    .map(root::relativize)
                    .collect(Collectors.toCollection(HashSet::new));
        }
    }
}
