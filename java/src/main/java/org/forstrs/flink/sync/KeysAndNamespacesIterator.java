package org.forstrs.flink.sync;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.util.FlinkRuntimeException;

import java.io.IOException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

/** The distinct (key, namespace) pairs of one state, in stored order. */
final class KeysAndNamespacesIterator<K, N> implements Iterator<Tuple2<K, N>> {

    private final PrefixScan scan;
    private final int keyGroupPrefixBytes;
    private final TypeSerializer<K> keySerializer;
    private final TypeSerializer<N> namespaceSerializer;
    private final boolean ambiguousKeyPossible;
    private final DataInputDeserializer in = new DataInputDeserializer();
    private byte[] previous;
    private Tuple2<K, N> next;

    KeysAndNamespacesIterator(
            PrefixScan scan,
            int keyGroupPrefixBytes,
            TypeSerializer<K> keySerializer,
            TypeSerializer<N> namespaceSerializer) {
        this.scan = scan;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.keySerializer = keySerializer;
        this.namespaceSerializer = namespaceSerializer;
        this.ambiguousKeyPossible =
                CompositeKeySerializationUtils.isAmbiguousKeyPossible(
                        keySerializer, namespaceSerializer);
    }

    @Override
    public boolean hasNext() {
        try {
            while (next == null && scan.hasNext()) {
                byte[] key = scan.next().key();
                in.setBuffer(key, keyGroupPrefixBytes, key.length - keyGroupPrefixBytes);
                K k = CompositeKeySerializationUtils.readKey(keySerializer, in, ambiguousKeyPossible);
                N namespace =
                        CompositeKeySerializationUtils.readNamespace(
                                namespaceSerializer, in, ambiguousKeyPossible);
                int end = key.length - in.available();
                if (previous != null
                        && Arrays.equals(previous, 0, previous.length, key, 0, end)) {
                    continue;
                }
                previous = Arrays.copyOf(key, end);
                next = Tuple2.of(k, namespace);
            }
        } catch (IOException e) {
            throw new FlinkRuntimeException("Could not read a key of the state", e);
        }
        return next != null;
    }

    @Override
    public Tuple2<K, N> next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        Tuple2<K, N> result = next;
        next = null;
        return result;
    }
}
