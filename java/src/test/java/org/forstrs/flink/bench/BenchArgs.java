package org.forstrs.flink.bench;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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

    /**
     * The backend of {@code --backend} ({@code forst}, the default: whichever ForSt the class path
     * resolves; {@code rocksdb}: Flink's RocksDB in {@code --local-dir}; {@code hashmap}: the heap)
     * with {@code --managed-memory} (32m), ForSt's primary dir at {@code --dir} and local dir at
     * {@code --local-dir}, and every {@code --state.backend.forst.<key> <value>}.
     */
    static Configuration backendConfig(Map<String, String> options) throws IOException {
        Path localDir = Path.of(options.get("local-dir"));
        Files.createDirectories(localDir);
        Configuration config = new Configuration();
        String backend = options.getOrDefault("backend", "forst");
        config.set(StateBackendOptions.STATE_BACKEND, backend);
        switch (backend) {
            case "forst" -> {
                config.setString("state.backend.forst.primary-dir", options.get("dir"));
                config.setString("state.backend.forst.local-dir", localDir.toString());
            }
            case "rocksdb" ->
                    config.setString("state.backend.rocksdb.localdir", localDir.toString());
            case "hashmap" -> {}
            default ->
                    throw new IllegalArgumentException(
                            "--backend: forst, rocksdb or hashmap, not " + backend);
        }
        config.set(
                TaskManagerOptions.MANAGED_MEMORY_SIZE,
                MemorySize.parse(options.getOrDefault("managed-memory", "32m")));
        copyForStOptions(options, config);
        return config;
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
