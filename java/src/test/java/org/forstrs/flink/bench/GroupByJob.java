package org.forstrs.flink.bench;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A SQL {@code GROUP BY k} with COUNT, SUM and MAX as a real Flink job on a local MiniCluster,
 * with async state operators ({@code table.exec.async-state.enabled}) on the ForSt-RS backend
 * (or {@code --backend hashmap}), state in a local directory. Prints input records/s. Uses only
 * Flink's API, so it runs against any build of the backend's jar ({@code scripts/bench-order.sh}).
 *
 * <pre>
 * java -cp java/target/forstjni-0.1.0.jar:java/target/test-classes:$(cat java/target/cp.txt) \
 *     org.forstrs.flink.bench.GroupByJob --records 1000000 --keys 10000 --parallelism 2
 * </pre>
 */
public final class GroupByJob {

    private GroupByJob() {}

    /** A 64-bit mix of i: the input is pseudo-random but the same in every run. */
    static long mix(long i) {
        long z = (i + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchArgs.parse(args);
        long records = Long.parseLong(options.getOrDefault("records", "1000000"));
        long keys = Long.parseLong(options.getOrDefault("keys", "10000"));
        int parallelism = Integer.parseInt(options.getOrDefault("parallelism", "2"));
        String backend = options.getOrDefault("backend", "forst");
        Path dir =
                Path.of(
                                options.getOrDefault(
                                        "dir",
                                        Files.createTempDirectory("forst-rs-groupby").toString()))
                        .toAbsolutePath();
        Files.createDirectories(dir);

        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, backend);
        config.setString("state.backend.forst.primary-dir", dir.toString());
        BenchArgs.copyForStOptions(options, config);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, config);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED, true);
        DataStream<Tuple2<Integer, Long>> input =
                env.fromSequence(0, records - 1)
                        .map(
                                i ->
                                        Tuple2.of(
                                                (int) Math.floorMod(mix(i), keys),
                                                Math.floorMod(mix(i + records), 1_000_000L)))
                        .returns(Types.TUPLE(Types.INT, Types.LONG));
        tEnv.createTemporaryView("t", tEnv.fromDataStream(input).as("k", "v"));
        tEnv.toChangelogStream(
                        tEnv.sqlQuery(
                                "SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m"
                                        + " FROM t GROUP BY k"))
                .sinkTo(new DiscardingSink<>());

        JobExecutionResult result = env.execute("ForSt-RS SQL GROUP BY");
        double seconds = result.getNetRuntime(TimeUnit.MILLISECONDS) / 1000.0;
        System.out.printf(
                "SQL GROUP BY (COUNT, SUM, MAX; async state) on %s: %d records, %d keys,"
                        + " parallelism %d%n",
                backend, records, keys, parallelism);
        System.out.printf("records/s: %.0f (%.2f s)%n", records / seconds, seconds);
    }
}
