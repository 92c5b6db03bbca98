package org.forstrs.flink.sync;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.StateBackendMigrationTestBase;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions;
import org.forstrs.flink.sync.FailoverAttempts.Restore;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Flink's serializer upgrade suite ({@link StateBackendMigrationTestBase}) against the
 * synchronous ForSt-RS keyed backend: state migration (values rewritten with the new
 * serializer), refused incompatible serializers ({@code StateMigrationException}), TTL switched
 * on and off, with JobManager and file-system checkpoint storage, restoring as a failover (same
 * job, next attempt) and under a new job ({@link FailoverAttempts}).
 */
@ExtendWith(ParameterizedTestExtension.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a hang guard only, far above any template's cost
class ForStSyncStateBackendMigrationTest extends StateBackendMigrationTestBase<ForStStateBackend> {

    @Parameter public String checkpointStorage;

    @Parameter(1)
    public Restore restore;

    private final FailoverAttempts attempts = new FailoverAttempts();

    @Parameters(name = "checkpoint storage: {0}, restore: {1}")
    public static List<Object[]> parameters() {
        return FailoverAttempts.storagesAndRestores();
    }

    @Override
    protected ForStStateBackend getStateBackend() {
        Configuration settings = new Configuration();
        settings.set(ForStOptions.LOCAL_DIRECTORIES, tempFolder.resolve("local").toString());
        return attempts.backend(settings, restore);
    }

    @Override
    protected CheckpointStorage getCheckpointStorage() {
        return "jobmanager".equals(checkpointStorage)
                ? new JobManagerCheckpointStorage()
                : new FileSystemCheckpointStorage(tempFolder.resolve("checkpoints").toUri());
    }
}
