package org.forstrs.flink.sync;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;

import org.forstrs.flink.ForStStateBackend;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where the synchronous keyed backend keeps its DB: under the local directory by default (as
 * Flink's ForSt, {@code state.backend.forst.sync.enforce-local: true}), under the primary
 * directory when that key is false; the async backend uses the primary directory either way. The
 * primary directory {@code checkpoint-dir} is the job's shared checkpoint directory, or the
 * local directory when checkpoints are not on a file system. An attempt collects the directories
 * earlier attempts of its subtask left.
 */
class SyncPlacementTest {

    @TempDir Path dir;

    private Path dbDirectory(boolean enforceLocal, boolean async) throws Exception {
        return dbDirectory(dir.resolve("primary").toString(), true, enforceLocal, async);
    }

    @SuppressWarnings("try") // MockEnvironment#close may throw InterruptedException
    private Path dbDirectory(
            String primary, boolean fsCheckpoints, boolean enforceLocal, boolean async)
            throws Exception {
        Configuration settings = new Configuration();
        settings.setString("state.backend.forst.local-dir", dir.resolve("local").toString());
        settings.setString("state.backend.forst.primary-dir", primary);
        settings.setString(
                "state.backend.forst.sync.enforce-local", Boolean.toString(enforceLocal));
        ForStStateBackend backend = new ForStStateBackend(settings);
        JobID job = new JobID();
        try (MockEnvironment env = MockEnvironment.builder().build()) {
            env.setCheckpointStorageAccess(
                    fsCheckpoints
                            ? new FileSystemCheckpointStorage(dir.resolve("checkpoints").toUri())
                                    .createCheckpointStorage(job)
                            : new JobManagerCheckpointStorage().createCheckpointStorage(job));
            KeyedStateBackendParametersImpl<Integer> parameters =
                    new KeyedStateBackendParametersImpl<>(
                            env,
                            job,
                            "placement",
                            IntSerializer.INSTANCE,
                            16,
                            new KeyGroupRange(0, 15),
                            env.getTaskKvStateRegistry(),
                            TtlTimeProvider.DEFAULT,
                            new UnregisteredMetricsGroup(),
                            List.of(),
                            new CloseableRegistry());
            if (async) {
                var keyed = backend.createAsyncKeyedStateBackend(parameters);
                try {
                    return Paths.get(URI.create(keyed.getDbUri()));
                } finally {
                    keyed.dispose();
                }
            }
            ForStSyncKeyedStateBackend<Integer> keyed = backend.createKeyedStateBackend(parameters);
            try {
                Path db = Paths.get(URI.create(keyed.getDbUri()));
                assertThat(db).isDirectory();
                return db;
            } finally {
                keyed.dispose();
            }
        }
    }

    @Test
    void synchronousStateIsLocalByDefault() throws Exception {
        assertThat(dbDirectory(true, false).startsWith(dir.resolve("local"))).isTrue();
    }

    @Test
    void synchronousStateFollowsThePrimaryDirWhenNotEnforcedLocal() throws Exception {
        assertThat(dbDirectory(false, false).startsWith(dir.resolve("primary"))).isTrue();
    }

    @Test
    void asyncStateIsUnderThePrimaryDirEitherWay() throws Exception {
        assertThat(dbDirectory(true, true).startsWith(dir.resolve("primary"))).isTrue();
    }

    @Test
    void checkpointDirIsTheJobsSharedCheckpointDirectory() throws Exception {
        for (boolean async : new boolean[] {true, false}) {
            Path db = dbDirectory("checkpoint-dir", true, false, async);
            Path checkpoints = dir.resolve("checkpoints");
            assertThat(db.startsWith(checkpoints)).as(db.toString()).isTrue();
            // <checkpoints>/<job>/shared/op_<operator>/subtask_<i>_attempt_<n>, as Flink's ForSt
            Path inJob = checkpoints.relativize(db).subpath(1, 4);
            assertThat(inJob.toString()).isEqualTo("shared/op_placement/subtask_0_attempt_0");
        }
    }

    /**
     * Attempt 1 of a subtask collects the directory attempt 0 left when its task manager was
     * killed (never disposed, its DB's claim still held); disposing attempt 1 removes its own
     * and the operator's directory, never the checkpoint storage's shared directory.
     */
    @Test
    @SuppressWarnings("try") // MockEnvironment#close may throw InterruptedException
    void theNextAttemptCollectsTheDirectoryOfADeadAttempt() throws Exception {
        Configuration settings = new Configuration();
        settings.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        ForStStateBackend backend = new ForStStateBackend(settings);
        JobID job = new JobID();
        try (MockEnvironment env = MockEnvironment.builder().build()) {
            env.setCheckpointStorageAccess(
                    new FileSystemCheckpointStorage(dir.resolve("checkpoints").toUri())
                            .createCheckpointStorage(job));
            var dead = backend.createAsyncKeyedStateBackend(parameters(env, job));
            Path deadDir = Paths.get(URI.create(dead.getDbUri()));
            try {
                assertThat(deadDir.resolve("LOCK")).exists();
                var next =
                        backend.createAsyncKeyedStateBackend(
                                parameters(FailoverAttempts.withAttempt(env, job, 1), job));
                Path nextDir = Paths.get(URI.create(next.getDbUri()));
                assertThat(deadDir).doesNotExist();
                assertThat(nextDir.getParent()).isEqualTo(deadDir.getParent());
                next.dispose();
                assertThat(nextDir.getParent()).doesNotExist();
                assertThat(nextDir.getParent().getParent()).isDirectory();
            } finally {
                dead.dispose();
            }
        }
    }

    private static KeyedStateBackendParametersImpl<Integer> parameters(
            Environment env, JobID job) {
        return new KeyedStateBackendParametersImpl<>(
                env,
                job,
                "placement",
                IntSerializer.INSTANCE,
                16,
                new KeyGroupRange(0, 15),
                env.getTaskKvStateRegistry(),
                TtlTimeProvider.DEFAULT,
                new UnregisteredMetricsGroup(),
                List.of(),
                new CloseableRegistry());
    }

    @Test
    void checkpointDirIsLocalWhenCheckpointsAreNotOnAFileSystem() throws Exception {
        assertThat(dbDirectory("checkpoint-dir", false, false, true).startsWith(dir.resolve("local")))
                .isTrue();
    }
}
