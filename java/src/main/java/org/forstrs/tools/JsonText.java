package org.forstrs.tools;

import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonGenerator;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.io.JsonStringEncoder;
import org.apache.flink.types.Row;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Renders decoded state as compact JSON (one line, keys in a stable order) through Flink's shaded
 * Jackson: strings, numbers and booleans as themselves; lists, arrays and tuples as arrays; maps
 * with string keys as objects, other maps as arrays of {@code [key, value]}; a {@link Row} with
 * field names as an object, without as an array; a TTL value as {@code
 * {"value":...,"lastAccessTimestamp":...}}; a POJO as an object of its fields; the default
 * namespace as {@code "VoidNamespace"}; raw bytes as {@code {"raw":"<hex>"}}; anything else as
 * its string. A value that contains itself is written as {@value #CYCLE} where it recurs, and
 * nesting deeper than {@value #MAX_DEPTH} as {@value #TOO_DEEP}: a user's type cannot make the
 * tools loop or overflow the stack.
 */
public final class JsonText {

    static final String CYCLE = "<cycle>";
    static final String TOO_DEEP = "<nested too deep>";
    static final int MAX_DEPTH = 64;

    private JsonText() {}

    public static String of(Object value) {
        StringWriter out = new StringWriter();
        try (JsonGenerator generator = Json.FACTORY.createGenerator(out)) {
            new Walk(generator).write(value, 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    /** Bytes no serializer decoded. */
    public static String raw(byte[] bytes) {
        return "{\"raw\":\"" + HexFormat.of().formatHex(bytes) + "\"}";
    }

    /** A JSON string literal. */
    public static String string(String s) {
        return '"' + new String(JsonStringEncoder.getInstance().quoteAsString(s)) + '"';
    }

    /** One rendering: the containers on the path to the value being written. */
    private static final class Walk {
        private final JsonGenerator out;
        private final Set<Object> path = Collections.newSetFromMap(new IdentityHashMap<>());

        Walk(JsonGenerator out) {
            this.out = out;
        }

        void write(Object value, int depth) throws IOException {
            if (value == null) {
                out.writeNull();
            } else if (value instanceof CharSequence || value instanceof Character) {
                out.writeString(value.toString());
            } else if (value instanceof Boolean) {
                out.writeBoolean((Boolean) value);
            } else if (value instanceof Integer
                    || value instanceof Long
                    || value instanceof Short
                    || value instanceof Byte) {
                out.writeNumber(((Number) value).longValue());
            } else if (value instanceof BigInteger) {
                out.writeNumber((BigInteger) value);
            } else if (value instanceof BigDecimal) {
                out.writeNumber(value.toString());
            } else if (value instanceof Double || value instanceof Float) {
                double d = ((Number) value).doubleValue();
                if (Double.isFinite(d)) {
                    out.writeNumber(value.toString());
                } else {
                    out.writeString(value.toString());
                }
            } else if (value instanceof byte[]) {
                out.writeRawValue(raw((byte[]) value));
            } else if (value instanceof VoidNamespace) {
                out.writeString("VoidNamespace");
            } else if (value instanceof Enum) {
                out.writeString(((Enum<?>) value).name());
            } else if (depth >= MAX_DEPTH) {
                out.writeString(TOO_DEEP);
            } else if (!path.add(value)) {
                out.writeString(CYCLE);
            } else {
                try {
                    container(value, depth + 1);
                } finally {
                    path.remove(value);
                }
            }
        }

        private void container(Object value, int depth) throws IOException {
            if (value instanceof TtlValue) {
                TtlValue<?> ttl = (TtlValue<?>) value;
                out.writeStartObject();
                out.writeFieldName("value");
                write(ttl.getUserValue(), depth);
                out.writeNumberField("lastAccessTimestamp", ttl.getLastAccessTimestamp());
                out.writeEndObject();
            } else if (value instanceof Row) {
                row((Row) value, depth);
            } else if (value instanceof Tuple) {
                Tuple tuple = (Tuple) value;
                out.writeStartArray();
                for (int i = 0; i < tuple.getArity(); i++) {
                    write(tuple.getField(i), depth);
                }
                out.writeEndArray();
            } else if (value instanceof Map) {
                map((Map<?, ?>) value, depth);
            } else if (value instanceof Collection) {
                array(((Collection<?>) value).iterator(), depth);
            } else if (value instanceof Object[]) {
                array(Arrays.asList((Object[]) value).iterator(), depth);
            } else if (!pojo(value, depth)) {
                out.writeString(value.toString());
            }
        }

        private void row(Row row, int depth) throws IOException {
            Set<String> names = row.getFieldNames(true);
            if (names == null) {
                out.writeStartArray();
                for (int i = 0; i < row.getArity(); i++) {
                    write(row.getField(i), depth);
                }
                out.writeEndArray();
                return;
            }
            out.writeStartObject();
            for (String name : names) {
                out.writeFieldName(name);
                write(row.getField(name), depth);
            }
            out.writeEndObject();
        }

        private void map(Map<?, ?> map, int depth) throws IOException {
            boolean stringKeys = map.keySet().stream().allMatch(k -> k instanceof String);
            List<Map.Entry<?, ?>> entries = new ArrayList<>(map.entrySet());
            entries.sort((a, b) -> String.valueOf(a.getKey()).compareTo(String.valueOf(b.getKey())));
            if (stringKeys) {
                out.writeStartObject();
                for (Map.Entry<?, ?> e : entries) {
                    out.writeFieldName((String) e.getKey());
                    write(e.getValue(), depth);
                }
                out.writeEndObject();
                return;
            }
            out.writeStartArray();
            for (Map.Entry<?, ?> e : entries) {
                out.writeStartArray();
                write(e.getKey(), depth);
                write(e.getValue(), depth);
                out.writeEndArray();
            }
            out.writeEndArray();
        }

        private void array(Iterator<?> items, int depth) throws IOException {
            out.writeStartArray();
            while (items.hasNext()) {
                write(items.next(), depth);
            }
            out.writeEndArray();
        }

        /**
         * A user class's instance fields, in declaration order; false (nothing written) for JDK
         * classes, classes without fields and fields that cannot be read.
         */
        private boolean pojo(Object value, int depth) throws IOException {
            Class<?> type = value.getClass();
            if (type.getName().startsWith("java.") || type.getName().startsWith("javax.")) {
                return false;
            }
            List<Field> fields = new ArrayList<>();
            List<Object> values = new ArrayList<>();
            for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
                for (Field field : c.getDeclaredFields()) {
                    int modifiers = field.getModifiers();
                    if (Modifier.isStatic(modifiers) || Modifier.isTransient(modifiers)) {
                        continue;
                    }
                    try {
                        field.setAccessible(true);
                        values.add(field.get(value));
                    } catch (RuntimeException | IllegalAccessException e) {
                        return false;
                    }
                    fields.add(field);
                }
            }
            if (fields.isEmpty()) {
                return false;
            }
            out.writeStartObject();
            for (int i = 0; i < fields.size(); i++) {
                out.writeFieldName(fields.get(i).getName());
                write(values.get(i), depth);
            }
            out.writeEndObject();
            return true;
        }
    }
}
