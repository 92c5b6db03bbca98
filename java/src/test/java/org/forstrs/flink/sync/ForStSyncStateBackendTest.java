package org.forstrs.flink.sync;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.StateBackendTestBase;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Flink's generic keyed state backend suite ({@link StateBackendTestBase}, the suite of Flink's
 * heap and RocksDB backends) against the synchronous ForSt-RS keyed backend, with JobManager and
 * file-system checkpoint storage.
 */
@ExtendWith(ParameterizedTestExtension.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a hang guard only, far above any template's cost
class ForStSyncStateBackendTest extends StateBackendTestBase<ForStStateBackend> {

    @TempDir static Path tempDir;

    @Parameter public String checkpointStorage;

    @Parameters(name = "checkpoint storage: {0}")
    public static List<String> parameters() {
        return List.of("jobmanager", "filesystem");
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        Configuration settings = new Configuration();
        settings.set(ForStOptions.LOCAL_DIRECTORIES, tempDir.resolve("local").toString());
        return new ForStStateBackend(settings);
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
}
