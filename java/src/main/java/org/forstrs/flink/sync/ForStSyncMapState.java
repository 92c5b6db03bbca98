package org.forstrs.flink.sync;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.queryablestate.client.state.serialization.KvStateSerializer;
import org.apache.flink.runtime.state.internal.InternalMapState;
import org.apache.flink.runtime.state.ttl.TtlAwareSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.StateMigrationException;

import org.forstrs.flink.state.ValueSerde;

import java.io.IOException;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Map state in Flink's layout: one entry per map entry (key-group prefix, key, namespace, user
 * key), the value a 1-byte is-null flag then the value's bytes. Iteration is a prefix scan read
 * in chunks; clear is one prefix delete, isEmpty one prefix probe.
 */
final class ForStSyncMapState<K, N, UK, UV> extends AbstractForStSyncState<K, N, Map<UK, UV>>
        implements InternalMapState<K, N, UK, UV> {

    private TypeSerializer<UK> userKeySerializer;
    private TypeSerializer<UV> userValueSerializer;

    ForStSyncMapState(
            ForStSyncKeyedStateBackend<K> backend,
            int cf,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<Map<UK, UV>> valueSerializer,
            Map<UK, UV> defaultValue) {
        super(backend, cf, namespaceSerializer, valueSerializer, defaultValue);
        serializersUpdated();
    }

    @Override
    void serializersUpdated() {
        MapSerializer<UK, UV> map = (MapSerializer<UK, UV>) valueSerializer;
        userKeySerializer = map.getKeySerializer();
        userValueSerializer = map.getValueSerializer();
    }

    private byte[] entryKey(UK userKey) throws IOException {
        return backend.keyBuilder()
                .buildCompositeKeyNamesSpaceUserKey(
                        currentNamespace, namespaceSerializer, userKey, userKeySerializer);
    }

    static <T> byte[] entryValue(TypeSerializer<T> serializer, T value) throws IOException {
        DataOutputSerializer out = ValueSerde.output();
        out.writeBoolean(value == null);
        if (value != null) {
            serializer.serialize(value, out);
        }
        return out.getCopyOfBuffer();
    }

    static <T> T readValue(TypeSerializer<T> serializer, byte[] bytes) throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(bytes);
        return in.readBoolean() ? null : serializer.deserialize(in);
    }

    static <T> T readUserKey(TypeSerializer<T> serializer, byte[] key, int prefixLength)
            throws IOException {
        return serializer.deserialize(
                new DataInputDeserializer(key, prefixLength, key.length - prefixLength));
    }

    @Override
    public UV get(UK userKey) throws IOException {
        byte[] bytes = access.get(cf, entryKey(userKey));
        return bytes == null ? null : readValue(userValueSerializer, bytes);
    }

    @Override
    public void put(UK userKey, UV value) throws IOException {
        access.put(cf, entryKey(userKey), entryValue(userValueSerializer, value));
    }

    @Override
    public void putAll(Map<UK, UV> entries) throws IOException {
        if (entries == null) {
            return;
        }
        for (Map.Entry<UK, UV> entry : entries.entrySet()) {
            put(entry.getKey(), entry.getValue());
        }
    }

    @Override
    public void remove(UK userKey) throws IOException {
        access.delete(cf, entryKey(userKey));
    }

    @Override
    public boolean contains(UK userKey) throws IOException {
        return access.get(cf, entryKey(userKey)) != null;
    }

    @Override
    public Iterable<Map.Entry<UK, UV>> entries() {
        return this::iterator;
    }

    @Override
    public Iterable<UK> keys() {
        return () -> map(iterator(), Map.Entry::getKey);
    }

    @Override
    public Iterable<UV> values() {
        return () -> map(iterator(), Map.Entry::getValue);
    }

    @Override
    public Iterator<Map.Entry<UK, UV>> iterator() {
        byte[] prefix = currentKey();
        return new EntryIterator(prefix, new PrefixScan(access, cf, prefix));
    }

    @Override
    public boolean isEmpty() {
        return !access.prefixExists(cf, currentKey());
    }

    @Override
    public void clear() {
        access.deletePrefix(cf, currentKey());
    }

    /** Every entry of the queried (key, namespace), in Flink's queryable-state map format. */
    @Override
    public byte[] getSerializedValue(
            byte[] serializedKeyAndNamespace,
            TypeSerializer<K> safeKeySerializer,
            TypeSerializer<N> safeNamespaceSerializer,
            TypeSerializer<Map<UK, UV>> safeValueSerializer)
            throws Exception {
        byte[] prefix =
                queriedKey(serializedKeyAndNamespace, safeKeySerializer, safeNamespaceSerializer);
        MapSerializer<UK, UV> serializer = (MapSerializer<UK, UV>) safeValueSerializer;
        TypeSerializer<UK> keys = serializer.getKeySerializer();
        TypeSerializer<UV> values = serializer.getValueSerializer();
        List<Map.Entry<UK, UV>> entries = new ArrayList<>();
        PrefixScan scan = new PrefixScan(access, cf, prefix);
        while (scan.hasNext()) {
            PrefixScan.Entry entry = scan.next();
            entries.add(
                    new AbstractMap.SimpleImmutableEntry<>(
                            readUserKey(keys, entry.key(), prefix.length),
                            readValue(values, entry.value())));
        }
        if (entries.isEmpty()) {
            return null;
        }
        return KvStateSerializer.serializeMap(entries, keys, values);
    }

    /** Only the values change: the user key bytes stay (their serializer must be as is). */
    @Override
    @SuppressWarnings("unchecked")
    void migrateSerializedValue(
            DataInputDeserializer in,
            DataOutputSerializer out,
            TypeSerializer<Map<UK, UV>> prior,
            TypeSerializer<Map<UK, UV>> next,
            TtlTimeProvider ttlTimeProvider)
            throws StateMigrationException {
        TtlAwareSerializer<UV, ?> priorValues =
                ((TtlAwareSerializer.TtlAwareMapSerializer<UK, UV>) prior).getValueSerializer();
        TtlAwareSerializer<UV, ?> nextValues =
                ((TtlAwareSerializer.TtlAwareMapSerializer<UK, UV>) next).getValueSerializer();
        try {
            boolean isNull = in.readBoolean();
            out.writeBoolean(isNull);
            if (!isNull) {
                nextValues.migrateValueFromPriorSerializer(
                        priorValues, () -> priorValues.deserialize(in), out, ttlTimeProvider);
            }
        } catch (Exception e) {
            throw new StateMigrationException("Could not migrate a map value of the state", e);
        }
    }

    private static <T, R> Iterator<R> map(
            Iterator<T> source, java.util.function.Function<T, R> function) {
        return new Iterator<R>() {
            @Override
            public boolean hasNext() {
                return source.hasNext();
            }

            @Override
            public R next() {
                return function.apply(source.next());
            }

            @Override
            public void remove() {
                source.remove();
            }
        };
    }

    /** Entries of one (key, namespace); remove and setValue write through to the engine. */
    private final class EntryIterator implements Iterator<Map.Entry<UK, UV>> {
        private final byte[] prefix;
        private final PrefixScan scan;
        private byte[] lastKey;

        EntryIterator(byte[] prefix, PrefixScan scan) {
            this.prefix = prefix;
            this.scan = scan;
        }

        @Override
        public boolean hasNext() {
            return scan.hasNext();
        }

        @Override
        public Map.Entry<UK, UV> next() {
            PrefixScan.Entry entry = scan.next();
            lastKey = entry.key();
            try {
                return new StoredEntry(
                        entry.key(),
                        readUserKey(userKeySerializer, entry.key(), prefix.length),
                        readValue(userValueSerializer, entry.value()));
            } catch (IOException e) {
                throw new IllegalStateException("Could not read a map state entry", e);
            }
        }

        @Override
        public void remove() {
            if (lastKey == null) {
                throw new IllegalStateException("next() was not called before remove()");
            }
            access.delete(cf, lastKey);
            lastKey = null;
        }
    }

    /** A map entry read from the engine; {@link #setValue} writes the new value back. */
    private final class StoredEntry implements Map.Entry<UK, UV> {
        private final byte[] key;
        private final UK userKey;
        private UV value;

        StoredEntry(byte[] key, UK userKey, UV value) {
            this.key = key;
            this.userKey = userKey;
            this.value = value;
        }

        @Override
        public UK getKey() {
            return userKey;
        }

        @Override
        public UV getValue() {
            return value;
        }

        @Override
        public UV setValue(UV newValue) {
            UV old = value;
            try {
                access.put(cf, key, entryValue(userValueSerializer, newValue));
            } catch (IOException e) {
                throw new IllegalStateException("Could not write a map state entry", e);
            }
            value = newValue;
            return old;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Map.Entry)) {
                return false;
            }
            Map.Entry<?, ?> other = (Map.Entry<?, ?>) o;
            return java.util.Objects.equals(userKey, other.getKey())
                    && java.util.Objects.equals(value, other.getValue());
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hashCode(userKey) ^ java.util.Objects.hashCode(value);
        }

        @Override
        public String toString() {
            return userKey + "=" + value;
        }
    }
}
