package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.asyncprocessing.AsyncFutureImpl;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.declare.DeclarationManager;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistry;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.state.v2.StateBackendTestV2Base;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;
import org.apache.flink.util.IOUtils;

import org.forstrs.flink.config.ForStOptions;

import org.junit.jupiter.api.TestTemplate;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's generic acceptance suite for async keyed state backends ({@link StateBackendTestV2Base}
 * from flink-runtime's test jar) against ForSt-RS, parameterized like Flink's own {@code
 * ForStStateBackendV2Test}: JobManager and file-system checkpoint storage, restore as a failover
 * (same job) and as a new job, plus where the DB's files live ({@link Primary}).
 * Every template of the base runs; none is skipped.
 *
 * <p>The extra templates check what the base does not: incremental checkpoints and savepoints
 * upload through the storage's own handles (bytes held by the JobManager, or files) and reuse
 * earlier uploads by placeholder; and TTL expiry seen from async callbacks. The base's TTL
 * template asserts inside callbacks whose failures go to an exception handler it never reads, so
 * it cannot fail there; {@link #valueStateTtlExpiresInAsyncCallbacksAndAcrossRestore} checks the
 * same expiry with a controlled clock, asserts that every callback ran and that the handler saw
 * no failure, and that restored values keep their timestamps.
 */
@ExtendWith(ParameterizedTestExtension.class)
class StateBackendV2ConformanceTest extends StateBackendTestV2Base<ForStStateBackend> {

    enum Storage {
        JOB_MANAGER,
        FILE_SYSTEM
    }

    /** Where the DB's files live. */
    enum Primary {
        /** The local directory, served natively. */
        LOCAL_DIR,
        /** A directory reached through Flink's FileSystem (the JNI proxy). */
        FLINK_FS_PROXY,
        /** An in-memory store: not a file system, so files cross storages both ways. */
        MEMORY
    }

    enum Restore {
        FAILOVER,
        NEW_JOB
    }

    @TempDir static java.nio.file.Path tempDir;

    @Parameter public Storage storage;

    @Parameter(1)
    public Primary primary;

    @Parameter(2)
    public Restore restore;

    @Parameters(name = "storage: {0}, primary-dir: {1}, restore: {2}")
    public static List<Object[]> parameters() {
        List<Object[]> cases = new ArrayList<>();
        for (Storage s : Storage.values()) {
            for (Primary p : Primary.values()) {
                for (Restore r : Restore.values()) {
                    // A memory store cannot be deleted by path (no Flink file system serves it),
                    // so a failover into the same attempt's directory (what FAILOVER simulates;
                    // real failovers get a new attempt number) would find the old DB there.
                    if (p != Primary.MEMORY || r != Restore.FAILOVER) {
                        cases.add(new Object[] {s, p, r});
                    }
                }
            }
        }
        return cases;
    }

    /** One checkpoint directory per parameter set (created lazily, kept for the run). */
    private Path checkpointDir;

    /** One memory store name per test instance, so runs never see each other's files. */
    private final String memoryStore = "memory://conformance-" + UUID.randomUUID();

    @Override
    protected CheckpointStorage getCheckpointStorage() throws IOException {
        if (storage == Storage.JOB_MANAGER) {
            return new JobManagerCheckpointStorage();
        }
        if (checkpointDir == null) {
            checkpointDir =
                    new Path(Files.createTempDirectory(tempDir, "checkpoints").toUri().toString());
        }
        // Threshold 0: even the small manifest and meta streams become files.
        return new FileSystemCheckpointStorage(checkpointDir, 0, -1);
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() throws IOException {
        Configuration config = new Configuration();
        config.set(ForStOptions.LOCAL_DIRECTORIES, tempDir.resolve("local").toString());
        switch (primary) {
            case LOCAL_DIR:
                config.set(ForStOptions.PRIMARY_DIR, ForStOptions.PRIMARY_DIR_LOCAL);
                break;
            case FLINK_FS_PROXY:
                config.set(ForStOptions.PRIMARY_DIR, tempDir.resolve("primary").toUri().toString());
                config.set(ForStOptions.FS_FORCE_PROXY, true);
                break;
            case MEMORY:
                config.set(ForStOptions.PRIMARY_DIR, memoryStore);
                break;
        }
        return new ForStStateBackend()
                .configure(config, Thread.currentThread().getContextClassLoader());
    }

    @Override
    protected void restoreJob() throws Exception {
        if (restore == Restore.NEW_JOB) {
            MockEnvironment previous = env;
            jobID = new JobID();
            env = buildMockEnv();
            IOUtils.closeQuietly(previous);
        }
    }

    /**
     * Two checkpoints, the second reusing the first's upload by placeholder (registered like the
     * JobManager does), then a restore from the second: each SST is uploaded as the storage's own
     * kind of handle, reused without a second upload, and restored with every value.
     */
    @TestTemplate
    void incrementalCheckpointReusesUploadsOfEachStorageAndRestores() throws Exception {
        SharedStateRegistry registry = new SharedStateRegistryImpl();
        KeyedStateHandle second;
        AsyncKeyedStateBackend<Integer> backend = createBackend();
        try {
            Session<Integer> session = new Session<>(backend, ignored -> {});
            ValueState<Integer> state = session.valueState("counts");
            session.putAll(state, 0, 50);
            KeyedStateHandle first = checkpoint(backend, 1, registry);
            assertUploadKinds(first);
            backend.notifyCheckpointComplete(1);

            session.putAll(state, 50, 100);
            RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot =
                    backend.snapshot(
                            2,
                            0,
                            createStreamFactory(),
                            CheckpointOptions.forCheckpointWithDefaultLocation());
            second = run(snapshot);
            List<HandleAndLocalPath> shared = ownHandle(second).getSharedState();
            assertThat(shared)
                    .as("the first checkpoint's SST is referenced, not uploaded again")
                    .anyMatch(f -> f.getHandle() instanceof PlaceholderStreamStateHandle);
            assertThat(shared)
                    .as("the new data is uploaded")
                    .anyMatch(f -> !(f.getHandle() instanceof PlaceholderStreamStateHandle));
            second.registerSharedStates(registry, 2);
            assertUploadKinds(second);
        } finally {
            dispose(backend);
        }

        restoreJob();
        AsyncKeyedStateBackend<Integer> restored = restoreBackend(List.of(second));
        try {
            Session<Integer> session = new Session<>(restored, ignored -> {});
            ValueState<Integer> state = session.valueState("counts");
            assertThat(session.getAll(state, 0, 100)).isEqualTo(expected(0, 100));
        } finally {
            dispose(restored);
        }
    }

    /** A native savepoint stands alone: every SST uploaded in its own scope, none by reference. */
    @TestTemplate
    void savepointUploadsEveryFileAndRestores() throws Exception {
        SharedStateRegistry registry = new SharedStateRegistryImpl();
        KeyedStateHandle savepoint;
        AsyncKeyedStateBackend<Integer> backend = createBackend();
        try {
            Session<Integer> session = new Session<>(backend, ignored -> {});
            ValueState<Integer> state = session.valueState("counts");
            session.putAll(state, 0, 40);
            checkpoint(backend, 1, registry);
            backend.notifyCheckpointComplete(1);
            session.putAll(state, 40, 80);
            savepoint =
                    run(
                            backend.snapshot(
                                    2,
                                    0,
                                    createStreamFactory(),
                                    CheckpointOptions.alignedNoTimeout(
                                            SavepointType.savepoint(SavepointFormatType.NATIVE),
                                            CheckpointStorageLocationReference.getDefault())));
            assertThat(ownHandle(savepoint).getSharedState())
                    .hasSizeGreaterThanOrEqualTo(2)
                    .noneMatch(f -> f.getHandle() instanceof PlaceholderStreamStateHandle);
            assertUploadKinds(savepoint);
        } finally {
            dispose(backend);
        }

        restoreJob();
        AsyncKeyedStateBackend<Integer> restored = restoreBackend(List.of(savepoint));
        try {
            Session<Integer> session = new Session<>(restored, ignored -> {});
            ValueState<Integer> state = session.valueState("counts");
            assertThat(session.getAll(state, 0, 80)).isEqualTo(expected(0, 80));
        } finally {
            dispose(restored);
        }
    }

    /**
     * What the base's TTL template means to check, with a clock the test moves: a value expires
     * after its TTL, seen from chained async callbacks (which must all run), and a restored value
     * keeps its timestamp.
     */
    @TestTemplate
    void valueStateTtlExpiresInAsyncCallbacksAndAcrossRestore() throws Exception {
        AtomicLong clock = new AtomicLong(1_000_000);
        ValueStateDescriptor<Long> descriptor = new ValueStateDescriptor<>("ttl", Long.class);
        descriptor.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofSeconds(1)).build());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Object> seen = Collections.synchronizedList(new ArrayList<>());
        KeyedStateHandle snapshot;

        AsyncKeyedStateBackend<Long> backend = createTtlBackend(clock::get, List.of());
        try {
            Session<Long> session = new Session<>(backend, failure::set);
            ValueState<Long> state = session.state(descriptor);
            session.inContext(1L, () -> state.update(1L));
            session.inContext(1L, () -> assertThat(state.value()).isEqualTo(1L));
            clock.addAndGet(1_001);
            session.inContext(1L, () -> assertThat(state.value()).isNull());

            session.inContext(
                    2L,
                    () ->
                            state.asyncUpdate(2L)
                                    .thenAccept(
                                            ignored ->
                                                    state.asyncValue()
                                                            .thenAccept(
                                                                    value -> {
                                                                        seen.add(value);
                                                                        clock.addAndGet(1_001);
                                                                        state.asyncValue()
                                                                                .thenAccept(
                                                                                        seen::add);
                                                                    })));
            session.drain();
            assertThat(failure.get()).isNull();
            assertThat(seen).as("both callbacks ran").containsExactly(2L, null);

            session.inContext(3L, () -> state.update(3L));
            snapshot = checkpoint(backend, 1, new SharedStateRegistryImpl());
        } finally {
            dispose(backend);
        }

        restoreJob();
        AsyncKeyedStateBackend<Long> restored = createTtlBackend(clock::get, List.of(snapshot));
        try {
            Session<Long> session = new Session<>(restored, failure::set);
            ValueState<Long> state = session.state(descriptor);
            clock.addAndGet(500);
            session.inContext(3L, () -> assertThat(state.value()).isEqualTo(3L));
            clock.addAndGet(501);
            session.inContext(3L, () -> assertThat(state.value()).isNull());
            assertThat(failure.get()).isNull();
        } finally {
            dispose(restored);
        }
    }

    // ---------------------------------------------------------------------------------------

    /** SSTs are uploaded as bytes the JobManager keeps, or as files of the checkpoint storage. */
    private void assertUploadKinds(KeyedStateHandle handle) {
        List<HandleAndLocalPath> shared = ownHandle(handle).getSharedState();
        assertThat(shared).isNotEmpty();
        for (HandleAndLocalPath file : shared) {
            StreamStateHandle upload = file.getHandle();
            if (storage == Storage.JOB_MANAGER) {
                assertThat(upload).isInstanceOf(ByteStreamStateHandle.class);
                assertThat(upload.getStateSize()).isPositive();
            } else {
                assertThat(upload).isInstanceOf(FileStateHandle.class);
                String path = ((FileStateHandle) upload).getFilePath().toUri().getPath();
                assertThat(path).startsWith(checkpointDir.toUri().getPath());
            }
        }
    }

    private static IncrementalRemoteKeyedStateHandle ownHandle(KeyedStateHandle handle) {
        assertThat(handle).isInstanceOf(IncrementalRemoteKeyedStateHandle.class);
        return (IncrementalRemoteKeyedStateHandle) handle;
    }

    private KeyedStateHandle checkpoint(
            AsyncKeyedStateBackend<?> backend, long id, SharedStateRegistry registry)
            throws Exception {
        KeyedStateHandle handle =
                run(
                        backend.snapshot(
                                id,
                                0,
                                createStreamFactory(),
                                CheckpointOptions.forCheckpointWithDefaultLocation()));
        handle.registerSharedStates(registry, id);
        return handle;
    }

    private static KeyedStateHandle run(RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot)
            throws Exception {
        if (!snapshot.isDone()) {
            snapshot.run();
        }
        KeyedStateHandle handle = snapshot.get().getJobManagerOwnedSnapshot();
        assertThat(handle).isNotNull();
        return handle;
    }

    private AsyncKeyedStateBackend<Integer> createBackend() throws Exception {
        return createAsyncKeyedBackend(0, 1, IntSerializer.INSTANCE, new KeyGroupRange(0, 127), env);
    }

    private AsyncKeyedStateBackend<Integer> restoreBackend(List<KeyedStateHandle> state)
            throws Exception {
        return restoreAsyncKeyedBackend(
                0, 1, IntSerializer.INSTANCE, new KeyGroupRange(0, 127), state, env);
    }

    private AsyncKeyedStateBackend<Long> createTtlBackend(
            TtlTimeProvider clock, List<KeyedStateHandle> state) throws Exception {
        env.setCheckpointStorageAccess(getCheckpointStorageAccess());
        return getStateBackend()
                .createAsyncKeyedStateBackend(
                        new KeyedStateBackendParametersImpl<>(
                                env,
                                jobID,
                                "ttl_op",
                                LongSerializer.INSTANCE,
                                128,
                                new KeyGroupRange(0, 127),
                                env.getTaskKvStateRegistry(),
                                clock,
                                getMetricGroup(),
                                getCustomInitializationMetrics(),
                                state,
                                new CloseableRegistry(),
                                1.0d));
    }

    private static void dispose(AsyncKeyedStateBackend<?> backend) {
        IOUtils.closeQuietly(backend);
        backend.dispose();
    }

    private static java.util.Map<Integer, Integer> expected(int from, int to) {
        java.util.Map<Integer, Integer> values = new java.util.HashMap<>();
        for (int key = from; key < to; key++) {
            values.put(key, key * 7);
        }
        return values;
    }

    /** Flink's state execution controller over a backend, as the base's templates set it up. */
    private static final class Session<K> {

        private final AsyncKeyedStateBackend<K> backend;
        private final StateExecutionController<K> controller;

        Session(AsyncKeyedStateBackend<K> backend, java.util.function.Consumer<Throwable> failures)
                throws Exception {
            this.backend = backend;
            AsyncFutureImpl.AsyncFrameworkExceptionHandler handler =
                    (message, exception) -> failures.accept(exception);
            // Callbacks run on this (the test's) thread, as on a task's mailbox thread: the
            // controller's buffers are not thread-safe, and a callback issuing a request from
            // the backend's executor thread raced the test thread's drain.
            MailboxExecutor mailbox =
                    new MailboxExecutorImpl(
                            new TaskMailboxImpl(Thread.currentThread()),
                            0,
                            StreamTaskActionExecutor.IMMEDIATE);
            this.controller =
                    new StateExecutionController<>(
                            mailbox,
                            handler,
                            backend.createStateExecutor(),
                            new DeclarationManager(),
                            EpochManager.ParallelMode.SERIAL_BETWEEN_EPOCH,
                            128,
                            1,
                            -1,
                            1,
                            null,
                            null);
            backend.setup(controller);
        }

        ValueState<Integer> valueState(String name) throws Exception {
            return state(new ValueStateDescriptor<>(name, BasicTypeInfo.INT_TYPE_INFO));
        }

        <V> ValueState<V> state(ValueStateDescriptor<V> descriptor) throws Exception {
            return backend.getOrCreateKeyedState(
                    VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
        }

        /** Runs {@code body} as the processing of one record with key {@code key}. */
        void inContext(K key, ThrowingRunnable body) throws Exception {
            RecordContext<K> context = controller.buildContext(key, key);
            context.retain();
            controller.setCurrentContext(context);
            try {
                body.run();
            } finally {
                context.release();
            }
        }

        /** Runs every request still in flight, and their callbacks. */
        void drain() throws Exception {
            controller.drainInflightRecords(0);
        }

        @SuppressWarnings("unchecked")
        void putAll(ValueState<Integer> state, int from, int to) throws Exception {
            for (int key = from; key < to; key++) {
                int value = key * 7;
                inContext((K) Integer.valueOf(key), () -> state.update(value));
            }
            drain();
        }

        @SuppressWarnings("unchecked")
        java.util.Map<Integer, Integer> getAll(ValueState<Integer> state, int from, int to)
                throws Exception {
            java.util.Map<Integer, Integer> values = new java.util.HashMap<>();
            for (int key = from; key < to; key++) {
                int k = key;
                inContext((K) Integer.valueOf(key), () -> values.put(k, state.value()));
            }
            return values;
        }
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }
}
