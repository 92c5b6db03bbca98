package org.forstrs.tools;

import javax.annotation.Nullable;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Writes one JSON document of nested objects and arrays in order (the web monitor's answers):
 * it places the commas, {@link JsonText} quotes the strings. Calls nest as the document does:
 * {@code open()}/{@code object(name)} ... {@code close()}, {@code array(name)} ... {@code end()}.
 */
final class Json {

    private final StringBuilder out = new StringBuilder();
    /** Per open object or array: whether it has no member yet. */
    private final Deque<Boolean> empty = new ArrayDeque<>();

    /** An object as an array element or as the document. */
    Json open() {
        comma();
        out.append('{');
        empty.push(true);
        return this;
    }

    /** An object as the member {@code name}. */
    Json object(String name) {
        name(name);
        out.append('{');
        empty.push(true);
        return this;
    }

    Json close() {
        empty.pop();
        out.append('}');
        return this;
    }

    /** An array as the member {@code name}. */
    Json array(String name) {
        name(name);
        out.append('[');
        empty.push(true);
        return this;
    }

    Json end() {
        empty.pop();
        out.append(']');
        return this;
    }

    Json field(String name, @Nullable String value) {
        name(name);
        if (value == null) {
            out.append("null");
        } else {
            JsonText.string(value, out);
        }
        return this;
    }

    Json field(String name, long value) {
        name(name);
        out.append(value);
        return this;
    }

    Json field(String name, @Nullable Long value) {
        name(name);
        out.append(value == null ? "null" : value.toString());
        return this;
    }

    Json field(String name, boolean value) {
        name(name);
        out.append(value);
        return this;
    }

    /** A member whose value is JSON text already (a decoded key or value). */
    Json raw(String name, String json) {
        name(name);
        out.append(json);
        return this;
    }

    /** A string as an array element. */
    Json element(String value) {
        comma();
        JsonText.string(value, out);
        return this;
    }

    private void name(String name) {
        comma();
        JsonText.string(name, out);
        out.append(':');
    }

    private void comma() {
        if (!empty.isEmpty()) {
            if (!empty.pop()) {
                out.append(',');
            }
            empty.push(false);
        }
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
