package org.forstrs.soak;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Synchronous (V1) keyed state with event-time timers: per user and bucket of BUCKET_MS event
 * time, the count and sum of amounts, emitted as {@code user,bucketStart,count,sum} when the
 * watermark passes the bucket's end.
 */
public class BucketTotals extends KeyedProcessFunction<Integer, Event, String> {

    public static final long BUCKET_MS = 30_000;

    /** bucket start → {count, sum} */
    private transient MapState<Long, long[]> buckets;

    @Override
    public void open(OpenContext openContext) {
        buckets =
                getRuntimeContext()
                        .getMapState(
                                new MapStateDescriptor<>(
                                        "buckets",
                                        Types.LONG,
                                        PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO));
    }

    @Override
    public void processElement(Event e, Context ctx, Collector<String> out) throws Exception {
        long start = e.ts - Math.floorMod(e.ts, BUCKET_MS);
        long[] totals = buckets.get(start);
        if (totals == null) {
            totals = new long[2];
            ctx.timerService().registerEventTimeTimer(start + BUCKET_MS - 1);
        }
        totals[0]++;
        totals[1] += e.amount;
        buckets.put(start, totals);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out)
            throws Exception {
        long start = timestamp + 1 - BUCKET_MS;
        long[] totals = buckets.get(start);
        buckets.remove(start);
        out.collect(ctx.getCurrentKey() + "," + start + "," + totals[0] + "," + totals[1]);
    }
}
