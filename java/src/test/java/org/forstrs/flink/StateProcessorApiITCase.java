package org.forstrs.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Flink's State Processor API ({@link SavepointReader}) and its savepoint SQL connector on the
 * state of jobs on ForSt-RS, taken while the input is held at known points.
 *
 * <ul>
 *   <li>{@code SavepointReader} reads State V1 and State V2 state (through V1 descriptors of the
 *       same names) of a retained checkpoint at half the input and of a native savepoint after
 *       all of it, equal to what the job wrote; reading changes no file.
 *   <li>The SQL connector reads a canonical savepoint of a job's V1 state, the same rows.
 *   <li>Flink 2.3's SQL connector reads no native snapshot of any backend: its metadata loader
 *       ({@code SavepointLoader}) knows only full snapshots' {@code KeyGroupsStateHandle}, so it
 *       refuses ForSt-RS's and Flink's RocksDB's native savepoints alike (shown on both). Flink
 *       takes no canonical savepoint of async state operators, with any backend.
 * </ul>
 */
class StateProcessorApiITCase {

    private static final long RECORDS = 1_000;

    /** Flink's refusal of native snapshots in the savepoint SQL connector. */
    private static final String SQL_REFUSES_NATIVE =
            "Unsupported KeyedStateHandle type: class"
                    + " org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle";

    @Test
    void savepointReaderReadsV1AndV2StateOfACheckpointAndANativeSavepoint(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        String dir = checkpoints.toUri().toString();
        Taken taken = runJob(config, dir, true, SavepointFormatType.NATIVE);
        Map<String, String> before = CheckpointFiles.hashedContents(dir);

        for (String path : List.of(taken.checkpoint, taken.savepoint)) {
            long n = path.equals(taken.checkpoint) ? RECORDS / 2 : RECORDS;
            assertThat(readV1(path))
                    .as("V1 state of %s", path)
                    .isEqualTo(SavepointReaderJob.expectedV1(n));
            assertThat(readV2(path))
                    .as("V2 state of %s", path)
                    .isEqualTo(SavepointReaderJob.expectedV2(n));
            assertThatThrownBy(() -> readWithSql(path, ForStStateBackendFactory.class.getName()))
                    .as("Flink's SQL connector on a native snapshot")
                    .hasStackTraceContaining(SQL_REFUSES_NATIVE);
        }

        assertThat(CheckpointFiles.hashedContents(dir))
                .as("the checkpoint directory after reading")
                .isEqualTo(before);
    }

    @Test
    void sqlConnectorReadsACanonicalSavepointOfV1State(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        String dir = checkpoints.toUri().toString();
        Taken taken = runJob(config, dir, false, SavepointFormatType.CANONICAL);
        assertThat(readV1(taken.savepoint)).isEqualTo(SavepointReaderJob.expectedV1(RECORDS));
        assertThat(readWithSql(taken.savepoint, ForStStateBackendFactory.class.getName()))
                .isEqualTo(withoutPojos(SavepointReaderJob.expectedV1(RECORDS)));
    }

    @Test
    void sqlConnectorRefusesNativeSavepointsOfFlinksRocksDbToo(
            @TempDir Path checkpoints) throws Exception {
        Configuration config = CountingJob.config(checkpoints, checkpoints);
        config.setString("state.backend.type", "rocksdb");
        config.setString("execution.checkpointing.incremental", "true");
        Taken taken =
                runJob(config, checkpoints.toUri().toString(), false, SavepointFormatType.NATIVE);
        assertThatThrownBy(() -> readWithSql(taken.savepoint, "rocksdb"))
                .hasStackTraceContaining(SQL_REFUSES_NATIVE);
    }

    /** What one run of the job left: a checkpoint at half the input, a savepoint after all. */
    private record Taken(String checkpoint, String savepoint) {}

    private static List<String> readV2(String path) throws Exception {
        return readWithDataStream(
                path, SavepointReaderJob.V2_UID, new SavepointReaderJob.V2Reader());
    }

    private static List<String> readV1(String path) throws Exception {
        return readWithDataStream(
                path, SavepointReaderJob.V1_UID, new SavepointReaderJob.V1Reader());
    }

    /**
     * Reads the keyed state of operator {@code uid} in {@code path} with ForSt-RS's backend; the
     * entries sorted.
     */
    private static List<String> readWithDataStream(
            String path, String uid, KeyedStateReaderFunction<String, String> reader)
            throws Exception {
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(new Configuration());
        env.setParallelism(2);
        StateBackend backend = new ForStStateBackend();
        return SavepointReaderJob.sorted(
                drain(
                        SavepointReader.read(env, path, backend)
                                .readKeyedState(OperatorIdentifier.forUid(uid), reader)
                                .executeAndCollect()));
    }

    /**
     * Reads the V1 operator's list and map states with the savepoint SQL connector (the key as
     * primary key, a column per state) in batch mode, each row rendered as the readers' lines.
     * The POJO value {@code last} is left out: the connector maps only SQL types it can infer a
     * serializer for.
     */
    private static List<String> readWithSql(String path, String backend) throws Exception {
        TableEnvironment tables = TableEnvironment.create(EnvironmentSettings.inBatchMode());
        tables.executeSql(
                "CREATE TABLE v1 (k STRING, seen ARRAY<BIGINT>, m MAP<BIGINT, STRING>,"
                        + " PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'savepoint',"
                        + " 'state.backend.type' = '"
                        + backend
                        + "', 'state.path' = '"
                        + path
                        + "', 'operator.uid' = '"
                        + SavepointReaderJob.V1_UID
                        + "', 'fields.seen.state-name' = 'v1-seen',"
                        + " 'fields.m.state-name' = 'v1-map')");
        List<String> lines = new ArrayList<>();
        for (Row row : rows(tables, "SELECT k, seen, m FROM v1")) {
            String k = (String) row.getField(0);
            lines.add("v1-seen|" + k + "|-|" + Arrays.toString((Long[]) row.getField(1)));
            ((Map<?, ?>) row.getField(2))
                    .forEach((m, x) -> lines.add("v1-map|" + k + "|" + m + "|" + x));
        }
        return SavepointReaderJob.sorted(lines);
    }

    /** The V1 readers' lines but the POJO state's. */
    private static List<String> withoutPojos(List<String> v1) {
        List<String> lines = new ArrayList<>(v1);
        lines.removeIf(l -> l.startsWith("last|"));
        return lines;
    }

    /**
     * Runs the job (with its async state operator or without) with checkpoints under {@code
     * checkpoints}; retains a checkpoint at half the input, takes a savepoint of {@code format}
     * after all of it.
     */
    private static Taken runJob(
            Configuration base,
            String checkpoints,
            boolean withAsyncState,
            SavepointFormatType format)
            throws Exception {
        String run = "spa-" + UUID.randomUUID();
        Configuration config = new Configuration(base);
        config.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 20);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(2);
        // More numbers than the holds let through: the job never ends by itself, so savepoints
        // after the last hold cannot race with its end.
        SavepointReaderJob.build(env, run, 2 * RECORDS, withAsyncState);
        PacedSequence.holdAt(run, RECORDS / 2);
        JobClient job = env.executeAsync("state for the State Processor API");
        String root = checkpoints.replaceAll("/+$", "");
        String jobDir = root + "/" + job.getJobID();
        Await.until("half the input", () -> PacedSequence.generated(run) >= RECORDS / 2, job);
        String checkpoint = CheckpointFiles.checkpointAfterNow(job, jobDir);
        PacedSequence.holdAt(run, RECORDS);
        Await.until("all the input", () -> PacedSequence.generated(run) >= RECORDS, job);
        // Triggered after every record was handed on: each savepoint holds all of them.
        String savepoint = job.triggerSavepoint(root + "/savepoint-" + run, format).get();
        job.cancel().get();
        // The job's own MiniCluster shuts down once the job ended: wait on its result.
        job.getJobExecutionResult().handle((result, failure) -> null).get();
        return new Taken(checkpoint, savepoint);
    }

    @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
    private static <T> List<T> drain(CloseableIterator<T> results) throws Exception {
        List<T> all = new ArrayList<>();
        try (CloseableIterator<T> it = results) {
            it.forEachRemaining(all::add);
        }
        return all;
    }

    private static List<Row> rows(TableEnvironment tEnv, String query) throws Exception {
        return drain(tEnv.executeSql(query).collect());
    }
}
