package org.forstrs.flink.nexmark;

import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.table.data.RowData;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Generates the events of its splits. With several splits (after a rescale) it always emits the
 * lowest event number next, so its output stays in event-time order.
 */
final class NexmarkReader implements SourceReader<RowData, NexmarkSource.Split> {

    /** Events per {@link #pollNext} call: enough to amortize the call, few enough to checkpoint. */
    private static final int EVENTS_PER_POLL = 64;

    private final NexmarkGenerator generator;
    private final List<NexmarkSource.Split> splits = new ArrayList<>();
    private CompletableFuture<Void> available = new CompletableFuture<>();
    private boolean noMoreSplits;

    NexmarkReader(NexmarkGenerator generator) {
        this.generator = generator;
    }

    @Override
    public void start() {}

    @Override
    public InputStatus pollNext(ReaderOutput<RowData> output) {
        for (int i = 0; i < EVENTS_PER_POLL && !splits.isEmpty(); i++) {
            int lowest = 0;
            for (int s = 1; s < splits.size(); s++) {
                if (splits.get(s).next() < splits.get(lowest).next()) {
                    lowest = s;
                }
            }
            NexmarkSource.Split split = splits.get(lowest);
            long n = split.next();
            output.collect(generator.event(n), generator.timestampOf(n));
            NexmarkSource.Split advanced = split.advanced();
            if (advanced.isDone()) {
                splits.remove(lowest);
            } else {
                splits.set(lowest, advanced);
            }
        }
        if (!splits.isEmpty()) {
            return InputStatus.MORE_AVAILABLE;
        }
        if (noMoreSplits) {
            return InputStatus.END_OF_INPUT;
        }
        available = new CompletableFuture<>();
        return InputStatus.NOTHING_AVAILABLE;
    }

    @Override
    public List<NexmarkSource.Split> snapshotState(long checkpointId) {
        return new ArrayList<>(splits);
    }

    @Override
    public CompletableFuture<Void> isAvailable() {
        return available;
    }

    @Override
    public void addSplits(List<NexmarkSource.Split> newSplits) {
        newSplits.stream().filter(split -> !split.isDone()).forEach(splits::add);
        available.complete(null);
    }

    @Override
    public void notifyNoMoreSplits() {
        noMoreSplits = true;
        available.complete(null);
    }

    @Override
    public void close() {}
}
