package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.MultisetType;
import org.apache.flink.table.types.logical.RowType;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * SQL operators' state ({@code RowData} keys, accumulators and records) as JSON: a row as an
 * array of its fields, each converted with its logical type (strings, numbers, decimals,
 * timestamps as ISO text, nested rows, arrays and maps). Kept apart from {@link JsonText} because
 * it needs Flink's table jars, which are in Flink's {@code lib/} but not on every class path: this
 * class is loaded only for a state whose serializer is a {@code RowDataSerializer}.
 */
final class RowDataText {

    private static final String SERIALIZER =
            "org.apache.flink.table.runtime.typeutils.RowDataSerializer";

    private RowDataText() {}

    /** Whether {@code serializer} writes SQL rows (compared by name: no table jar needed). */
    static boolean handles(TypeSerializer<?> serializer) {
        return serializer.getClass().getName().equals(SERIALIZER);
    }

    /** The row's fields as a JSON array; {@code serializer} is a RowDataSerializer. */
    static String of(TypeSerializer<?> serializer, Object row) {
        return JsonText.of(fields((RowData) row, fieldTypes(serializer)));
    }

    /** A one-field row's field as text (a string as itself), else the row's JSON. */
    static String text(TypeSerializer<?> serializer, Object row) {
        List<Object> fields = fields((RowData) row, fieldTypes(serializer));
        if (fields.size() == 1) {
            Object only = fields.get(0);
            return only instanceof String ? (String) only : JsonText.of(only);
        }
        return JsonText.of(fields);
    }

    /**
     * The serializer's field types. RowDataSerializer has no getter for them (its snapshot keeps
     * them private too), so they are read from its field; a missing field fails the decoding,
     * which then shows the bytes raw.
     */
    private static LogicalType[] fieldTypes(TypeSerializer<?> serializer) {
        try {
            Field types = serializer.getClass().getDeclaredField("types");
            types.setAccessible(true);
            return (LogicalType[]) types.get(serializer);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("RowDataSerializer without field types", e);
        }
    }

    private static List<Object> fields(RowData row, LogicalType[] types) {
        List<Object> fields = new ArrayList<>(types.length);
        for (int i = 0; i < types.length; i++) {
            fields.add(java(RowData.createFieldGetter(types[i], i).getFieldOrNull(row), types[i]));
        }
        return fields;
    }

    /** An internal SQL value as the Java value JsonText renders. */
    private static Object java(Object value, LogicalType type) {
        if (value == null) {
            return null;
        }
        if (value instanceof StringData) {
            return value.toString();
        }
        if (value instanceof DecimalData) {
            return ((DecimalData) value).toBigDecimal();
        }
        if (value instanceof TimestampData) {
            return value.toString();
        }
        if (value instanceof RowData && type instanceof RowType) {
            return fields(
                    (RowData) value,
                    ((RowType) type).getChildren().toArray(new LogicalType[0]));
        }
        if (value instanceof ArrayData && type instanceof ArrayType) {
            return elements((ArrayData) value, ((ArrayType) type).getElementType());
        }
        if (value instanceof MapData && type instanceof MapType) {
            MapType map = (MapType) type;
            return entries((MapData) value, map.getKeyType(), map.getValueType());
        }
        if (value instanceof MapData && type instanceof MultisetType) {
            MultisetType multiset = (MultisetType) type;
            return entries(
                    (MapData) value,
                    multiset.getElementType(),
                    new IntType());
        }
        return value;
    }

    private static List<Object> elements(ArrayData array, LogicalType elementType) {
        ArrayData.ElementGetter getter = ArrayData.createElementGetter(elementType);
        List<Object> elements = new ArrayList<>(array.size());
        for (int i = 0; i < array.size(); i++) {
            elements.add(java(getter.getElementOrNull(array, i), elementType));
        }
        return elements;
    }

    /** A map as an array of [key, value] pairs (SQL map keys need not be strings). */
    private static List<Object> entries(MapData map, LogicalType keyType, LogicalType valueType) {
        List<Object> keys = elements(map.keyArray(), keyType);
        List<Object> values = elements(map.valueArray(), valueType);
        List<Object> pairs = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            pairs.add(Arrays.asList(keys.get(i), values.get(i)));
        }
        return pairs;
    }
}
