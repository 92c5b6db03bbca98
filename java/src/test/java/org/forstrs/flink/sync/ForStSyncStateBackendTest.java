package org.forstrs.flink.sync;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.StateBackendTestBase;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.forstrs.flink.ForStOptions;
import org.forstrs.flink.ForStStateBackend;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Flink's generic keyed state backend suite ({@link StateBackendTestBase}, the suite of Flink's
 * heap and RocksDB backends) against the synchronous ForSt-RS keyed backend, with file-system
 * checkpoint storage.
 *
 * <p>JobManager (in-memory) checkpoint storage is not a parameter yet: the native checkpoint
 * format needs a file system to hold its SST files.
 */
@ExtendWith({ParameterizedTestExtension.class, ForStSyncStateBackendTest.NotYet.class})
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a hang guard only, far above any template's cost
class ForStSyncStateBackendTest extends StateBackendTestBase<ForStStateBackend> {

    /**
     * Templates skipped for now, by name (the base class's template methods are package-private,
     * so they cannot be overridden from here).
     */
    static final class NotYet implements ExecutionCondition {
        /**
         * Snapshots into a {@code BlockerCheckpointStreamFactory}, which is no file-system stream
         * factory, and fails with "needs a file system checkpoint storage" only: the limitation
         * of JobManager checkpoint storage, lifted by the work on non-file checkpoint storage in
         * ForStAsyncSnapshot (then remove it from here).
         */
        private static final Map<String, String> SKIPPED =
                Map.of(
                        "testNonConcurrentSnapshotTransformerAccess",
                        "needs checkpoint streams that are not file-based (JobManager storage)");

        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            String reason =
                    context.getTestMethod().map(m -> SKIPPED.get(m.getName())).orElse(null);
            return reason == null
                    ? ConditionEvaluationResult.enabled("runs")
                    : ConditionEvaluationResult.disabled(reason);
        }
    }

    @TempDir static Path tempDir;

    @Parameter public String checkpointStorage;

    @Parameters(name = "checkpoint storage: {0}")
    public static List<String> parameters() {
        return List.of("filesystem");
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        Configuration settings = new Configuration();
        settings.set(ForStOptions.LOCAL_DIRECTORIES, tempDir.resolve("local").toString());
        return new ForStStateBackend(settings);
    }

    @Override
    protected CheckpointStorage getCheckpointStorage() {
        return new FileSystemCheckpointStorage(tempDir.resolve("checkpoints").toUri());
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
     * Snapshots copy the DB's files into the checkpoint's shared directory natively (they need a
     * file-system stream factory to know where it is) and write only the metadata through the
     * factory's streams, so the three templates that block the factory's streams
     * (testAsyncSnapshot, testAsyncSnapshotCancellation, testParallelAsyncSnapshots) do not
     * apply. Flink's ChangelogDelegateEmbeddedRocksDBStateBackendTest returns false here for the
     * same reason (its snapshots do not go through the given factory); Flink's plain
     * EmbeddedRocksDBStateBackendTest runs them. They can run once snapshots accept checkpoint
     * streams that are not file-based (the JobManager checkpoint storage work).
     */
    @Override
    protected boolean snapshotUsesStreamFactory() {
        return false;
    }
}
