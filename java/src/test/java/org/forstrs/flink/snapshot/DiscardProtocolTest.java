package org.forstrs.flink.snapshot;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.InstantiationUtil;
import org.apache.flink.util.concurrent.FutureUtils;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's discard protocol against files handed over in place ({@code primary-dir:
 * checkpoint-dir}), deterministically, on the real backend and file-system checkpoint storage:
 * checkpoint 1 completes (its result reaches the JobManager), checkpoint 2 starts before 1 is
 * confirmed and hands the same files over again plus new ones, the task is disposed, and then
 * Flink discards 2's unreported result on the task manager. Every file checkpoint 1 references
 * must survive, and a restore from it is exact; the files only checkpoint 2 handed over go.
 */
class DiscardProtocolTest {

    private static final int KEYS = 200;
    private static final KeyGroupRange ALL = new KeyGroupRange(0, 127);
    private static final ValueStateDescriptor<Long> VALUE =
            new ValueStateDescriptor<>("value", Types.LONG);

    @TempDir Path dir;

    private final List<CheckpointableKeyedStateBackend<Integer>> opened = new ArrayList<>();
    private final List<MockEnvironment> environments = new ArrayList<>();

    @AfterEach
    void dispose() throws Exception {
        for (CheckpointableKeyedStateBackend<Integer> backend : opened) {
            backend.dispose();
        }
        for (MockEnvironment env : environments) {
            env.close();
        }
    }

    @Test
    void aLaterUnreportedResultDiscardedAfterDisposeKeepsTheCompletedCheckpointsFiles()
            throws Exception {
        JobID job = new JobID();
        CheckpointStorageAccess storage =
                new FileSystemCheckpointStorage(dir.resolve("checkpoints").toUri())
                        .createCheckpointStorage(job);
        storage.initializeBaseLocationsForCheckpoint();
        CheckpointableKeyedStateBackend<Integer> backend = open(job, storage, List.of());
        write(backend, 1);
        KeyedStateHandle completed = snapshot(backend, storage, 1);
        // What the JobManager got: a serialized copy, as over RPC.
        KeyedStateHandle reported = InstantiationUtil.clone(completed);

        write(backend, 2);
        KeyedStateHandle unreported = snapshot(backend, storage, 2);
        Set<Path> completedFiles = sharedFiles(completed);
        Set<Path> laterFiles = sharedFiles(unreported);
        assertThat(laterFiles)
                .as("checkpoint 2 hands over checkpoint 1's files again, and its own")
                .containsAll(completedFiles)
                .hasSizeGreaterThan(completedFiles.size());

        backend.dispose();
        opened.remove(backend);
        unreported.discardState();

        assertThat(completedFiles).allSatisfy(file -> assertThat(file).exists());
        Set<Path> left = sstsUnder(dir.resolve("checkpoints").resolve(job.toString()));
        assertThat(left)
                .as("the files only checkpoint 2 handed over went with its discard")
                .isEqualTo(completedFiles);

        CheckpointableKeyedStateBackend<Integer> restored =
                open(new JobID(), storage, List.of(reported));
        for (int key = 0; key < KEYS; key++) {
            restored.setCurrentKey(key);
            assertThat(state(restored).value()).isEqualTo(key * 1L);
        }
    }

    private static void write(CheckpointableKeyedStateBackend<Integer> backend, int round)
            throws Exception {
        for (int key = 0; key < KEYS; key++) {
            backend.setCurrentKey(key);
            state(backend).update((long) key * round);
        }
    }

    private static ValueState<Long> state(CheckpointableKeyedStateBackend<Integer> backend)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, VALUE);
    }

    private static KeyedStateHandle snapshot(
            CheckpointableKeyedStateBackend<Integer> backend,
            CheckpointStorageAccess storage,
            long checkpointId)
            throws Exception {
        return FutureUtils.runIfNotDoneAndGet(
                        backend.snapshot(
                                checkpointId,
                                checkpointId,
                                storage.resolveCheckpointStorageLocation(
                                        checkpointId,
                                        CheckpointStorageLocationReference.getDefault()),
                                CheckpointOptions.forCheckpointWithDefaultLocation()))
                .getJobManagerOwnedSnapshot();
    }

    private static Set<Path> sharedFiles(KeyedStateHandle handle) {
        return ((IncrementalRemoteKeyedStateHandle) handle)
                .getSharedState().stream()
                        .map(file -> (FileStateHandle) file.getHandle())
                        .map(file -> Paths.get(file.getFilePath().toUri()))
                        .collect(Collectors.toSet());
    }

    private static Set<Path> sstsUnder(Path root) throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(f -> f.toString().endsWith(".sst")).collect(Collectors.toSet());
        }
    }

    private CheckpointableKeyedStateBackend<Integer> open(
            JobID job, CheckpointStorageAccess storage, List<KeyedStateHandle> handles)
            throws Exception {
        Configuration settings = new Configuration();
        settings.set(ForStOptions.PRIMARY_DIR, ForStOptions.PRIMARY_DIR_CHECKPOINT);
        settings.set(ForStOptions.SYNC_ENFORCE_LOCAL, false);
        settings.set(ForStOptions.LOCAL_DIRECTORIES, dir.resolve("local").toString());
        MockEnvironment env = MockEnvironment.builder().build();
        environments.add(env);
        env.setCheckpointStorageAccess(storage);
        CheckpointableKeyedStateBackend<Integer> keyed =
                new ForStStateBackend(settings)
                        .createKeyedStateBackend(
                                new KeyedStateBackendParametersImpl<>(
                                        env,
                                        job,
                                        "discard-protocol",
                                        IntSerializer.INSTANCE,
                                        128,
                                        ALL,
                                        env.getTaskKvStateRegistry(),
                                        TtlTimeProvider.DEFAULT,
                                        new UnregisteredMetricsGroup(),
                                        handles,
                                        new CloseableRegistry()));
        opened.add(keyed);
        return keyed;
    }
}
