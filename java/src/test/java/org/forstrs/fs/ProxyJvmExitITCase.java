package org.forstrs.fs;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A JVM whose native threads are attached to it through the file-system proxy, busy reading and
 * flushing, terminates promptly when it ends without closing the database (the C++ ForSt needed
 * a shutdown hook for this). Runs {@link ProxyExitMain} in a child JVM under a time limit.
 */
class ProxyJvmExitITCase {

    private static final long LIMIT_SECONDS = 60;

    @TempDir Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"exit", "return"})
    void jvmExitsPromptlyWithNativeThreadsAttached(String how) throws Exception {
        Path log = dir.resolve("child.log");
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
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile());
        long start = System.nanoTime();
        Process child = builder.start();
        boolean ended = child.waitFor(LIMIT_SECONDS, TimeUnit.SECONDS);
        if (!ended) {
            child.destroyForcibly().waitFor();
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertThat(ended).as("child JVM ended within %s s; output:%n%s", LIMIT_SECONDS, output).isTrue();
        assertThat(child.exitValue()).as(output).isZero();
        assertThat(output).contains("READY");
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start)).isLessThan(LIMIT_SECONDS);
        assertThat(new File(dir.resolve("db").toString()).list()).isNotEmpty();
    }
}
