package org.forstrs.flink.config;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.testutils.logging.LoggerAuditingExtension;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.event.Level;

import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Configuration notes are logged once per JVM, however often backends are configured. */
class LogOnceTest {

    @RegisterExtension
    final LoggerAuditingExtension log =
            new LoggerAuditingExtension(ForStBackendConfig.class, Level.INFO);

    @Test
    void aMessageIsLoggedOnce() {
        String id = UUID.randomUUID().toString();
        LogOnce.info("note {}", id);
        LogOnce.info("note {}", id);
        LogOnce.info("note {}", "other-" + id);
        assertThat(log.getMessages()).containsExactly("note " + id, "note other-" + id);
    }

    @Test
    void aKeyWithoutEffectIsLoggedAtMostOncePerJvm() {
        // Other tests of this JVM may have logged it already: at most once, never per configure.
        Map<String, String> settings = Map.of("state.backend.forst.files.open", "100");
        for (int i = 0; i < 3; i++) {
            ForStBackendConfig.fromConfig(Configuration.fromMap(settings));
        }
        assertThat(log.getMessages())
                .filteredOn(m -> m.contains("state.backend.forst.files.open"))
                .hasSizeLessThanOrEqualTo(1)
                .allMatch(
                        m ->
                                m.startsWith(
                                        "accepted, has no effect on ForSt-RS:"
                                                + " state.backend.forst.files.open ("));
    }
}
