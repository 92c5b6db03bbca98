package org.forstrs.flink.sync;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.util.FlinkRuntimeException;

import java.io.IOException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The distinct keys of one state that have an entry in one namespace, in stored order. Entries
 * of one key and namespace are adjacent (map state has several), so comparing with the previous
 * key's bytes is enough to return each key once.
 */
final class KeysIterator<K, N> implements Iterator<K> {

    private final PrefixScan scan;
    private final int keyGroupPrefixBytes;
    private final TypeSerializer<K> keySerializer;
    private final boolean ambiguousKeyPossible;
    private final byte[] namespaceBytes;
    private final DataInputDeserializer in = new DataInputDeserializer();
    private byte[] previousKey;
    private K next;

    KeysIterator(
            PrefixScan scan,
            int keyGroupPrefixBytes,
            TypeSerializer<K> keySerializer,
            TypeSerializer<N> namespaceSerializer,
            N namespace) {
        this.scan = scan;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.keySerializer = keySerializer;
        this.ambiguousKeyPossible =
                CompositeKeySerializationUtils.isAmbiguousKeyPossible(
                        keySerializer, namespaceSerializer);
        DataOutputSerializer out = new DataOutputSerializer(32);
        try {
            CompositeKeySerializationUtils.writeNameSpace(
                    namespace, namespaceSerializer, out, ambiguousKeyPossible);
        } catch (IOException e) {
            throw new FlinkRuntimeException("Could not serialize namespace " + namespace, e);
        }
        this.namespaceBytes = out.getCopyOfBuffer();
    }

    @Override
    public boolean hasNext() {
        try {
            while (next == null && scan.hasNext()) {
                byte[] key = scan.next().key();
                in.setBuffer(key, keyGroupPrefixBytes, key.length - keyGroupPrefixBytes);
                K candidate =
                        CompositeKeySerializationUtils.readKey(
                                keySerializer, in, ambiguousKeyPossible);
                int keyEnd = key.length - in.available();
                if (!ForStSyncKeyedStateBackend.startsWith(key, keyEnd, namespaceBytes)) {
                    continue;
                }
                if (previousKey != null
                        && Arrays.equals(previousKey, 0, previousKey.length, key, 0, keyEnd)) {
                    continue;
                }
                previousKey = Arrays.copyOf(key, keyEnd);
                next = candidate;
            }
        } catch (IOException e) {
            throw new FlinkRuntimeException("Could not read a key of the state", e);
        }
        return next != null;
    }

    @Override
    public K next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        K key = next;
        next = null;
        return key;
    }
}
