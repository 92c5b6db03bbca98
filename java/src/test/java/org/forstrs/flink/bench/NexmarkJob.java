package org.forstrs.flink.bench;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.TableDescriptor;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;

import org.forstrs.flink.nexmark.NexmarkQueries;

import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One Nexmark query ({@code --query q0..q20}, files in {@code src/test/resources/nexmark/}) over
 * the first {@code --events} events of the generator into a blackhole sink, on the backend of
 * {@link BenchArgs#backendConfig} (ForSt-RS or Flink's ForSt as {@code forst}, {@code rocksdb},
 * {@code hashmap}). SQL operators use async state where they have it on {@code forst} and
 * synchronous state on the others, each backend's own mode ({@code --async-state true|false}
 * overrides). Prints events/s, the job's seconds, the JVM's CPU seconds and peak RSS for {@code
 * scripts/bench-nexmark.sh}.
 *
 * <p>Arguments: those of {@link BenchArgs#backendConfig}, {@code --query}, {@code --events}
 * (1000000), {@code --parallelism} (2), {@code --seed} (0), {@code --events-per-second} of event
 * time (1000), {@code --state-size true} (ForSt-RS only: also print the state it held at the end,
 * {@link StateSizeReporter}).
 */
public final class NexmarkJob {

    private NexmarkJob() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchArgs.parse(args);
        String query = options.get("query");
        long events = Long.parseLong(options.getOrDefault("events", "1000000"));
        int parallelism = Integer.parseInt(options.getOrDefault("parallelism", "2"));
        Configuration config = BenchArgs.backendConfig(options);
        boolean forst = options.getOrDefault("backend", "forst").equals("forst");
        boolean asyncState =
                Boolean.parseBoolean(
                        options.getOrDefault("async-state", Boolean.toString(forst)));
        config.set(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED, asyncState);
        boolean stateSize = Boolean.parseBoolean(options.getOrDefault("state-size", "false"));
        if (stateSize) {
            StateSizeReporter.configure(config);
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, config);
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);
        NexmarkQueries.createTables(
                tables,
                events,
                Long.parseLong(options.getOrDefault("seed", "0")),
                Integer.parseInt(options.getOrDefault("events-per-second", "1000")));
        Table result = tables.sqlQuery(NexmarkQueries.select(query));
        TableResult insert =
                result.insertInto(
                                TableDescriptor.forConnector("blackhole")
                                        .schema(
                                                Schema.newBuilder()
                                                        .fromResolvedSchema(
                                                                result.getResolvedSchema())
                                                        .build())
                                        .build())
                        .execute();
        JobExecutionResult job =
                insert.getJobClient().orElseThrow().getJobExecutionResult().get();

        double seconds = job.getNetRuntime(TimeUnit.MILLISECONDS) / 1000.0;
        System.out.printf("events/s: %.0f%n", events / seconds);
        System.out.printf("job seconds: %.2f%n", seconds);
        System.out.printf("cpu seconds: %.2f%n", ProcessStats.cpuNanos() / 1e9);
        System.out.printf("peak rss MiB: %.0f%n", ProcessStats.peakRssKib() / 1024.0);
        if (stateSize) {
            System.out.printf("state MiB at end: %.1f%n", StateSizeReporter.bytes() / 1048576.0);
        }
        System.out.flush();
        // Flink's ForSt leaves a native thread attached as a non-daemon thread, which keeps the
        // JVM alive after main returns.
        System.exit(0);
    }
}
