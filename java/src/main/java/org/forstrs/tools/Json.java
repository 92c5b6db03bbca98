package org.forstrs.tools;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonGenerator;

import javax.annotation.Nullable;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;

/**
 * One JSON document of nested objects and arrays, written in order (the web monitor's answers)
 * through Flink's shaded Jackson. Calls nest as the document does: {@code open()}/{@code
 * object(name)} ... {@code close()}, {@code array(name)} ... {@code end()}.
 */
final class Json {

    static final JsonFactory FACTORY = new JsonFactory();

    private final StringWriter out = new StringWriter();
    private final JsonGenerator generator;

    Json() {
        try {
            generator = FACTORY.createGenerator(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One step of the generator; a StringWriter never fails, a misnested call does. */
    private interface Step {
        void write(JsonGenerator generator) throws IOException;
    }

    private Json write(Step step) {
        try {
            step.write(generator);
        } catch (IOException e) {
            throw new IllegalStateException("Cannot write JSON: " + e.getMessage(), e);
        }
        return this;
    }

    /** An object as an array element or as the document. */
    Json open() {
        return write(JsonGenerator::writeStartObject);
    }

    /** An object as the member {@code name}. */
    Json object(String name) {
        return write(g -> g.writeObjectFieldStart(name));
    }

    Json close() {
        return write(JsonGenerator::writeEndObject);
    }

    /** An array as the member {@code name}. */
    Json array(String name) {
        return write(g -> g.writeArrayFieldStart(name));
    }

    Json end() {
        return write(JsonGenerator::writeEndArray);
    }

    Json field(String name, @Nullable String value) {
        return write(g -> g.writeStringField(name, value));
    }

    Json field(String name, long value) {
        return write(g -> g.writeNumberField(name, value));
    }

    Json field(String name, @Nullable Long value) {
        return value == null ? write(g -> g.writeNullField(name)) : field(name, value.longValue());
    }

    Json field(String name, boolean value) {
        return write(g -> g.writeBooleanField(name, value));
    }

    /** A member whose value is JSON text already (a decoded key or value). */
    Json raw(String name, String json) {
        return write(
                g -> {
                    g.writeFieldName(name);
                    g.writeRawValue(json);
                });
    }

    /** A string as an array element. */
    Json element(String value) {
        return write(g -> g.writeString(value));
    }

    @Override
    public String toString() {
        write(JsonGenerator::flush);
        return out.toString();
    }
}
