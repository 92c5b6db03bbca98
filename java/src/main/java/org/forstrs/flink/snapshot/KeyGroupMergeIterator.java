package org.forstrs.flink.snapshot;

import org.apache.flink.runtime.state.KeyValueStateIterator;

import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * Merges the per-state entry iterators (each in key order) into the order Flink's unified
 * savepoint format needs: by key group, then by state id (the state's index in the meta info
 * list), then by key, as Flink's RocksDB backend does with {@code
 * RocksStatesPerKeyGroupMergeIterator}. Every key handed out is its own array: the savepoint writer
 * flags the last key of a run in place.
 */
public final class KeyGroupMergeIterator implements KeyValueStateIterator {

    /** One state's iterator and its current entry. */
    private static final class Cursor {
        final int stateId;
        final Iterator<? extends StateEntry> entries;
        final int keyGroupPrefixBytes;
        StateEntry head;
        int keyGroup;

        Cursor(int stateId, Iterator<? extends StateEntry> entries, int keyGroupPrefixBytes) {
            this.stateId = stateId;
            this.entries = entries;
            this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        }

        /** Moves to the next entry; false when the state has no more. */
        boolean advance() {
            if (!entries.hasNext()) {
                head = null;
                return false;
            }
            head = entries.next();
            byte[] key = head.key();
            int group = 0;
            for (int i = 0; i < keyGroupPrefixBytes; i++) {
                group = (group << 8) | (key[i] & 0xFF);
            }
            keyGroup = group;
            return true;
        }
    }

    private static final Comparator<Cursor> ORDER =
            Comparator.<Cursor>comparingInt(c -> c.keyGroup).thenComparingInt(c -> c.stateId);

    private final PriorityQueue<Cursor> heads;
    private Cursor current;
    private boolean newKeyGroup;
    private boolean newKeyValueState;

    public KeyGroupMergeIterator(List<CanonicalState> states, int keyGroupPrefixBytes) {
        heads = new PriorityQueue<>(Math.max(1, states.size()), ORDER);
        for (int id = 0; id < states.size(); id++) {
            Cursor cursor = new Cursor(id, states.get(id).entries().get(), keyGroupPrefixBytes);
            if (cursor.advance()) {
                heads.add(cursor);
            }
        }
        current = heads.poll();
        newKeyGroup = true;
        newKeyValueState = true;
    }

    @Override
    public void next() {
        Cursor previous = current;
        int previousKeyGroup = previous.keyGroup;
        if (previous.advance()) {
            if (previous.keyGroup != previousKeyGroup) {
                heads.add(previous);
                current = heads.poll();
            }
        } else {
            current = heads.poll();
        }
        newKeyValueState = current != previous;
        newKeyGroup = current != null && current.keyGroup != previousKeyGroup;
    }

    @Override
    public int keyGroup() {
        return current.keyGroup;
    }

    @Override
    public byte[] key() {
        return current.head.key();
    }

    @Override
    public byte[] value() {
        return current.head.value();
    }

    @Override
    public int kvStateId() {
        return current.stateId;
    }

    @Override
    public boolean isNewKeyValueState() {
        return newKeyValueState;
    }

    @Override
    public boolean isNewKeyGroup() {
        return newKeyGroup;
    }

    @Override
    public boolean isValid() {
        return current != null;
    }

    @Override
    public void close() {
        heads.clear();
        current = null;
    }
}
