package org.forstrs.flink.bench;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;

import java.time.Duration;

/**
 * A keyed tumbling event-time window aggregate over many keys with async state, as {@link
 * CompareForStJob} runs it ({@code --job window}): record i has event time i ms and a key drawn
 * from {@code keys}; each window of {@code records / windows} ms sums its values per key. Per
 * record the window's reducing state is read and written (namespace: the window) and a timer is
 * registered; each firing reads and clears a key's window. Uses Flink classes only: {@link
 * CompareForStJob} also runs it without ForSt-RS's jar.
 */
final class AsyncWindowAggregate {

    /** Windows over the whole input: each key's state lives one window, then is cleared. */
    static final int WINDOWS = 10;

    private AsyncWindowAggregate() {}

    /** {@code records} (key, value) records over {@code keys} keys, summed per key and window. */
    static void addTo(StreamExecutionEnvironment env, long records, long keys) {
        long windowMs = Math.max(1, records / WINDOWS);
        env.fromSequence(0, records - 1)
                // One source subtask: event times ascend, so watermarks are exact.
                .setParallelism(1)
                .assignTimestampsAndWatermarks(
                        WatermarkStrategy.<Long>forMonotonousTimestamps()
                                .withTimestampAssigner((i, ts) -> i))
                .setParallelism(1)
                .map(new CheckpointCounter<>())
                .returns(Types.LONG)
                .setParallelism(1)
                .map(i -> Tuple2.of("key-" + Math.floorMod(GroupByJob.mix(i), keys), i))
                .returns(Types.TUPLE(Types.STRING, Types.LONG))
                .keyBy(t -> t.f0, Types.STRING)
                .enableAsyncState()
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(windowMs)))
                .reduce((a, b) -> Tuple2.of(a.f0, a.f1 + b.f1))
                .sinkTo(new DiscardingSink<>());
    }
}
