package org.forstrs.flink.bench;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * FLIP-423's word count with async state, as {@link WordCountJob} and {@link CompareForStJob} run
 * it. Uses Flink classes only: {@link CompareForStJob} also runs it without ForSt-RS's jar.
 */
final class AsyncWordCount {

    private AsyncWordCount() {}

    /** {@code records} words over {@code keys} distinct keys, counted, results discarded. */
    static void addTo(StreamExecutionEnvironment env, long records, long keys) {
        env.fromSequence(0, records - 1)
                .map(new CheckpointCounter<>())
                .returns(Types.LONG)
                .map(i -> "word-" + Math.floorMod(i * 0x9E3779B97F4A7C15L, keys))
                .returns(Types.STRING)
                .keyBy(w -> w)
                .enableAsyncState()
                .process(new Count())
                .returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());
    }

    /** Counts words in a V2 ValueState: one read and one write per record. */
    static final class Count extends KeyedProcessFunction<String, String, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(String word, Context ctx, Collector<Long> out) {
            count.asyncValue()
                    .thenCompose(c -> count.asyncUpdate(c == null ? 1 : c + 1));
        }
    }
}
