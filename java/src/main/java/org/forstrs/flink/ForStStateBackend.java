package org.forstrs.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.state.AbstractManagedMemoryStateBackend;
import org.apache.flink.runtime.state.BackendBuildingException;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.DefaultOperatorStateBackendBuilder;
import org.apache.flink.runtime.state.OperatorStateBackend;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageAccess;
import org.apache.flink.util.function.SupplierWithException;

import org.forstrs.flink.async.ForStKeyedStateBackend;
import org.forstrs.flink.config.ForStBackendConfig;
import org.forstrs.flink.config.ForStOptions;
import org.forstrs.flink.config.WorkingDirPlacement;
import org.forstrs.flink.metrics.NativeMetricMonitor;
import org.forstrs.flink.state.DbLease;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.sync.ForStSyncKeyedStateBackend;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Flink's disaggregated state backend with the Rust engine: keyed state lives in one native DB
 * per keyed backend under {@code <primary-dir>/<job>/<operator>/<subtask attempt>}; every batch
 * of the async execution controller is one native call.
 *
 * <p>Operators with async state ({@code KeyedStream#enableAsyncState()}, or SQL's {@code
 * table.exec.async-state.enabled}) get the async backend; all others the synchronous one ({@link
 * ForStSyncKeyedStateBackend}, one native call per state access), on the same engine and layout.
 * Operator state stays on Flink's heap ({@code DefaultOperatorStateBackend}).
 */
public class ForStStateBackend extends AbstractManagedMemoryStateBackend
        implements ConfigurableStateBackend {

    private static final long serialVersionUID = 1L;

    private static final Logger LOG = LoggerFactory.getLogger(ForStStateBackend.class);

    /** The name the backend reports to Flink (also {@code state.backend.type: forst}). */
    public static final String NAME = "forst";

    /** Budget bounds per keyed backend; outside them the engine's defaults are poor. */
    private static final long MIN_MEMTABLE_BYTES = 1L << 20;

    private static final long MIN_BLOCK_CACHE_BYTES = 1L << 20;

    /**
     * Memtables kept by the engine at once unless configured: one active plus one frozen waiting
     * for flush, as Flink's {@code writebuffer.count} (2). The budget's write buffers split in
     * fewer, larger memtables: fewer flushes, files and compactions, which a remote store charges
     * per request and per file.
     */
    static final int MEMTABLES = 2;

    /**
     * SST size when the DB lives on a remote file system (not file://) and none is configured:
     * Flink's {@code compaction.level.target-file-size-base}, twice the engine's default, so
     * compaction writes half as many files there. (L1's target is Flink's 256 MB everywhere.)
     */
    static final long REMOTE_TARGET_FILE_BYTES = 64L << 20;

    /**
     * Compaction threads when the DB lives on a remote file system and {@code thread.num} is not
     * configured: a compaction there waits for every request of its reads and writes (1.5 ms on
     * HDFS), so a second one runs during those waits instead of writers stalling behind them (at
     * 64M keys on the latency store of {@code benches/scale.rs}, load +13%). Locally Flink's
     * default of one.
     */
    static final int REMOTE_COMPACTIONS = 2;

    private static final String MEMTABLE_BYTES = "memtable-bytes";
    private static final String MAX_FROZEN_MEMTABLES = "max-frozen-memtables";
    private static final String BLOCK_CACHE_BYTES = "block-cache-bytes";
    private static final String MEMTABLES_CHARGED_TO_CACHE = "memtables-charged-to-cache";
    private static final String TARGET_FILE_BYTES = "target-file-bytes";
    private static final String MAX_BACKGROUND_COMPACTIONS = "max-background-compactions";

    /** The {@code state.backend.forst.*} keys set explicitly on this instance. */
    private final Map<String, String> explicitSettings;

    private final ForStBackendConfig config;

    /** A backend with defaults; the cluster configuration applies through {@link #configure}. */
    public ForStStateBackend() {
        this(new Configuration());
    }

    /**
     * A backend with settings of its own ({@code state.backend.forst.*} keys); they win over the
     * cluster configuration in {@link #configure}.
     */
    public ForStStateBackend(ReadableConfig settings) {
        this.explicitSettings = Map.copyOf(settings.toMap());
        this.config = ForStBackendConfig.fromConfig(settings);
    }

    private ForStStateBackend(Map<String, String> explicitSettings, ForStBackendConfig config) {
        this.explicitSettings = explicitSettings;
        this.config = config;
    }

    @Override
    public ForStStateBackend configure(ReadableConfig clusterConfig, ClassLoader classLoader)
            throws IllegalConfigurationException {
        Configuration merged = Configuration.fromMap(clusterConfig.toMap());
        merged.addAll(Configuration.fromMap(explicitSettings));
        ForStStateBackend configured =
                new ForStStateBackend(explicitSettings, ForStBackendConfig.fromConfig(merged));
        configured.latencyTrackingConfigBuilder = latencyTrackingConfigBuilder.configure(merged);
        configured.sizeTrackingConfigBuilder = sizeTrackingConfigBuilder.configure(merged);
        return configured;
    }

    /** The validated settings in effect. */
    public ForStBackendConfig getConfig() {
        return config;
    }

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public boolean supportsAsyncKeyedStateBackend() {
        return true;
    }

    /**
     * Native savepoints are full copies of the DB files (no sharing); canonical ones are Flink's
     * unified key-group format, written from a full scan of the synchronous backend (Flink 2.3
     * itself refuses canonical savepoints of operators with async state).
     */
    @Override
    public boolean supportsSavepointFormat(SavepointFormatType formatType) {
        return formatType == SavepointFormatType.NATIVE
                || formatType == SavepointFormatType.CANONICAL;
    }

    /**
     * In NO_CLAIM mode Flink's first checkpoint after restore does not share files (FORWARD), so
     * the backend copies everything once and never references the restored checkpoint's files.
     */
    @Override
    public boolean supportsNoClaimRestoreMode() {
        return true;
    }

    /**
     * The synchronous (State V1) keyed backend for operators without async state: one native DB,
     * one native call per state access, under the local directory unless {@code
     * state.backend.forst.sync.enforce-local} is false.
     */
    @Override
    public <K> ForStSyncKeyedStateBackend<K> createKeyedStateBackend(
            KeyedStateBackendParameters<K> parameters) throws IOException {
        try {
            return openSyncKeyedStateBackend(parameters);
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new BackendBuildingException(
                    "Could not build the ForSt-RS keyed backend of "
                            + parameters.getOperatorIdentifier(),
                    e);
        }
    }

    private <K> ForStSyncKeyedStateBackend<K> openSyncKeyedStateBackend(
            KeyedStateBackendParameters<K> parameters) throws Exception {
        Environment env = parameters.getEnv();
        String dbUri =
                dbUri(
                        env,
                        parameters.getJobID(),
                        parameters.getOperatorIdentifier(),
                        config.isSyncEnforceLocal() ? null : primaryBase(env));
        WorkingDirPlacement.check(dbUri, checkpointStorage(env));
        long[] memory = memoryBudget(env, parameters.getManagedMemoryFraction());
        LOG.info(
                "Opening ForSt-RS synchronous keyed state of {} at {} (memtable {} bytes, block"
                        + " cache {} bytes)",
                parameters.getOperatorIdentifier(),
                dbUri,
                memory[0],
                memory[1]);
        String[] options = nativeOptions(memory, cacheBaseDir(env), dbUri, logLabel(parameters));
        ForStSyncKeyedStateBackend<K> backend =
                underLease(
                        env,
                        dbUri,
                        () ->
                                ForStSyncKeyedStateBackend.open(
                                        parameters,
                                        dbUri,
                                        options,
                                        latencyTrackingConfigBuilder
                                                .setMetricGroup(parameters.getMetricGroup())
                                                .build(),
                                        sizeTrackingConfigBuilder
                                                .setMetricGroup(parameters.getMetricGroup())
                                                .build(),
                                        config.getTimerService(),
                                        config.getTimerCacheSize()),
                        ForStSyncKeyedStateBackend::getNativeDb);
        backend.getNativeDb().handedOverFiles().setScope(config.getHandOverScope());
        NativeMetricMonitor.register(
                backend.getNativeDb(),
                backend::getLastCheckpointStats,
                parameters.getMetricGroup(),
                config.getMetricKeys(),
                config.getDiskCache().isEnabled());
        return backend;
    }

    @Override
    public <K> ForStKeyedStateBackend<K> createAsyncKeyedStateBackend(
            KeyedStateBackendParameters<K> parameters) throws Exception {
        Environment env = parameters.getEnv();
        String dbUri = dbUri(env, parameters.getJobID(), parameters.getOperatorIdentifier());
        WorkingDirPlacement.check(dbUri, checkpointStorage(env));
        long[] memory = memoryBudget(env, parameters.getManagedMemoryFraction());
        LOG.info(
                "Opening ForSt-RS keyed state of {} at {} (memtable {} bytes, block cache {}"
                        + " bytes)",
                parameters.getOperatorIdentifier(),
                dbUri,
                memory[0],
                memory[1]);
        String[] options = nativeOptions(memory, cacheBaseDir(env), dbUri, logLabel(parameters));
        ForStKeyedStateBackend<K> backend =
                underLease(
                        env,
                        dbUri,
                        () ->
                                ForStKeyedStateBackend.open(
                                        parameters,
                                        env.getExecutionConfig(),
                                        dbUri,
                                        options,
                                        config.isInlineCoordinator()
                                                ? 0
                                                : config.getBatchThreads(),
                                        config.isWriteBehind(),
                                        config.isRunAtIssue()),
                        ForStKeyedStateBackend::getNativeDb);
        backend.getNativeDb().handedOverFiles().setScope(config.getHandOverScope());
        NativeMetricMonitor.register(
                backend.getNativeDb(),
                backend::getLastCheckpointStats,
                parameters.getMetricGroup(),
                config.getMetricKeys(),
                config.getDiskCache().isEnabled());
        return backend;
    }

    @Override
    public OperatorStateBackend createOperatorStateBackend(
            OperatorStateBackendParameters parameters) throws Exception {
        Environment env = parameters.getEnv();
        return new DefaultOperatorStateBackendBuilder(
                        env.getUserCodeClassLoader().asClassLoader(),
                        env.getExecutionConfig(),
                        true,
                        parameters.getStateHandles(),
                        parameters.getCancelStreamRegistry())
                .build();
    }

    /**
     * Opens a backend with its DB under a {@link DbLease} taken first (gc must see the DB before
     * it writes anything), held by the DB until it closes; released if the open fails.
     */
    private static <B> B underLease(
            Environment env,
            String dbUri,
            SupplierWithException<B, Exception> open,
            Function<B, NativeDb> db)
            throws Exception {
        DbLease lease = DbLease.take(checkpointStorage(env), dbUri);
        B backend;
        try {
            backend = open.get();
        } catch (Exception e) {
            if (lease != null) {
                lease.close();
            }
            throw e;
        }
        db.apply(backend).holdLease(lease);
        return backend;
    }

    /** The task's checkpoint storage, or null where the environment offers none (tests). */
    private static CheckpointStorageAccess checkpointStorage(Environment env) {
        try {
            return env.getCheckpointStorageAccess();
        } catch (UnsupportedOperationException e) {
            return null;
        }
    }

    /**
     * {@code <primary-dir>/<job>/op_<operator>/subtask_<i>_attempt_<n>} as a URI string; with
     * {@code primary-dir: checkpoint-dir}, {@code <checkpoints>/<job>/shared/op_<operator>/
     * subtask_<i>_attempt_<n>}.
     */
    String dbUri(Environment env, JobID jobId, String operatorIdentifier) {
        return dbUri(env, jobId, operatorIdentifier, primaryBase(env));
    }

    /**
     * The primary directory as a URI string, or null for the local directory. {@code
     * checkpoint-dir} is the job's shared checkpoint directory, as in Flink's ForSt: the DB's
     * working files are the checkpoint's files (handed over, see {@link
     * org.forstrs.flink.snapshot.FileHandOver}), and the JobManager deletes only files that
     * checkpoints handed to it and no longer need. It is the local directory when checkpoints are
     * not on a file system.
     */
    private String primaryBase(Environment env) {
        if (!config.isPrimaryOnCheckpointDir()) {
            return config.getPrimaryDir();
        }
        CheckpointStorageAccess storage = checkpointStorage(env);
        if (!(storage instanceof FsCheckpointStorageAccess)) {
            LOG.info(
                    "'{}' is '{}' but checkpoints are not on a file system; using the local"
                            + " directory",
                    ForStOptions.PRIMARY_DIR.key(),
                    ForStOptions.PRIMARY_DIR_CHECKPOINT);
            return null;
        }
        return ForStBackendConfig.normalizeDir(
                ForStOptions.PRIMARY_DIR.key(),
                ((FsCheckpointStorageAccess) storage).getSharedStateDirectory().toString());
    }

    /**
     * As {@link #dbUri(Environment, JobID, String)} under {@code base} (null: local dir). The
     * shared checkpoint directory already is the job's, so it holds operator directories
     * directly. The subtask index is in the name although Flink's operator identifier holds it
     * too (as {@code (i/p)}): attempt directories are collected by subtask ({@link
     * org.forstrs.flink.state.DbDirectory}) whatever the identifier looks like.
     */
    private String dbUri(Environment env, JobID jobId, String operatorIdentifier, String base) {
        String jobBase;
        if (base == null) {
            jobBase = "file://" + chooseLocalDir(env).getAbsolutePath() + "/forst-rs/" + jobId;
        } else if (config.isPrimaryOnCheckpointDir()) {
            jobBase = base;
        } else {
            jobBase = base + "/" + jobId;
        }
        String operator = operatorIdentifier.replaceAll("[^a-zA-Z0-9\\-]", "_");
        return jobBase
                + "/op_"
                + operator
                + "/subtask_"
                + env.getTaskInfo().getIndexOfThisSubtask()
                + "_attempt_"
                + env.getTaskInfo().getAttemptNumber();
    }

    /** The disk cache's base without cache.dir: the first local directory, same after restarts. */
    private File cacheBaseDir(Environment env) {
        List<String> dirs = config.getLocalDirs();
        return dirs == null
                ? env.getTaskManagerInfo().getTmpWorkingDirectory()
                : new File(dirs.get(0));
    }

    private File chooseLocalDir(Environment env) {
        List<String> dirs = config.getLocalDirs();
        if (dirs == null) {
            return env.getTaskManagerInfo().getTmpWorkingDirectory();
        }
        // By subtask, not at random: the next attempt of the subtask opens in the same directory
        // and collects what this one leaves (DbDirectory.prepare).
        int subtask = env.getTaskInfo().getIndexOfThisSubtask();
        return new File(dirs.get(subtask % dirs.size()));
    }

    /**
     * {memtable bytes, block cache bytes} for one keyed backend from its memory budget, or {0, 0}
     * when no budget is configured (the engine options apply as configured).
     */
    long[] memoryBudget(Environment env, double managedMemoryFraction) {
        long budget;
        MemorySize perSlot = config.getFixedPerSlot();
        MemorySize perTm = config.getFixedPerTm();
        if (perSlot != null) {
            budget = (long) (perSlot.getBytes() * fractionOrOne(managedMemoryFraction));
        } else if (perTm != null) {
            int slots =
                    Math.max(
                            1,
                            env.getTaskManagerInfo()
                                    .getConfiguration()
                                    .get(TaskManagerOptions.NUM_TASK_SLOTS));
            budget = (long) (perTm.getBytes() / slots * fractionOrOne(managedMemoryFraction));
        } else if (config.isManagedMemory() && managedMemoryFraction > 0) {
            budget = env.getMemoryManager().computeMemorySize(managedMemoryFraction);
        } else {
            return new long[] {0, 0};
        }
        return split(budget);
    }

    /**
     * {memtable bytes, block cache bytes} of a budget: the write buffers' share caps the
     * memtables and the rest is the cache, unless the engine option {@code
     * memtables-charged-to-cache} is set (Flink's write buffer manager costed to the cache): then
     * the cache holds the whole budget and reads get what memtables do not use at the moment. Off
     * by default: a cache that large churns, and glibc's per-thread arenas keep the freed blocks
     * resident (peak RSS past the budget by 120 MiB and more at 4M keys in {@code
     * benches/scale.rs}, within it without; see the scale benchmark in docs/benchmarks.md).
     */
    long[] split(long budget) {
        long writeBuffers = (long) (budget * config.getWriteBufferRatio());
        long memtable = Math.max(MIN_MEMTABLE_BYTES, writeBuffers / memtables());
        boolean charged = "true".equals(config.getEngineOptions().get(MEMTABLES_CHARGED_TO_CACHE));
        long cache = Math.max(MIN_BLOCK_CACHE_BYTES, charged ? budget : budget - writeBuffers);
        return new long[] {memtable, cache};
    }

    /** Memtables in memory at once: the configured frozen ones plus the active one. */
    private int memtables() {
        String frozen = config.getEngineOptions().get(MAX_FROZEN_MEMTABLES);
        return frozen == null ? MEMTABLES : Integer.parseInt(frozen) + 1;
    }

    private static double fractionOrOne(double fraction) {
        return fraction > 0 && fraction <= 1 ? fraction : 1.0;
    }

    /**
     * The options of {@code ForStNative.open}: the configured engine options, under a memory
     * budget its block cache size and its memtable share as the memtable cap (a configured
     * memtable size stays if smaller, as RocksDB's write buffer size under a write buffer
     * manager), larger SSTs for a DB at a remote {@code dbUri} unless configured, and the storage
     * keys (the disk cache's under {@code cacheBaseDir} unless cache.dir is set).
     */
    String[] nativeOptions(long[] memory, File cacheBaseDir, String dbUri) {
        return nativeOptions(memory, cacheBaseDir, dbUri, List.of());
    }

    /**
     * {@link #nativeOptions(long[], File, String)} followed by {@code logLabel}: the keys that name
     * the DB in the engine's log lines ({@link #logLabel}).
     */
    String[] nativeOptions(long[] memory, File cacheBaseDir, String dbUri, List<String> logLabel) {
        Map<String, String> engine = new LinkedHashMap<>(config.getEngineOptions());
        if (isRemote(dbUri)) {
            engine.putIfAbsent(TARGET_FILE_BYTES, Long.toString(REMOTE_TARGET_FILE_BYTES));
            engine.putIfAbsent(MAX_BACKGROUND_COMPACTIONS, Integer.toString(REMOTE_COMPACTIONS));
        }
        if (memory[0] != 0) {
            String configured = engine.get(MEMTABLE_BYTES);
            long memtable =
                    configured == null ? memory[0] : Math.min(memory[0], Long.parseLong(configured));
            engine.put(MEMTABLE_BYTES, Long.toString(memtable));
            engine.put(MAX_FROZEN_MEMTABLES, Integer.toString(memtables() - 1));
            engine.put(BLOCK_CACHE_BYTES, Long.toString(memory[1]));
        }
        List<String> options = new ArrayList<>();
        engine.forEach(
                (name, value) -> {
                    options.add(name);
                    options.add(value);
                });
        if (config.isForceProxy()) {
            options.addAll(List.of("fs.force-proxy", "true"));
        }
        options.addAll(config.getS3().nativeOptions());
        options.addAll(config.getDiskCache().nativeOptions(cacheBaseDir));
        options.addAll(logLabel);
        return options.toArray(new String[0]);
    }

    /**
     * The {@code log.*} keys of {@code ForStNative.open} (internal, not engine options): the
     * engine prefixes the lines it logs for this DB with {@code [job=<job id>, op=<operator
     * identifier>, subtask=<i>, attempt=<n>]}, the parts of the DB's directory ({@link
     * org.forstrs.jni.NativeLog}).
     */
    static List<String> logLabel(KeyedStateBackendParameters<?> parameters) {
        Environment env = parameters.getEnv();
        return List.of(
                "log.job",
                parameters.getJobID().toString(),
                "log.operator",
                parameters.getOperatorIdentifier(),
                "log.subtask",
                Integer.toString(env.getTaskInfo().getIndexOfThisSubtask()),
                "log.attempt",
                Integer.toString(env.getTaskInfo().getAttemptNumber()));
    }

    /** {@link #nativeOptions(long[], File, String)} for a DB on the local file system. */
    String[] nativeOptions(long[] memory, File cacheBaseDir) {
        return nativeOptions(memory, cacheBaseDir, null);
    }

    /** Whether {@code dbUri} names a file system other than the local one (null: local). */
    static boolean isRemote(String dbUri) {
        if (dbUri == null) {
            return false;
        }
        String scheme = new Path(dbUri).toUri().getScheme();
        return scheme != null && !scheme.equalsIgnoreCase("file");
    }

    @Override
    public String toString() {
        return "ForStStateBackend (ForSt-RS) " + config;
    }
}
