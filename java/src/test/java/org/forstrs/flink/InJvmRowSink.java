package org.forstrs.flink;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.types.Row;

import java.io.Serializable;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Hands each row to a checker living in the test's JVM (where the MiniCluster runs), found by id:
 * cheaper than collecting millions of changelog rows through the client.
 */
final class InJvmRowSink implements Sink<Row> {
    private static final long serialVersionUID = 1L;

    /** Finds the checker of an id; a lambda over a static field, so nothing is serialized. */
    interface Lookup extends Serializable {
        Consumer<Row> find(String id);
    }

    private final String id;
    private final Lookup lookup;

    InJvmRowSink(String id, Lookup lookup) {
        this.id = id;
        this.lookup = lookup;
    }

    @Override
    public SinkWriter<Row> createWriter(WriterInitContext context) {
        Consumer<Row> checker = Objects.requireNonNull(lookup.find(id), id);
        return new SinkWriter<>() {
            @Override
            public void write(Row row, Context ctx) {
                checker.accept(row);
            }

            @Override
            public void flush(boolean endOfInput) {}

            @Override
            public void close() {}
        };
    }
}
