package org.forstrs.flink.async;

import org.apache.flink.api.common.state.v2.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.runtime.state.v2.RegisteredKeyAndUserKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.v2.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.util.StateMigrationException;

/**
 * Checks that a restored state is asked for with serializers that read its bytes as they are,
 * and makes the restored meta info use the new serializers. The engine stores serialized bytes
 * and never migrates them, so "compatible after migration" is refused like "incompatible".
 */
final class StateSerializerCheck {

    private StateSerializerCheck() {}

    @SuppressWarnings("unchecked")
    static <N, SV> void check(
            RegisteredKeyValueStateBackendMetaInfo<?, ?> restored,
            StateDescriptor<SV> stateDesc,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<?> userKeySerializer)
            throws StateMigrationException {
        restored.checkStateMetaInfo(stateDesc);
        RegisteredKeyValueStateBackendMetaInfo<N, SV> info =
                (RegisteredKeyValueStateBackendMetaInfo<N, SV>) restored;
        requireAsIs(
                "namespace",
                stateDesc,
                info.getNamespaceSerializer(),
                info.updateNamespaceSerializer(namespaceSerializer));
        requireAsIs(
                "value",
                stateDesc,
                info.getStateSerializer(),
                info.updateStateSerializer(stateDesc.getSerializer()));
        if (userKeySerializer != null) {
            RegisteredKeyAndUserKeyValueStateBackendMetaInfo<N, Object, SV> map =
                    (RegisteredKeyAndUserKeyValueStateBackendMetaInfo<N, Object, SV>) restored;
            requireAsIs(
                    "map key",
                    stateDesc,
                    map.getUserKeySerializer(),
                    map.updateUserKeySerializer((TypeSerializer<Object>) userKeySerializer));
        }
    }

    private static void requireAsIs(
            String what,
            StateDescriptor<?> stateDesc,
            TypeSerializer<?> previous,
            TypeSerializerSchemaCompatibility<?> compatibility)
            throws StateMigrationException {
        if (compatibility.isCompatibleAfterMigration() || compatibility.isIncompatible()) {
            throw new StateMigrationException(
                    "State '"
                            + stateDesc.getStateId()
                            + "': the new "
                            + what
                            + " serializer must read the restored data as it is (previous: "
                            + previous
                            + "); the ForSt-RS state backend does not migrate state");
        }
    }
}
