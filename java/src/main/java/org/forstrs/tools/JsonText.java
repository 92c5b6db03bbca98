package org.forstrs.tools;

import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.types.Row;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Collection;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * Renders decoded state as compact JSON (one line, keys in a stable order): strings, numbers and
 * booleans as themselves; lists, arrays and tuples as arrays; maps with string keys as objects,
 * other maps as arrays of {@code [key, value]}; a {@link Row} with field names as an object,
 * without as an array; a TTL value as {@code {"value":...,"lastAccessTimestamp":...}}; a POJO as
 * an object of its fields; the default namespace as {@code "VoidNamespace"}; raw bytes as
 * {@code {"raw":"<hex>"}}; anything else as its string.
 */
public final class JsonText {

    private JsonText() {}

    public static String of(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    /** Bytes no serializer decoded. */
    public static String raw(byte[] bytes) {
        return "{\"raw\":\"" + HexFormat.of().formatHex(bytes) + "\"}";
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof CharSequence || value instanceof Character) {
            string(value.toString(), out);
        } else if (value instanceof Boolean
                || value instanceof Integer
                || value instanceof Long
                || value instanceof Short
                || value instanceof Byte
                || value instanceof BigInteger
                || value instanceof BigDecimal) {
            out.append(value);
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (Double.isFinite(d)) {
                out.append(value);
            } else {
                string(value.toString(), out);
            }
        } else if (value instanceof byte[]) {
            out.append(raw((byte[]) value));
        } else if (value instanceof TtlValue) {
            TtlValue<?> ttl = (TtlValue<?>) value;
            out.append("{\"value\":");
            write(ttl.getUserValue(), out);
            out.append(",\"lastAccessTimestamp\":");
            out.append(ttl.getLastAccessTimestamp()).append('}');
        } else if (value instanceof Row) {
            row((Row) value, out);
        } else if (value instanceof Tuple) {
            Tuple tuple = (Tuple) value;
            out.append('[');
            for (int i = 0; i < tuple.getArity(); i++) {
                out.append(i == 0 ? "" : ",");
                write(tuple.getField(i), out);
            }
            out.append(']');
        } else if (value instanceof Map) {
            map((Map<?, ?>) value, out);
        } else if (value instanceof Collection) {
            array(((Collection<?>) value).iterator(), out);
        } else if (value instanceof Object[]) {
            array(java.util.Arrays.asList((Object[]) value).iterator(), out);
        } else if (value instanceof VoidNamespace) {
            string("VoidNamespace", out);
        } else if (value instanceof Enum) {
            string(((Enum<?>) value).name(), out);
        } else if (!pojo(value, out)) {
            string(value.toString(), out);
        }
    }

    private static void row(Row row, StringBuilder out) {
        Set<String> names = row.getFieldNames(true);
        if (names == null) {
            out.append('[');
            for (int i = 0; i < row.getArity(); i++) {
                out.append(i == 0 ? "" : ",");
                write(row.getField(i), out);
            }
            out.append(']');
            return;
        }
        out.append('{');
        boolean first = true;
        for (String name : names) {
            out.append(first ? "" : ",");
            first = false;
            string(name, out);
            out.append(':');
            write(row.getField(name), out);
        }
        out.append('}');
    }

    private static void map(Map<?, ?> map, StringBuilder out) {
        boolean stringKeys = map.keySet().stream().allMatch(k -> k instanceof String);
        java.util.List<Map.Entry<?, ?>> entries = new java.util.ArrayList<>(map.entrySet());
        entries.sort((a, b) -> String.valueOf(a.getKey()).compareTo(String.valueOf(b.getKey())));
        out.append(stringKeys ? '{' : '[');
        boolean first = true;
        for (Map.Entry<?, ?> e : entries) {
            out.append(first ? "" : ",");
            first = false;
            if (stringKeys) {
                string((String) e.getKey(), out);
                out.append(':');
                write(e.getValue(), out);
            } else {
                out.append('[');
                write(e.getKey(), out);
                out.append(',');
                write(e.getValue(), out);
                out.append(']');
            }
        }
        out.append(stringKeys ? '}' : ']');
    }

    private static void array(Iterator<?> items, StringBuilder out) {
        out.append('[');
        boolean first = true;
        while (items.hasNext()) {
            out.append(first ? "" : ",");
            first = false;
            write(items.next(), out);
        }
        out.append(']');
    }

    /** A user class's instance fields, in declaration order; false for JDK classes. */
    private static boolean pojo(Object value, StringBuilder out) {
        Class<?> type = value.getClass();
        if (type.getName().startsWith("java.") || type.getName().startsWith("javax.")) {
            return false;
        }
        StringBuilder fields = new StringBuilder("{");
        boolean first = true;
        for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field field : c.getDeclaredFields()) {
                int modifiers = field.getModifiers();
                if (Modifier.isStatic(modifiers) || Modifier.isTransient(modifiers)) {
                    continue;
                }
                Object fieldValue;
                try {
                    field.setAccessible(true);
                    fieldValue = field.get(value);
                } catch (RuntimeException | IllegalAccessException e) {
                    return false;
                }
                fields.append(first ? "" : ",");
                first = false;
                string(field.getName(), fields);
                fields.append(':');
                write(fieldValue, fields);
            }
        }
        if (first) {
            return false;
        }
        out.append(fields).append('}');
        return true;
    }

    /** A JSON string literal. */
    public static void string(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    public static String string(String s) {
        StringBuilder out = new StringBuilder();
        string(s, out);
        return out.toString();
    }
}
