package org.forstrs.flink.config;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;

import org.forstrs.jni.ForStNative;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The engine's options as the native side defines them ({@link ForStNative#engineOptions}), the
 * only place their names, types, defaults and minimums are written down. Each is settable from
 * Flink as {@code state.backend.forst.engine.<name>}. The table is read once, on first use (so a
 * configuration without engine keys does not load the native library).
 */
public final class EngineOptions {

    /** Prefix of the Flink keys of engine options. */
    public static final String KEY_PREFIX = ForStOptions.PREFIX + "engine.";

    private static final int COLUMNS = 6;

    /** How a value is written. */
    public enum Type {
        /** A size: a {@link MemorySize} in Flink ("64mb"), a number of bytes for the engine. */
        BYTES,
        /** A non-negative integer. */
        COUNT,
        BOOL,
        /** One of {@link EngineOption#choices()}. */
        CHOICE
    }

    /** One row of the native table. */
    public record EngineOption(
            String name,
            Type type,
            String defaultValue,
            @Nullable Long min,
            List<String> choices,
            String doc) {

        /** The Flink key of this option. */
        public String key() {
            return KEY_PREFIX + name;
        }

        /**
         * The engine's text for a value given in Flink's form under {@code key}; an invalid value
         * fails naming {@code key}.
         */
        String parse(String key, String value) {
            String v = value.trim();
            switch (type) {
                case BYTES:
                    return Long.toString(atLeastMin(key, v, bytes(key, v)));
                case COUNT:
                    return Long.toString(atLeastMin(key, v, count(key, v)));
                case BOOL:
                    if (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false")) {
                        return v.toLowerCase(Locale.ROOT);
                    }
                    throw invalid(key, v, "not true or false");
                default:
                    for (String choice : choices) {
                        if (choice.equalsIgnoreCase(v)) {
                            return choice;
                        }
                    }
                    throw invalid(key, v, "not one of " + String.join(", ", choices));
            }
        }

        /** {@code value} raised to the option's minimum, as RocksDB sanitizes Flink's values. */
        long clampToMin(long value) {
            return min == null ? Math.max(0, value) : Math.max(min, value);
        }

        private long atLeastMin(String key, String text, long value) {
            if (min != null && value < min) {
                throw invalid(key, text, "the engine's minimum is " + min);
            }
            return value;
        }

        private static long bytes(String key, String v) {
            try {
                return MemorySize.parse(v).getBytes();
            } catch (IllegalArgumentException e) {
                throw invalid(key, v, e.getMessage());
            }
        }

        private static long count(String key, String v) {
            try {
                long n = Long.parseLong(v);
                if (n >= 0) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw invalid(key, v, "not a non-negative integer");
        }

        private static IllegalConfigurationException invalid(String key, String v, String why) {
            return new IllegalConfigurationException(
                    "Invalid value for '%s': '%s' (%s)", key, v, why);
        }
    }

    private static volatile List<EngineOption> table;

    private EngineOptions() {}

    /** Every engine option, in the native table's order. */
    public static List<EngineOption> all() {
        List<EngineOption> t = table;
        if (t == null) {
            t = parseTable(ForStNative.engineOptions());
            table = t;
        }
        return t;
    }

    /** The option named {@code name}. */
    public static Optional<EngineOption> find(String name) {
        return all().stream().filter(o -> o.name().equals(name)).findFirst();
    }

    /** The option named {@code name}; a name the engine does not know is a bug of the caller. */
    static EngineOption get(String name) {
        return find(name)
                .orElseThrow(() -> new IllegalStateException("no engine option '" + name + "'"));
    }

    static List<EngineOption> parseTable(String[] cells) {
        if (cells.length % COLUMNS != 0) {
            throw new IllegalStateException(
                    "engine option table of " + cells.length + " cells is not in rows of " + COLUMNS);
        }
        List<EngineOption> rows = new ArrayList<>();
        for (int i = 0; i < cells.length; i += COLUMNS) {
            rows.add(
                    new EngineOption(
                            cells[i],
                            Type.valueOf(cells[i + 1].toUpperCase(Locale.ROOT)),
                            cells[i + 2],
                            cells[i + 3].isEmpty() ? null : Long.parseLong(cells[i + 3]),
                            cells[i + 4].isEmpty()
                                    ? List.of()
                                    : List.of(cells[i + 4].split(",")),
                            cells[i + 5]));
        }
        return List.copyOf(rows);
    }
}
