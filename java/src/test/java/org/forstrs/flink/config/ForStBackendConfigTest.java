package org.forstrs.flink.config;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.StateBackendLoader;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.ForStStateBackendFactory;
import org.forstrs.flink.config.ForStOptions.TimerServiceType;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Options of the backend: defaults, the FLIP-427 alias, and fail-fast validation. */
class ForStBackendConfigTest {

    private static ForStBackendConfig parse(Map<String, String> settings) {
        return ForStBackendConfig.fromConfig(Configuration.fromMap(settings));
    }

    private static void assertRejected(Map<String, String> settings, String key) {
        assertThatThrownBy(() -> parse(settings))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContaining(key);
    }

    @Test
    void defaults() {
        ForStBackendConfig config = parse(Map.of());
        assertThat(config.getPrimaryDir()).isNull();
        assertThat(config.getLocalDirs()).isNull();
        assertThat(config.isManagedMemory()).isTrue();
        assertThat(config.getFixedPerSlot()).isNull();
        assertThat(config.getFixedPerTm()).isNull();
        assertThat(config.getWriteBufferRatio()).isEqualTo(0.5);
        assertThat(config.isInlineCoordinator()).isTrue();
        assertThat(config.getBatchThreads()).isEqualTo(2);
        assertThat(config.isSyncEnforceLocal()).isTrue();
    }

    @Test
    void syncEnforceLocalIsABooleanNamedOnError() {
        assertThat(parse(Map.of("state.backend.forst.sync.enforce-local", "false"))
                        .isSyncEnforceLocal())
                .isFalse();
        assertRejected(
                Map.of("state.backend.forst.sync.enforce-local", "sometimes"),
                "state.backend.forst.sync.enforce-local");
    }

    @Test
    void primaryDirAcceptsPathsAndUris() {
        assertThat(parse(Map.of("state.backend.forst.primary-dir", "/data/state/")).getPrimaryDir())
                .isEqualTo("file:///data/state");
        assertThat(
                        parse(Map.of("state.backend.forst.primary-dir", "file:///data/state"))
                                .getPrimaryDir())
                .isEqualTo("file:///data/state");
        assertThat(
                        parse(Map.of("state.backend.forst.primary-dir", "s3://bucket/state"))
                                .getPrimaryDir())
                .isEqualTo("s3://bucket/state");
        assertThat(parse(Map.of("state.backend.forst.primary-dir", "local-dir")).getPrimaryDir())
                .isNull();
    }

    @Test
    void primaryDirOnTheCheckpointDirectoryAsFlinksDefault() {
        ForStBackendConfig config =
                parse(Map.of("state.backend.forst.primary-dir", "checkpoint-dir"));
        assertThat(config.isPrimaryOnCheckpointDir()).isTrue();
        assertThat(config.getPrimaryDir()).isNull();
        assertThat(parse(Map.of()).isPrimaryOnCheckpointDir()).isFalse();
    }

    @Test
    void workingDirIsAnAliasOfPrimaryDir() {
        assertThat(parse(Map.of("state.backend.forst.working-dir", "/w")).getPrimaryDir())
                .isEqualTo("file:///w");
        assertThat(
                        parse(
                                        Map.of(
                                                "state.backend.forst.working-dir", "/w",
                                                "state.backend.forst.primary-dir", "/p"))
                                .getPrimaryDir())
                .isEqualTo("file:///p");
    }

    @Test
    void badDirectoriesNameTheirKey() {
        assertRejected(Map.of("state.backend.forst.primary-dir", "relative/dir"),
                "state.backend.forst.primary-dir");
        assertRejected(Map.of("state.backend.forst.working-dir", "relative"),
                "state.backend.forst.working-dir");
        assertRejected(Map.of("state.backend.forst.primary-dir", "file://host/dir"),
                "state.backend.forst.primary-dir");
        assertRejected(Map.of("state.backend.forst.local-dir", "s3://bucket/x"),
                "state.backend.forst.local-dir");
        assertRejected(Map.of("state.backend.forst.local-dir", "tmp"),
                "state.backend.forst.local-dir");
    }

    @Test
    void localDirs() {
        assertThat(parse(Map.of("state.backend.forst.local-dir", "/a, file:///b")).getLocalDirs())
                .containsExactly("/a", "/b");
    }

    @Test
    void memoryBudgets() {
        ForStBackendConfig config =
                parse(
                        Map.of(
                                "state.backend.forst.memory.fixed-per-slot", "64mb",
                                "state.backend.forst.memory.write-buffer-ratio", "0.25"));
        assertThat(config.getFixedPerSlot()).isEqualTo(MemorySize.ofMebiBytes(64));
        assertThat(config.getWriteBufferRatio()).isEqualTo(0.25);

        assertRejected(Map.of("state.backend.forst.memory.fixed-per-slot", "lots"),
                "state.backend.forst.memory.fixed-per-slot");
        assertRejected(Map.of("state.backend.forst.memory.fixed-per-tm", "0"),
                "state.backend.forst.memory.fixed-per-tm");
        ForStBackendConfig both =
                parse(
                        Map.of(
                                "state.backend.forst.memory.fixed-per-slot", "1gb",
                                "state.backend.forst.memory.fixed-per-tm", "2gb"));
        assertThat(both.getFixedPerSlot()).isEqualTo(MemorySize.ofMebiBytes(1024));
        assertThat(both.getFixedPerTm()).as("per slot wins, as in Flink's ForSt").isNull();
        assertRejected(Map.of("state.backend.forst.memory.write-buffer-ratio", "1.5"),
                "state.backend.forst.memory.write-buffer-ratio");
        assertRejected(Map.of("state.backend.forst.memory.write-buffer-ratio", "half"),
                "state.backend.forst.memory.write-buffer-ratio");
        assertRejected(Map.of("state.backend.forst.memory.managed", "maybe"),
                "state.backend.forst.memory.managed");
    }

    @Test
    void executorThreads() {
        assertThat(parse(Map.of("state.backend.forst.executor.batch-threads", "4"))
                        .getBatchThreads())
                .isEqualTo(4);
        assertRejected(Map.of("state.backend.forst.executor.batch-threads", "0"),
                "state.backend.forst.executor.batch-threads");
        assertRejected(Map.of("state.backend.forst.executor.batch-threads", "many"),
                "state.backend.forst.executor.batch-threads");
        assertRejected(Map.of("state.backend.forst.executor.inline-coordinator", "yes please"),
                "state.backend.forst.executor.inline-coordinator");
    }

    @Test
    void flinksExecutorThreadsSetTheBatchThreadsUnlessOursAreSet() {
        assertThat(parse(Map.of("state.backend.forst.executor.read-io-parallelism", "5"))
                        .getBatchThreads())
                .isEqualTo(5);
        assertThat(
                        parse(
                                        Map.of(
                                                "state.backend.forst.executor.read-io-parallelism", "5",
                                                "state.backend.forst.executor.batch-threads", "3"))
                                .getBatchThreads())
                .isEqualTo(3);
        // write threads count only when writes are not inline, as in Flink's ForSt
        assertThat(parse(Map.of("state.backend.forst.executor.write-io-parallelism", "4"))
                        .getBatchThreads())
                .isEqualTo(2);
        assertThat(
                        parse(
                                        Map.of(
                                                "state.backend.forst.executor.inline-write", "false",
                                                "state.backend.forst.executor.read-io-parallelism", "0",
                                                "state.backend.forst.executor.write-io-parallelism", "4"))
                                .getBatchThreads())
                .isEqualTo(4);
        assertRejected(
                Map.of(
                        "state.backend.forst.executor.inline-write", "false",
                        "state.backend.forst.executor.read-io-parallelism", "0",
                        "state.backend.forst.executor.write-io-parallelism", "0"),
                "state.backend.forst.executor.write-io-parallelism");
    }

    @Test
    void engineOptionsAreKeysOfTheirOwnAndWinOverFlinksKeys() {
        ForStBackendConfig config =
                parse(
                        Map.of(
                                "state.backend.forst.engine.memtable-bytes", "2mb",
                                "state.backend.forst.engine.compression", "NONE",
                                "state.backend.forst.engine.auto-compaction", "FALSE",
                                "state.backend.forst.writebuffer.size", "8mb",
                                "state.backend.forst.block.blocksize", "16kb"));
        assertThat(config.getEngineOptions())
                .containsEntry("memtable-bytes", "2097152")
                .containsEntry("compression", "none")
                .containsEntry("auto-compaction", "false")
                .containsEntry("block-size", "16384")
                .hasSize(4);
        assertThat(parse(Map.of()).getEngineOptions()).isEmpty();
    }

    @Test
    void badEngineValuesNameTheirKey() {
        assertRejected(Map.of("state.backend.forst.engine.memtable-bytes", "1kb"),
                "state.backend.forst.engine.memtable-bytes");
        assertRejected(Map.of("state.backend.forst.engine.memtable-bytes", "lots"),
                "state.backend.forst.engine.memtable-bytes");
        assertRejected(Map.of("state.backend.forst.engine.l0-compaction-trigger", "-1"),
                "state.backend.forst.engine.l0-compaction-trigger");
        assertRejected(Map.of("state.backend.forst.engine.compression", "zstd"),
                "state.backend.forst.engine.compression");
        assertRejected(Map.of("state.backend.forst.engine.auto-compaction", "sometimes"),
                "state.backend.forst.engine.auto-compaction");
        // a rule between two options, checked by the engine itself
        assertRejected(
                Map.of(
                        "state.backend.forst.engine.l0-compaction-trigger", "8",
                        "state.backend.forst.engine.l0-stop-trigger", "6"),
                "state.backend.forst.engine.l0-stop-trigger");
        assertRejected(Map.of("state.backend.forst.engine.no-such-option", "1"),
                "state.backend.forst.engine.no-such-option");
    }

    @Test
    void unknownKeysAndTyposAreRejected() {
        assertRejected(Map.of("state.backend.forst.no-such-key", "1"),
                "state.backend.forst.no-such-key");
        assertRejected(Map.of("state.backend.forst.writebuffer.sise", "1mb"),
                "state.backend.forst.writebuffer.sise");
        assertRejected(Map.of("state.backend.forst.metrics.no-such-metric", "true"),
                "state.backend.forst.metrics.no-such-metric");
        assertRejected(Map.of("state.backend.forst.timer-service.factory", "ROCKSDB"),
                "state.backend.forst.timer-service.factory");
        assertThat(parse(Map.of("state.backend.forst.timer-service.factory", "ForStDB"))
                        .getTimerService())
                .isEqualTo(TimerServiceType.ForStDB);
        assertThat(parse(Map.of("state.backend.forst.timer-service.factory", "heap"))
                        .getTimerService())
                .isEqualTo(TimerServiceType.HEAP);
        assertThat(parse(Map.of()).getTimerService()).isEqualTo(TimerServiceType.ForStDB);
        assertThat(parse(Map.of()).getTimerCacheSize()).isEqualTo(128);
        assertThat(parse(Map.of("state.backend.forst.timer-service.cache-size", "7"))
                        .getTimerCacheSize())
                .isEqualTo(7);
        assertRejected(Map.of("state.backend.forst.timer-service.cache-size", "0"),
                "state.backend.forst.timer-service.cache-size");
        // keys of other backends are none of our business
        assertThat(parse(Map.of("state.backend.rocksdb.localdir", "x"))).isNotNull();
    }

    @Test
    void backendSettingsWinOverTheClusterConfiguration() {
        Configuration own = new Configuration();
        own.setString("state.backend.forst.primary-dir", "/own");
        Configuration cluster = new Configuration();
        cluster.setString("state.backend.forst.primary-dir", "/cluster");
        cluster.setString("state.backend.forst.executor.batch-threads", "3");
        ForStStateBackend backend =
                new ForStStateBackend(own).configure(cluster, getClass().getClassLoader());
        assertThat(backend.getConfig().getPrimaryDir()).isEqualTo("file:///own");
        assertThat(backend.getConfig().getBatchThreads()).isEqualTo(3);
    }

    @Test
    void selectedByShortNameAndByFactoryClassName() throws Exception {
        for (String type : new String[] {"forst", ForStStateBackendFactory.class.getName()}) {
            Configuration config = new Configuration();
            config.set(StateBackendOptions.STATE_BACKEND, type);
            config.setString("state.backend.forst.primary-dir", "/somewhere");
            StateBackend backend =
                    StateBackendLoader.loadStateBackendFromConfig(
                            config, getClass().getClassLoader(), null);
            assertThat(backend).isInstanceOf(ForStStateBackend.class);
            ForStStateBackend ours = (ForStStateBackend) backend;
            assertThat(ours.supportsAsyncKeyedStateBackend()).isTrue();
            assertThat(ours.useManagedMemory()).isTrue();
            assertThat(ours.getConfig().getPrimaryDir()).isEqualTo("file:///somewhere");
        }
    }

    @Test
    void invalidValuesFailWhenTheBackendIsLoaded() {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, "forst");
        config.setString("state.backend.forst.executor.batch-threads", "-1");
        assertThatThrownBy(
                        () ->
                                StateBackendLoader.loadStateBackendFromConfig(
                                        config, getClass().getClassLoader(), null))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContaining("state.backend.forst.executor.batch-threads");
    }
}
