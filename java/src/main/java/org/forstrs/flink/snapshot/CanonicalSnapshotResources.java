package org.forstrs.flink.snapshot;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.FullSnapshotResources;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyValueStateIterator;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import java.util.List;

/**
 * A keyed backend's states for Flink's {@code FullSnapshotAsyncWriter}, which writes them in the
 * unified (canonical) savepoint format that Flink's heap and RocksDB backends read: the meta info
 * of every state (key-value states and timer queues) and all their entries in key-group order.
 * The entries are read when the writer runs; the backend runs it synchronously, so they are those
 * of the moment of the savepoint.
 */
public final class CanonicalSnapshotResources<K> implements FullSnapshotResources<K> {

    private final List<CanonicalState> states;
    private final List<StateMetaInfoSnapshot> metaInfos;
    private final KeyGroupRange keyGroupRange;
    private final TypeSerializer<K> keySerializer;
    private final int keyGroupPrefixBytes;
    private final StreamCompressionDecorator compression;

    public CanonicalSnapshotResources(
            List<CanonicalState> states,
            KeyGroupRange keyGroupRange,
            TypeSerializer<K> keySerializer,
            int keyGroupPrefixBytes,
            StreamCompressionDecorator compression) {
        this.states = List.copyOf(states);
        this.metaInfos = this.states.stream().map(CanonicalState::metaInfo).toList();
        this.keyGroupRange = keyGroupRange;
        this.keySerializer = keySerializer;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.compression = compression;
    }

    @Override
    public List<StateMetaInfoSnapshot> getMetaInfoSnapshots() {
        return metaInfos;
    }

    @Override
    public KeyValueStateIterator createKVStateIterator() {
        return new KeyGroupMergeIterator(states, keyGroupPrefixBytes);
    }

    @Override
    public KeyGroupRange getKeyGroupRange() {
        return keyGroupRange;
    }

    @Override
    public TypeSerializer<K> getKeySerializer() {
        return keySerializer;
    }

    @Override
    public StreamCompressionDecorator getStreamCompressionDecorator() {
        return compression;
    }

    @Override
    public void release() {}
}
