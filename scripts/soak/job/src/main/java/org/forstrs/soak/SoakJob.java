package org.forstrs.soak;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.util.ParameterTool;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.types.Row;

import java.time.Duration;

/**
 * The soak's job: {@code --records} events from a deterministic generator ({@link SoakInput}) at
 * {@code --rate} per second, with event time, through
 *
 * <ul>
 *   <li>agg/: a SQL GROUP BY (async state), its changelog as {@code kind,user,count,sum,max};
 *   <li>join/: a SQL regular join with a payment per event (async state), {@code
 *       id,user,fee,amount};
 *   <li>window/: a SQL event-time tumbling window of 10 s, {@code user,windowStart,count,sum};
 *   <li>buckets/: a KeyedProcessFunction with sync state and event-time timers ({@link
 *       BucketTotals}).
 * </ul>
 *
 * Every output is a FileSink (exactly once: files committed on checkpoints) under {@code --out}.
 * The input never ends by itself ({@code --records} is far more than a soak reads): the soak ends
 * the job with stop-with-savepoint --drain. The source runs at parallelism 1 (one split: monotonic event time, no idle readers after a
 * rescale); everything else at the job's parallelism ({@code -p}). Operators have fixed uids so
 * that savepoints restore at any parallelism.
 */
public final class SoakJob {

    private SoakJob() {}

    public static void main(String[] args) throws Exception {
        ParameterTool params = ParameterTool.fromArgs(args);
        long records = params.getLong("records");
        int users = params.getInt("users", 1000);
        double rate = params.getDouble("rate", 200);
        String out = params.getRequired("out");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setMaxParallelism(128);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED, true);
        // window_start comes out as a local date-time: UTC, so it maps back to epoch millis
        tEnv.getConfig().setLocalTimeZone(java.time.ZoneOffset.UTC);
        tEnv.getConfig()
                .set(
                        ExecutionConfigOptions.TABLE_EXEC_UID_GENERATION,
                        ExecutionConfigOptions.UidGeneration.ALWAYS);

        DataGeneratorSource<Event> generator =
                new DataGeneratorSource<>(
                        i -> new Event(i, users),
                        records,
                        RateLimiterStrategy.perSecond(rate),
                        TypeInformation.of(Event.class));
        DataStream<Event> events =
                env.fromSource(
                                generator,
                                WatermarkStrategy.<Event>forMonotonousTimestamps()
                                        .withTimestampAssigner((e, previous) -> e.ts),
                                "events")
                        .uid("events")
                        .setParallelism(1);
        // the join's other side: a payment per event, from the same source (a source that ends
        // would wait for a final checkpoint, which a stop-with-savepoint --drain then waits for)
        DataStream<Row> payments =
                events.map(e -> Row.of(e.id, SoakInput.feeOf(e.id)))
                        .returns(
                                Types.ROW_NAMED(
                                        new String[] {"paymentId", "fee"}, Types.LONG, Types.LONG))
                        .uid("payments");

        tEnv.createTemporaryView(
                "events",
                tEnv.fromDataStream(
                        events,
                        Schema.newBuilder()
                                .columnByMetadata("rowtime", "TIMESTAMP_LTZ(3)")
                                .watermark("rowtime", "SOURCE_WATERMARK()")
                                .build()));
        tEnv.createTemporaryView("payments", tEnv.fromDataStream(payments));

        Table agg =
                tEnv.sqlQuery(
                        "SELECT userId, COUNT(*) AS cnt, SUM(amount) AS total, MAX(amount) AS mx"
                                + " FROM events GROUP BY userId");
        Table join =
                tEnv.sqlQuery(
                        "SELECT e.id, e.userId, p.fee, e.amount FROM events AS e"
                                + " JOIN payments AS p ON e.id = p.paymentId");
        Table window =
                tEnv.sqlQuery(
                        "SELECT userId, window_start, COUNT(*) AS cnt, SUM(amount) AS total"
                                + " FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(rowtime),"
                                + " INTERVAL '10' SECOND))"
                                + " GROUP BY userId, window_start, window_end");

        sink(
                tEnv.toChangelogStream(agg)
                        .map(r -> r.getKind().shortString() + "," + fields(r))
                        .uid("agg-lines"),
                out,
                "agg");
        sink(tEnv.toDataStream(join).map(SoakJob::fields).uid("join-lines"), out, "join");
        sink(
                tEnv.toDataStream(window)
                        .map(
                                r ->
                                        r.getField(0)
                                                + ","
                                                + ((java.time.LocalDateTime) r.getField(1))
                                                        .atZone(java.time.ZoneOffset.UTC)
                                                        .toInstant()
                                                        .toEpochMilli()
                                                + ","
                                                + r.getField(2)
                                                + ","
                                                + r.getField(3))
                        .uid("window-lines"),
                out,
                "window");
        sink(
                events.keyBy(e -> e.userId)
                        .process(new BucketTotals())
                        .uid("bucket-totals")
                        .name("bucket totals (sync state, timers)"),
                out,
                "buckets");

        env.execute("forst-rs soak");
    }

    private static String fields(Row row) {
        StringBuilder line = new StringBuilder();
        for (int f = 0; f < row.getArity(); f++) {
            line.append(f == 0 ? "" : ",").append(row.getField(f));
        }
        return line.toString();
    }

    private static void sink(DataStream<String> lines, String out, String name) {
        lines.sinkTo(
                        FileSink.forRowFormat(
                                        new Path(out, name),
                                        new SimpleStringEncoder<String>("UTF-8"))
                                .withBucketAssigner(new BasePathBucketAssigner<>())
                                .withRollingPolicy(OnCheckpointRollingPolicy.build())
                                .build())
                .uid(name + "-sink")
                .name(name + " files");
    }
}
