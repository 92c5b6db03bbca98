package org.forstrs.flink.async;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;

import javax.annotation.Nullable;

import java.util.function.Supplier;

/**
 * Serializes a state's keys in Flink's (and ForSt's) layout: key-group prefix, key, namespace
 * (plus the user key for map state), through Flink's {@link SerializedCompositeKeyBuilder}. Safe
 * to use from several threads (serializers are per thread).
 *
 * <p>For the default namespace ({@link VoidNamespace}) the key bytes are the same for every state
 * of a record, so they are cached in the record's {@link RecordSlot}, which batches ordered for the
 * executor's threads have (with the inline coordinator there is none, and each request serializes
 * its key).
 */
final class KeySerde<K, N> {

    private final ThreadLocal<SerializedCompositeKeyBuilder<K>> builder;
    private final ThreadLocal<TypeSerializer<N>> namespaceSerializer;
    private final N defaultNamespace;
    private final boolean voidNamespace;

    KeySerde(
            Supplier<SerializedCompositeKeyBuilder<K>> builderFactory,
            TypeSerializer<N> namespaceSerializer,
            N defaultNamespace) {
        this.builder = ThreadLocal.withInitial(builderFactory);
        this.namespaceSerializer = ThreadLocal.withInitial(namespaceSerializer::duplicate);
        this.defaultNamespace = defaultNamespace;
        this.voidNamespace =
                defaultNamespace instanceof VoidNamespace
                        && namespaceSerializer instanceof VoidNamespaceSerializer;
    }

    /**
     * Key-group prefix, key and namespace of the request's record; a null namespace (never set
     * on the record for this state) is the state's default namespace.
     */
    byte[] key(RecordContext<K> context, @Nullable N requestNamespace) {
        N namespace = requestNamespace == null ? defaultNamespace : requestNamespace;
        boolean cacheable = voidNamespace && namespace instanceof VoidNamespace;
        RecordSlot slot = cacheable ? RecordSlot.find(context) : null;
        if (slot != null && slot.defaultNamespaceKey != null) {
            return slot.defaultNamespaceKey;
        }
        SerializedCompositeKeyBuilder<K> b = builder.get();
        b.setKeyAndKeyGroup(context.getKey(), context.getKeyGroup());
        byte[] key = b.buildCompositeKeyNamespace(namespace, namespaceSerializer.get());
        if (slot != null) {
            slot.defaultNamespaceKey = key;
        }
        return key;
    }

}
