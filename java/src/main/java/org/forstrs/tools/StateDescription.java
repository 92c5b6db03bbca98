package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot.CommonOptionsKeys;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot.CommonSerializerKeys;

import javax.annotation.Nullable;

import java.util.Locale;

/**
 * What the checkpoint's meta info says of one state: its kind ({@code value}, {@code list},
 * {@code map}, {@code reducing}, {@code aggregating}; {@code timers} for a timer queue), whether
 * values carry a TTL timestamp, and the serializers to decode its keys, namespaces, user keys and
 * values (null where the serializer's snapshot cannot restore one here, such as a user class not
 * on the class path: those bytes are shown raw).
 */
public final class StateDescription {

    public final String name;
    public final String kind;
    /** {@code KEY_VALUE} (State V1), {@code KEY_VALUE_V2} (State V2), {@code PRIORITY_QUEUE}. */
    public final String backendType;
    public final boolean ttl;
    @Nullable public final TypeSerializer<?> namespace;
    @Nullable public final TypeSerializer<?> userKey;
    /** For a list state, the element's; for a map state, the user value's. */
    @Nullable public final TypeSerializer<?> value;

    private StateDescription(StateMetaInfoSnapshot snapshot) {
        this.name = snapshot.getName();
        this.backendType = snapshot.getBackendStateType().name();
        String type = snapshot.getOption(CommonOptionsKeys.KEYED_STATE_TYPE);
        this.kind =
                snapshot.getBackendStateType()
                                == StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE
                        ? "timers"
                        : type == null ? "unknown" : type.toLowerCase(Locale.ROOT);
        this.namespace = restore(snapshot, CommonSerializerKeys.NAMESPACE_SERIALIZER);
        TypeSerializer<?> stateValue = restore(snapshot, CommonSerializerKeys.VALUE_SERIALIZER);
        TypeSerializer<?> userKey = restore(snapshot, CommonSerializerKeys.USER_KEY_SERIALIZER);
        // State V1 keeps a map's and a list's serializers inside the state serializer.
        if (stateValue instanceof MapSerializer) {
            MapSerializer<?, ?> map = (MapSerializer<?, ?>) stateValue;
            userKey = userKey == null ? map.getKeySerializer() : userKey;
            stateValue = map.getValueSerializer();
        } else if (stateValue instanceof ListSerializer) {
            stateValue = ((ListSerializer<?>) stateValue).getElementSerializer();
        }
        this.userKey = userKey;
        this.value = stateValue;
        this.ttl = stateValue != null && stateValue.getClass().getName().contains(".ttl.");
    }

    public static StateDescription of(StateMetaInfoSnapshot snapshot) {
        return new StateDescription(snapshot);
    }

    @Nullable
    private static TypeSerializer<?> restore(
            StateMetaInfoSnapshot snapshot, CommonSerializerKeys key) {
        TypeSerializerSnapshot<?> serializer = snapshot.getTypeSerializerSnapshot(key);
        if (serializer == null) {
            return null;
        }
        try {
            return serializer.restoreSerializer();
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }

    /** A serializer's name for people: its class, with a list's, map's or TTL's inner ones. */
    public static String describe(@Nullable TypeSerializer<?> serializer) {
        if (serializer == null) {
            return "-";
        }
        if (serializer instanceof MapSerializer) {
            MapSerializer<?, ?> map = (MapSerializer<?, ?>) serializer;
            return "MapSerializer<"
                    + describe(map.getKeySerializer())
                    + ","
                    + describe(map.getValueSerializer())
                    + ">";
        }
        if (serializer instanceof ListSerializer) {
            return "ListSerializer<"
                    + describe(((ListSerializer<?>) serializer).getElementSerializer())
                    + ">";
        }
        return serializer.getClass().getSimpleName();
    }
}
