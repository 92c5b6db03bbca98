package org.forstrs.tools;

import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarCharType;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SQL operators' {@code RowData} state (keys, values of every common logical type, values under a
 * TTL) and timer queue entries decode to the JSON the tools print; bytes that do not decode are
 * shown raw instead of failing.
 */
class EntryDecoderTest {

    private static final int PREFIX_BYTES = 1;

    private static final RowDataSerializer KEY = new RowDataSerializer(VarCharType.STRING_TYPE);

    private static final RowDataSerializer VALUE =
            new RowDataSerializer(
                    VarCharType.STRING_TYPE,
                    new BigIntType(),
                    new DecimalType(10, 2),
                    new TimestampType(3),
                    RowType.of(new IntType(), VarCharType.STRING_TYPE),
                    new ArrayType(new IntType()),
                    new MapType(VarCharType.STRING_TYPE, new BigIntType()),
                    new IntType());

    private static RowData value() {
        return GenericRowData.of(
                StringData.fromString("k7"),
                42L,
                DecimalData.fromBigDecimal(new BigDecimal("12.50"), 10, 2),
                TimestampData.fromLocalDateTime(
                        LocalDateTime.of(2026, 12, 5, 10, 30, 0, 5_000_000)),
                GenericRowData.of(3, StringData.fromString("nested")),
                new GenericArrayData(new Integer[] {1, 2, 3}),
                new GenericMapData(Map.of(StringData.fromString("a"), 9L)),
                null);
    }

    private static final String VALUE_JSON =
            "[\"k7\",42,12.50,\"2026-12-05T10:30:00.005\",[3,\"nested\"],[1,2,3],[[\"a\",9]]"
                    + ",null]";

    @Test
    void sqlRowsDecodeWithTheirFieldTypes() throws IOException {
        EntryDecoder decoder = valueDecoder(VALUE);
        EntryDecoder.Entry entry = decoder.decode(key("k7"), bytes(VALUE, value()));
        assertThat(entry.key()).isEqualTo("[\"k7\"]");
        assertThat(entry.keyText()).as("a one-field row key matches as its field").isEqualTo("k7");
        assertThat(entry.namespace()).isEqualTo("\"VoidNamespace\"");
        assertThat(entry.value()).isEqualTo(VALUE_JSON);
    }

    @Test
    void sqlRowsUnderATtlDecodeWithTheirFieldTypes() throws IOException {
        TypeSerializer<TtlValue<RowData>> ttl =
                new TtlStateFactory.TtlSerializer<>(LongSerializer.INSTANCE, VALUE);
        EntryDecoder decoder = valueDecoder(ttl);
        EntryDecoder.Entry entry =
                decoder.decode(key("k7"), bytes(ttl, new TtlValue<>(value(), 1234L)));
        assertThat(entry.value())
                .isEqualTo("{\"value\":" + VALUE_JSON + ",\"lastAccessTimestamp\":1234}");
    }

    @Test
    void bytesThatAreNoRowAreShownRaw() throws IOException {
        EntryDecoder decoder = valueDecoder(VALUE);
        assertThat(decoder.decode(key("k7"), new byte[] {1, 2, 3}).value())
                .isEqualTo("{\"raw\":\"010203\"}");
    }

    @Test
    void timersDecodeToKeyNamespaceAndTimestamp() throws IOException {
        TimerSerializer<RowData, VoidNamespace> timers =
                new TimerSerializer<>(KEY, VoidNamespaceSerializer.INSTANCE);
        StateDescription state =
                StateDescription.of(
                        new RegisteredPriorityQueueStateBackendMetaInfo<>(
                                        "_timer_state/event_user-timers", timers)
                                .snapshot());
        assertThat(state.kind).isEqualTo("timers");
        EntryDecoder decoder = new EntryDecoder(state, KEY, PREFIX_BYTES);
        DataOutputSerializer out = new DataOutputSerializer(32);
        CompositeKeySerializationUtils.writeKeyGroup(5, PREFIX_BYTES, out);
        timers.serialize(
                new TimerHeapInternalTimer<>(
                        1_000_003L,
                        GenericRowData.of(StringData.fromString("k7")),
                        VoidNamespace.INSTANCE),
                out);
        EntryDecoder.Entry entry = decoder.decode(out.getCopyOfBuffer(), new byte[0]);
        assertThat(entry.keyGroup()).isEqualTo(5);
        assertThat(entry.key()).isEqualTo("[\"k7\"]");
        assertThat(entry.keyText()).isEqualTo("k7");
        assertThat(entry.namespace()).isEqualTo("\"VoidNamespace\"");
        assertThat(entry.userKey()).isNull();
        assertThat(entry.value()).isEqualTo("{\"timestamp\":1000003}");

        assertThat(decoder.decode(new byte[] {5, 1}, new byte[0]).key())
                .as("a truncated timer")
                .isEqualTo("{\"raw\":\"01\"}");
    }

    private static EntryDecoder valueDecoder(TypeSerializer<?> valueSerializer) {
        StateDescription state =
                StateDescription.of(
                        new RegisteredKeyValueStateBackendMetaInfo<>(
                                        StateDescriptor.Type.VALUE,
                                        "accState",
                                        VoidNamespaceSerializer.INSTANCE,
                                        valueSerializer)
                                .snapshot());
        return new EntryDecoder(state, KEY, PREFIX_BYTES);
    }

    /** The store key of a one-field row key {@code (k)} in the default namespace. */
    private static byte[] key(String k) {
        SerializedCompositeKeyBuilder<RowData> builder =
                new SerializedCompositeKeyBuilder<>(KEY, PREFIX_BYTES, 32);
        builder.setKeyAndKeyGroup(GenericRowData.of(StringData.fromString(k)), 3);
        return builder.buildCompositeKeyNamespace(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
    }

    private static <T> byte[] bytes(TypeSerializer<T> serializer, T value) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        serializer.serialize(value, out);
        return out.getCopyOfBuffer();
    }
}
