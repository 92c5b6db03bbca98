package org.forstrs.flink.nexmark;

import org.apache.flink.table.api.TableEnvironment;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Collectors;

/** The Nexmark queries of {@code src/test/resources/nexmark/}, one file each, and their tables. */
public final class NexmarkQueries {

    /** The queries that keep state, in the order the benchmark runs them. */
    public static final List<String> STATEFUL =
            List.of(
                    "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q12", "q15", "q16", "q17", "q18",
                    "q19", "q20");

    private NexmarkQueries() {}

    /** The query's SELECT, without its comments. */
    public static String select(String query) {
        return withoutComments(resource(query + ".sql")).strip();
    }

    /**
     * Creates the {@code datagen} table of the first {@code events} events of the stream of
     * {@code seed} and its views {@code person}, {@code auction} and {@code bid}.
     */
    public static void createTables(
            TableEnvironment tables, long events, long seed, int eventsPerSecond) {
        String ddl =
                withoutComments(resource("tables.sql"))
                        .replace("${events}", Long.toString(events))
                        .replace("${seed}", Long.toString(seed))
                        .replace("${events_per_second}", Integer.toString(eventsPerSecond));
        for (String statement : ddl.split(";")) {
            if (!statement.isBlank()) {
                tables.executeSql(statement);
            }
        }
    }

    private static String withoutComments(String sql) {
        return sql.lines()
                .filter(line -> !line.stripLeading().startsWith("--"))
                .collect(Collectors.joining("\n"));
    }

    private static String resource(String name) {
        try (InputStream in = NexmarkQueries.class.getResourceAsStream("/nexmark/" + name)) {
            if (in == null) {
                throw new IllegalArgumentException("no Nexmark query or table file " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
