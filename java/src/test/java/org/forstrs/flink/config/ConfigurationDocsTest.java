package org.forstrs.flink.config;

import org.apache.flink.configuration.ConfigOption;

import org.forstrs.docs.RepoDocs;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/configuration.md lists exactly the keys the backend accepts, one row each: the keys of
 * Flink's ForSt (read by reflection from flink-statebackend-forst), ours and their fallback keys
 * ({@link ForStBackendConfig#knownKeys()}, the set that rejects unknown keys), the engine's
 * ({@link EngineOptions#all()}, from the native table) and the Flink S3 keys the native store
 * reads ({@link S3Keys#flinkKeys()}). A listed key is a backticked word in the first cell of a
 * table row.
 */
class ConfigurationDocsTest {

    private static final Pattern KEY = Pattern.compile("`([^`]+)`");

    private static List<String> listed;

    @BeforeAll
    static void readPage() {
        Path page = RepoDocs.root().resolve("docs/configuration.md");
        listed = new ArrayList<>();
        for (String line : RepoDocs.proseLines(page)) {
            String row = line.strip();
            if (!row.startsWith("|") || row.matches("\\|[\\s|:-]*")) {
                continue;
            }
            int end = row.indexOf('|', 1);
            String firstCell = end < 0 ? row.substring(1) : row.substring(1, end);
            Matcher key = KEY.matcher(firstCell);
            while (key.find()) {
                listed.add(key.group(1));
            }
        }
    }

    @Test
    void everyAcceptedKeyIsOnThePage() throws Exception {
        TreeSet<String> missing = new TreeSet<>(acceptedKeys());
        missing.removeAll(listed);
        assertThat(missing).as("keys the code accepts that docs/configuration.md lacks").isEmpty();
    }

    @Test
    void everyKeyOnThePageIsAccepted() throws Exception {
        TreeSet<String> unknown = new TreeSet<>(listed);
        unknown.removeAll(acceptedKeys());
        assertThat(unknown)
                .as("keys docs/configuration.md lists that the code does not accept")
                .isEmpty();
    }

    @Test
    void everyKeyHasOneRow() {
        TreeSet<String> seen = new TreeSet<>();
        TreeSet<String> repeated = new TreeSet<>();
        for (String key : listed) {
            if (!seen.add(key)) {
                repeated.add(key);
            }
        }
        assertThat(repeated).as("keys listed more than once").isEmpty();
    }

    private static TreeSet<String> acceptedKeys() throws ReflectiveOperationException {
        TreeSet<String> keys = new TreeSet<>(ForStBackendConfig.knownKeys());
        for (ConfigOption<?> option : FlinkForStKeys.flinkOptions()) {
            keys.add(option.key());
        }
        for (EngineOptions.EngineOption option : EngineOptions.all()) {
            keys.add(option.key());
        }
        keys.addAll(S3Keys.flinkKeys());
        return keys;
    }
}
