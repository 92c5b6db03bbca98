package org.forstrs.flink.nexmark;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.table.data.RowData;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The first {@code events} Nexmark events as a bounded source. The stream is dealt out in
 * interleaved splits, as many as the source's parallelism: split {@code i} of {@code p} holds
 * events {@code i, i + p, i + 2p, ...}. So every reader moves through event time at the pace of
 * the others (contiguous ranges would leave one reader's watermark hours behind and hold every
 * window open), and each reader's events are in event-time order: nothing is late for a watermark
 * that trails the newest event.
 */
public final class NexmarkSource
        implements Source<RowData, NexmarkSource.Split, List<NexmarkSource.Split>> {

    private static final long serialVersionUID = 1L;

    private final NexmarkGenerator generator;
    private final long events;

    public NexmarkSource(NexmarkGenerator generator, long events) {
        this.generator = generator;
        this.events = events;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SourceReader<RowData, Split> createReader(SourceReaderContext context) {
        return new NexmarkReader(generator);
    }

    @Override
    public SplitEnumerator<Split, List<Split>> createEnumerator(
            SplitEnumeratorContext<Split> context) {
        int stride = context.currentParallelism();
        List<Split> splits = new ArrayList<>();
        for (int i = 0; i < stride; i++) {
            splits.add(new Split(i, stride, i, events));
        }
        return new Enumerator(context, splits);
    }

    @Override
    public SplitEnumerator<Split, List<Split>> restoreEnumerator(
            SplitEnumeratorContext<Split> context, List<Split> unassigned) {
        return new Enumerator(context, new ArrayList<>(unassigned));
    }

    @Override
    public SimpleVersionedSerializer<Split> getSplitSerializer() {
        return new SplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<List<Split>> getEnumeratorCheckpointSerializer() {
        return new SplitListSerializer();
    }

    /** Events {@code next, next + stride, ...} below {@code end}. */
    public record Split(int index, int stride, long next, long end) implements SourceSplit {

        @Override
        public String splitId() {
            return Integer.toString(index);
        }

        boolean isDone() {
            return next >= end;
        }

        Split advanced() {
            return new Split(index, stride, next + stride, end);
        }
    }

    /** Hands the splits out by index, once, and takes back those of a failed reader. */
    private static final class Enumerator implements SplitEnumerator<Split, List<Split>> {
        private final SplitEnumeratorContext<Split> context;
        private final List<Split> unassigned;

        Enumerator(SplitEnumeratorContext<Split> context, List<Split> unassigned) {
            this.context = context;
            this.unassigned = unassigned;
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtaskId, @Nullable String requesterHostname) {}

        @Override
        public void addSplitsBack(List<Split> splits, int subtaskId) {
            unassigned.addAll(splits);
        }

        @Override
        public void addReader(int subtaskId) {
            int readers = context.currentParallelism();
            List<Split> mine = new ArrayList<>();
            unassigned.removeIf(split -> split.index() % readers == subtaskId && mine.add(split));
            for (Split split : mine) {
                context.assignSplit(split, subtaskId);
            }
            context.signalNoMoreSplits(subtaskId);
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            return new ArrayList<>(unassigned);
        }

        @Override
        public void close() {}
    }

    private static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split split) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(24);
            write(split, out);
            return out.getCopyOfBuffer();
        }

        @Override
        public Split deserialize(int version, byte[] bytes) throws IOException {
            return read(new DataInputDeserializer(bytes));
        }
    }

    private static final class SplitListSerializer
            implements SimpleVersionedSerializer<List<Split>> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(List<Split> splits) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(4 + 24 * splits.size());
            out.writeInt(splits.size());
            for (Split split : splits) {
                write(split, out);
            }
            return out.getCopyOfBuffer();
        }

        @Override
        public List<Split> deserialize(int version, byte[] bytes) throws IOException {
            DataInputDeserializer in = new DataInputDeserializer(bytes);
            int count = in.readInt();
            List<Split> splits = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                splits.add(read(in));
            }
            return splits;
        }
    }

    private static void write(Split split, DataOutputSerializer out) throws IOException {
        out.writeInt(split.index());
        out.writeInt(split.stride());
        out.writeLong(split.next());
        out.writeLong(split.end());
    }

    private static Split read(DataInputDeserializer in) throws IOException {
        return new Split(in.readInt(), in.readInt(), in.readLong(), in.readLong());
    }
}
