package org.forstrs.flink.snapshot;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueStateSnapshot;
import org.apache.flink.util.FlinkRuntimeException;

import java.io.IOException;
import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The elements of a heap timer queue as savepoint entries, key group by key group: key =
 * key-group prefix + serialized element, value empty (what Flink's RocksDB backend writes for
 * heap timers, and what its own timer column families hold).
 */
public final class HeapQueueEntries<T> implements Iterator<StateEntry> {

    private static final byte[] EMPTY = new byte[0];

    private record Entry(byte[] key, byte[] value) implements StateEntry {}

    private final HeapPriorityQueueStateSnapshot<T> queue;
    private final TypeSerializer<T> elementSerializer;
    private final Iterator<Integer> keyGroups;
    private final int keyGroupPrefixBytes;
    private final DataOutputSerializer out = new DataOutputSerializer(128);
    private Iterator<T> elements = Collections.emptyIterator();
    private int keyGroup;

    public HeapQueueEntries(
            HeapPriorityQueueStateSnapshot<T> queue,
            KeyGroupRange keyGroupRange,
            int keyGroupPrefixBytes) {
        this.queue = queue;
        this.elementSerializer = queue.getMetaInfo().getElementSerializer();
        this.keyGroups = keyGroupRange.iterator();
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
    }

    @Override
    public boolean hasNext() {
        while (!elements.hasNext() && keyGroups.hasNext()) {
            keyGroup = keyGroups.next();
            elements = queue.getIteratorForKeyGroup(keyGroup);
        }
        return elements.hasNext();
    }

    @Override
    public StateEntry next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        out.clear();
        try {
            CompositeKeySerializationUtils.writeKeyGroup(keyGroup, keyGroupPrefixBytes, out);
            elementSerializer.serialize(elements.next(), out);
        } catch (IOException e) {
            throw new FlinkRuntimeException("Could not serialize a timer of " + queue, e);
        }
        return new Entry(out.getCopyOfBuffer(), EMPTY);
    }
}
