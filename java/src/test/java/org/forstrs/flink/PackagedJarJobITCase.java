package org.forstrs.flink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import org.forstrs.jni.NativeLibraryLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real Flink job whose state backend comes from the packaged jar ({@code
 * target/forstjni-<version>.jar}), not from target/classes: a child JVM whose class path is the
 * jar, the test classes and the test dependencies runs a keyed word count with async state and
 * {@code state.backend.type: forst} on a local MiniCluster. The counts must be exact, the backend
 * class must come from the jar, and state files must appear under the primary dir.
 */
class PackagedJarJobITCase {

    private static final long RECORDS = 50_000;
    private static final int KEYS = 1_000;
    private static final int PARALLELISM = 2;
    private static final long TIMEOUT_MINUTES = 5;

    /** Lines of the child's output that carry results start with this. */
    private static final String MARK = "forst-it ";

    /** The word of record {@code i}: {@link #KEYS} distinct words. */
    static String word(long i) {
        return "w" + Math.floorMod(i * 0x9E3779B97F4A7C15L, KEYS);
    }

    @Test
    void wordCountRunsWithTheBackendFromThePackagedJar(@TempDir Path dir) throws Exception {
        final Path jar =
                Paths.get(System.getProperty("forstjni.jar", "target/forstjni.jar"))
                        .toAbsolutePath();
        assertThat(jar).isRegularFile();
        final Path classes = jar.resolveSibling("classes");
        final Path testClasses = jar.resolveSibling("test-classes");

        // The test class path with target/classes (and any jar of this project) replaced by the
        // packaged jar.
        final List<String> classPath = new ArrayList<>();
        classPath.add(jar.toString());
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (entry.isEmpty()) {
                continue;
            }
            final Path path = Paths.get(entry).toAbsolutePath().normalize();
            if (path.equals(classes)
                    || path.equals(jar)
                    || path.getFileName().toString().startsWith("forstjni")) {
                continue;
            }
            classPath.add(path.toString());
        }
        assertThat(classPath).contains(testClasses.toString()).doesNotContain(classes.toString());

        final Path primary = Files.createDirectories(dir.resolve("primary"));
        final Path counts = dir.resolve("counts.txt");
        final Path output = dir.resolve("child-output.txt");
        final Path javaBin = Paths.get(System.getProperty("java.home"), "bin", "java");
        final ProcessBuilder builder =
                new ProcessBuilder(
                                javaBin.toString(),
                                "-Xcheck:jni",
                                "-Xmx512m",
                                "-Djava.io.tmpdir=" + dir,
                                "-cp",
                                String.join(File.pathSeparator, classPath),
                                Job.class.getName(),
                                primary.toString(),
                                counts.toString())
                        .redirectErrorStream(true)
                        .redirectOutput(output.toFile());
        final Process child = builder.start();
        final boolean exited = child.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES);
        if (!exited) {
            child.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        final String out = Files.readString(output, StandardCharsets.UTF_8);
        assertThat(exited)
                .as(() -> "child JVM ended within " + TIMEOUT_MINUTES + " min; output:\n" + out)
                .isTrue();
        assertThat(child.exitValue()).as(() -> "child JVM exit code; output:\n" + out).isZero();
        // -Xcheck:jni reports misuse of JNI (local references past capacity, calls with an
        // exception pending, ...) as warnings on stdout: any of them fails the test
        assertThat(out).doesNotContain("WARNING in native method").doesNotContain("WARNING: JNI");

        final Map<String, String> reported = new HashMap<>();
        out.lines()
                .filter(l -> l.startsWith(MARK))
                .map(l -> l.substring(MARK.length()).split("=", 2))
                .forEach(kv -> reported.put(kv[0], kv[1]));
        assertThat(reported)
                .as(() -> "child output:\n" + out)
                .containsKeys(
                        "backend-location",
                        "loader-location",
                        "native-library",
                        "state-files",
                        "records");

        // the backend and the native library came from the packaged jar
        assertThat(reported.get("backend-location")).endsWith("/" + jar.getFileName());
        assertThat(reported.get("loader-location")).endsWith("/" + jar.getFileName());
        assertThat(reported.get("native-library")).startsWith("/native/").contains("libforst");
        // the open backends had files under <primary>/<job>/op_<operator>/subtask_<i>_attempt_<n>
        assertThat(reported.get("state-files").split(","))
                .as(() -> "child output:\n" + out)
                .isNotEmpty()
                .allSatisfy(
                        f ->
                                assertThat(f)
                                        .matches(
                                                "[0-9a-f]{32}/op_[^/]+/"
                                                        + "subtask_\\d+_attempt_\\d+/.+"));

        // exact counts against an independent count
        final Map<String, Long> expected = new TreeMap<>();
        for (long i = 0; i < RECORDS; i++) {
            expected.merge(word(i), 1L, Long::sum);
        }
        assertThat(expected).hasSize(KEYS);
        final Map<String, Long> maxCount = new TreeMap<>();
        final Map<String, Long> emitted = new TreeMap<>();
        for (String line : Files.readAllLines(counts, StandardCharsets.UTF_8)) {
            final String[] fields = line.split(" ");
            maxCount.put(fields[0], Long.parseLong(fields[1]));
            emitted.put(fields[0], Long.parseLong(fields[2]));
        }
        assertThat(Long.parseLong(reported.get("records"))).isEqualTo(RECORDS);
        assertThat(maxCount).isEqualTo(expected);
        assertThat(emitted).isEqualTo(expected);
    }

    /**
     * The child JVM: {@code Job <primary dir> <counts file>}. Runs the word count, writes {@code
     * <word> <max count> <emissions>} lines and reports on stdout.
     */
    static final class Job {

        private Job() {}

        @SuppressWarnings("try") // CloseableIterator#close may throw InterruptedException
        public static void main(String[] args) throws Exception {
            final Path primary = Paths.get(args[0]);
            final Path counts = Paths.get(args[1]);

            Configuration config = new Configuration();
            config.set(StateBackendOptions.STATE_BACKEND, "forst");
            config.setString("state.backend.forst.primary-dir", primary.toUri().toString());
            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.createLocalEnvironment(PARALLELISM, config);

            Map<String, Long> maxCount = new TreeMap<>();
            Map<String, Long> emitted = new TreeMap<>();
            long records = 0;
            try (CloseableIterator<Tuple2<String, Long>> results =
                    env.fromSequence(0, RECORDS - 1)
                            .map(PackagedJarJobITCase::word)
                            .returns(Types.STRING)
                            .keyBy(w -> w)
                            .enableAsyncState()
                            .process(new CountWords(primary.toString()))
                            .returns(Types.TUPLE(Types.STRING, Types.LONG))
                            .executeAndCollect("word count from the packaged jar")) {
                while (results.hasNext()) {
                    Tuple2<String, Long> r = results.next();
                    maxCount.merge(r.f0, r.f1, Math::max);
                    emitted.merge(r.f0, 1L, Long::sum);
                    records++;
                }
            }
            List<String> lines = new ArrayList<>();
            maxCount.forEach((w, n) -> lines.add(w + " " + n + " " + emitted.get(w)));
            Files.write(counts, lines, StandardCharsets.UTF_8);

            report(
                    "backend-location",
                    ForStStateBackend.class
                            .getProtectionDomain()
                            .getCodeSource()
                            .getLocation()
                            .getPath());
            report(
                    "loader-location",
                    NativeLibraryLoader.class
                            .getProtectionDomain()
                            .getCodeSource()
                            .getLocation()
                            .getPath());
            report("native-library", NativeLibraryLoader.loadedFrom());
            report("state-files", String.join(",", CountWords.STATE_FILES));
            report("records", records);
        }

        private static void report(String key, Object value) {
            System.out.println(MARK + key + "=" + value);
        }
    }

    /**
     * Counts each word; emits (word, count so far) for every record. {@code open} runs after the
     * keyed backend is built and the state registered, so its files are on disk then.
     */
    static final class CountWords
            extends KeyedProcessFunction<String, String, Tuple2<String, Long>> {
        private static final long serialVersionUID = 1L;

        /** Regular files seen under the primary dir by the subtasks' {@code open}, relative. */
        static final Set<String> STATE_FILES = new ConcurrentSkipListSet<>();

        private final String primary;
        private transient ValueState<Long> count;

        CountWords(String primary) {
            this.primary = primary;
        }

        @Override
        public void open(OpenContext openContext) throws IOException {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            final Path root = Paths.get(primary);
            // files replaced meanwhile (e.g. old manifests) are skipped
            Files.walkFileTree(
                    root,
                    new SimpleFileVisitor<>() {
                        @Override
                        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                            if (attrs.isRegularFile()) {
                                STATE_FILES.add(root.relativize(file).toString());
                            }
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFileFailed(Path file, IOException e) {
                            return FileVisitResult.CONTINUE;
                        }
                    });
        }

        @Override
        public void processElement(
                String word, Context ctx, Collector<Tuple2<String, Long>> out) {
            count.asyncValue()
                    .thenCompose(
                            current -> {
                                long next = current == null ? 1 : current + 1;
                                return count.asyncUpdate(next)
                                        .thenAccept(ignored -> out.collect(Tuple2.of(word, next)));
                            });
        }
    }
}
