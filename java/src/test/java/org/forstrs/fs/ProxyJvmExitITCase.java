package org.forstrs.fs;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A JVM whose native threads are attached to it through the file-system proxy, busy reading and
 * flushing, terminates promptly when it ends without closing the database (the C++ ForSt needed
 * a shutdown hook for this). Runs {@link ProxyExitMain} in a child JVM; once it is busy, its end must follow within a
 * limit (a hang shows as a miss by minutes, not seconds).
 */
class ProxyJvmExitITCase {

    private static final long LIMIT_SECONDS = 60;

    @TempDir Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"exit", "return"})
    void jvmExitsPromptlyWithNativeThreadsAttached(String how) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder =
                new ProcessBuilder(
                                List.of(
                                        java,
                                        "-cp",
                                        System.getProperty("java.class.path"),
                                        ProxyExitMain.class.getName(),
                                        dir.resolve("db").toUri().toString(),
                                        how))
                        .redirectErrorStream(true);
        Process child = builder.start();
        StringBuilder output = new StringBuilder();
        try (BufferedReader lines =
                new BufferedReader(
                        new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            // Until the child is busy with native threads attached (no deadline: start-up time
            // on a loaded machine decides nothing); then its end must follow promptly.
            String line;
            while ((line = lines.readLine()) != null && !line.startsWith("READY")) {
                output.append(line).append('\n');
            }
            assertThat(line).as("the child never got ready; output:%n%s", output).isNotNull();
            boolean ended = child.waitFor(LIMIT_SECONDS, TimeUnit.SECONDS);
            if (!ended) {
                child.destroyForcibly().waitFor();
            }
            lines.lines().forEach(l -> output.append(l).append('\n'));
            assertThat(ended)
                    .as("child JVM ended within %s s of getting ready; output:%n%s", LIMIT_SECONDS, output)
                    .isTrue();
        }
        assertThat(child.exitValue()).as(output.toString()).isZero();
        assertThat(new File(dir.resolve("db").toString()).list()).isNotEmpty();
    }
}
