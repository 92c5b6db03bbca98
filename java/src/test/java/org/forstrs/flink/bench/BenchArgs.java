package org.forstrs.flink.bench;

import org.apache.flink.configuration.Configuration;

import java.util.HashMap;
import java.util.Map;

/** The command line every bench job takes: {@code --name value} pairs. */
final class BenchArgs {

    private static final String FORST_PREFIX = "state.backend.forst.";

    private BenchArgs() {}

    static Map<String, String> parse(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        return options;
    }

    /** Passes every {@code --state.backend.forst.<key> <value>} to the backend. */
    static void copyForStOptions(Map<String, String> options, Configuration config) {
        for (Map.Entry<String, String> option : options.entrySet()) {
            if (option.getKey().startsWith(FORST_PREFIX)) {
                config.setString(option.getKey(), option.getValue());
            }
        }
    }
}
