package org.forstrs.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.forstrs.fs.HdfsCluster;
import org.forstrs.tools.ForStTool;
import org.forstrs.tools.ReferencedFiles;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ForStTool inspect}, {@code verify}, {@code diff} and {@code dump} on two retained
 * checkpoints and a native savepoint of a job with State V1 and V2 (value, list, map, reducing,
 * aggregating; a POJO value; a TTL value; event-time timers) and SQL aggregation and join state
 * (RowData) on ForSt-RS, taken while the input is held at known points (half the numbers, then
 * all): entry counts, file sizes and decoded entries equal what the job wrote, {@code verify}
 * passes, {@code diff} equals the difference of the files each checkpoint references, and
 * nothing under the job's checkpoint directory changes or appears. Locally also: {@code verify}
 * fails naming the file after one byte of an SST is flipped and after an SST is deleted, and the
 * packaged jar runs as a command ({@code java -jar}) with and without the job's classes. On a
 * local directory, on the S3 test server (checkpoints through Flink's native S3 file system,
 * read by the engine's S3 store) and on HDFS (a MiniDFSCluster, read through the Flink
 * file-system proxy).
 */
class ForStToolITCase {

    @RegisterExtension static final S3TestServer S3 = new S3TestServer();

    private static final long RECORDS = 2_000;
    /** The job's databases: 4 operators with keyed state at parallelism 2. */
    static final int DATABASES = 8;

    @Test
    void toolsSeeExactlyWhatTheJobWroteOnALocalDirectory(
            @TempDir Path primary, @TempDir Path checkpoints) throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        Checkpoints taken = runJob(config, checkpoints.toUri().toString(), new Configuration());

        String sst = largestSst(taken.b);
        Path file = Paths.get(URI.create(sst));
        byte[] original = Files.readAllBytes(file);
        byte[] flipped = original.clone();
        flipped[10] ^= 0x40;
        Files.write(file, flipped);
        Result damaged = tool(new Configuration(), "verify", taken.b);
        assertThat(damaged.status).isEqualTo(1);
        assertThat(damaged.out).contains("result=fail", file.getFileName().toString(), "checksum");
        assertInspectShowsAllButTheDamage(taken.b, file, "checksum");
        Files.write(file, original);
        assertThat(tool(new Configuration(), "verify", taken.b).status).isZero();

        Path aside = file.resolveSibling(file.getFileName() + ".aside");
        Files.move(file, aside);
        Result missing = tool(new Configuration(), "verify", taken.b);
        assertThat(missing.status).isEqualTo(1);
        assertThat(missing.out).contains("result=fail", file.getFileName().toString());
        assertInspectShowsAllButTheDamage(taken.b, file, "not found");
        Files.move(aside, file);
        assertThat(tool(new Configuration(), "verify", taken.b).status).isZero();

        // The packaged jar as a command, in a JVM of its own, Flink's jars found in FLINK_HOME.
        Path home = Files.createDirectories(primary.resolve("flink-home/lib"));
        Path jar = Paths.get(System.getProperty("forstjni.jar"));
        Files.copy(jar, home.resolve(jar.getFileName()));
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path dependency = Paths.get(entry);
            if (entry.endsWith(".jar") && !Files.exists(home.resolve(dependency.getFileName()))) {
                Files.createSymbolicLink(home.resolve(dependency.getFileName()), dependency);
            }
        }
        // Without the job's classes the POJO state's serializers do not decode: its files are
        // verified all the same, inspect says why its states are undecoded.
        Result launched = launch(home.resolve(jar.getFileName()), "verify", taken.b);
        assertThat(launched.status).as(launched.out + launched.err).isZero();
        assertThat(launched.out).contains("result=pass databases=8 problems=0");
        assertThat(launch(home.resolve(jar.getFileName()), "inspect", taken.b).out)
                .containsPattern(
                        "note operator=v1-state subtask=0 states-undecoded=\".*"
                                + Pattern.quote(ToolStateJob.Point.class.getName()));
        String jobClasses =
                Paths.get(
                                ToolStateJob.Point.class
                                        .getProtectionDomain()
                                        .getCodeSource()
                                        .getLocation()
                                        .toURI())
                        .toString();
        Result pojo =
                launch(home.resolve(jar.getFileName()), "--classpath", jobClasses, "dump",
                        taken.b, "--operator", ToolStateJob.V1_UID, "--state", "last", "--key",
                        "k7");
        assertThat(pojo.status).as(pojo.out + pojo.err).isZero();
        assertThat(pojo.out.strip())
                .endsWith("value={\"x\":" + (RECORDS - ToolStateJob.KEYS + 7) + ",\"y\":\"p"
                        + (RECORDS - ToolStateJob.KEYS + 7) + "\"}");
        String aggregate =
                tool(new Configuration(), "inspect", taken.b)
                        .out
                        .lines()
                        .filter(l -> l.matches("operator \\S+ id=\\S+ name=\"GroupAggregate.*"))
                        .map(l -> l.split(" ")[1])
                        .findFirst()
                        .orElseThrow();
        Result row =
                launch(home.resolve(jar.getFileName()), "dump", taken.b, "--operator", aggregate,
                        "--state", "accState", "--key", "k7", "--json");
        assertThat(row.status).as(row.out + row.err).isZero();
        assertThat(row.out)
                .contains(
                        "\"key\":[\"k7\"]", "\"value\":[" + RECORDS / ToolStateJob.KEYS + ",");
    }

    /** {@code java -jar <jar> args...} with FLINK_HOME the jar's lib/'s parent. */
    private static Result launch(Path jar, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-jar");
        command.add(jar.toString());
        command.addAll(List.of(args));
        Path out = Files.createTempFile(jar.getParent(), "out", ".txt");
        Path err = Files.createTempFile(jar.getParent(), "err", ".txt");
        ProcessBuilder builder =
                new ProcessBuilder(command)
                        .redirectOutput(out.toFile())
                        .redirectError(err.toFile());
        builder.environment().put("FLINK_HOME", jar.getParent().getParent().toString());
        builder.environment().remove("FLINK_CONF_DIR");
        builder.environment().remove("FLINK_PLUGINS_DIR");
        int status = builder.start().waitFor();
        return new Result(status, Files.readString(out), Files.readString(err));
    }

    @Test
    void toolsSeeExactlyWhatTheJobWroteOnS3() throws Exception {
        String run = "tool-s3-" + UUID.randomUUID();
        String root = "s3://" + S3.bucket() + "/" + run;
        Configuration config = CountingJob.config(root + "/working", root + "/checkpoints");
        S3.initializeFlinkFileSystems(config);
        try {
            runJob(config, root + "/checkpoints", config);
        } finally {
            S3TestServer.resetFlinkFileSystems();
        }
    }

    @Test
    void toolsSeeExactlyWhatTheJobWroteOnHdfs(@TempDir Path hdfsDir) throws Exception {
        try (HdfsCluster hdfs = HdfsCluster.start(hdfsDir, 1)) {
            String checkpoints = hdfs.uri("/checkpoints-" + UUID.randomUUID());
            Configuration config = CountingJob.config(checkpoints, checkpoints);
            config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
            runJob(config, checkpoints, new Configuration());
        }
    }

    private record Checkpoints(String a, String b) {}

    /**
     * Runs the job with checkpoints under {@code checkpoints}, retains one at half the input and
     * one at all of it, runs every command on them ({@code toolConfig}: the tool's Flink
     * configuration) and checks their output; returns the two checkpoints' URIs.
     */
    private static Checkpoints runJob(
            Configuration base, String checkpoints, Configuration toolConfig) throws Exception {
        String run = "tool-" + UUID.randomUUID();
        Configuration config = new Configuration(base);
        config.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 20);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(2);
        ToolStateJob.build(env, run, RECORDS);
        PacedSequence.holdAt(run, RECORDS / 2);
        JobClient job = env.executeAsync("state for the tools");
        String jobDir = checkpoints.replaceAll("/+$", "") + "/" + job.getJobID();
        Await.until("half the input", () -> PacedSequence.generated(run) >= RECORDS / 2, job);
        String a = CheckpointFiles.checkpointAfterNow(job, jobDir);
        PacedSequence.holdAt(run, RECORDS);
        Await.until("all the input", () -> PacedSequence.generated(run) >= RECORDS, job);
        String b = CheckpointFiles.checkpointAfterNow(job, jobDir);
        // triggered now, after every record: a native savepoint holds all of them
        String savepoint =
                job.triggerSavepoint(
                                checkpoints.replaceAll("/+$", "") + "/savepoints-" + run,
                                SavepointFormatType.NATIVE)
                        .get();
        job.cancel().get();
        // The job's own MiniCluster shuts down once the job ended: wait on its result.
        job.getJobExecutionResult().handle((result, failure) -> null).get();

        Map<String, String> before = CheckpointFiles.hashedContents(jobDir);
        Set<String> referenced = new TreeSet<>(ReferencedFiles.of(flinkPath(a)));
        referenced.addAll(ReferencedFiles.of(flinkPath(b)));
        assertThat(before.keySet()).containsAll(referenced);

        checkInspectAndDump(toolConfig, a, RECORDS / 2, DATABASES);
        checkInspectAndDump(toolConfig, b, RECORDS, DATABASES);
        for (String checkpoint : List.of(a, b)) {
            Result verify = tool(toolConfig, "verify", checkpoint);
            assertThat(verify.status).as(verify.out).isZero();
            assertThat(verify.out).contains("result=pass databases=8 problems=0");
        }
        checkDiff(toolConfig, a, b);
        checkInspectAndDump(toolConfig, savepoint, RECORDS, DATABASES);
        Result verifySavepoint = tool(toolConfig, "verify", savepoint);
        assertThat(verifySavepoint.status).as(verifySavepoint.out).isZero();
        assertThat(verifySavepoint.out).contains("result=pass databases=8 problems=0");

        Map<String, String> after = CheckpointFiles.hashedContents(jobDir);
        assertThat(after.keySet()).as("files the tools created").isSubsetOf(before.keySet());
        for (String file : referenced) {
            assertThat(after.get(file)).as("bytes of %s", file).isEqualTo(before.get(file));
        }
        return new Checkpoints(a, b);
    }

    /** {@code databases}: the ForSt-RS databases the checkpoint holds (with files). */
    static void checkInspectAndDump(
            Configuration toolConfig, String checkpoint, long n, int databases)
            throws Exception {
        Map<String, List<String>> expected = ToolStateJob.expected(n);
        Result inspect = tool(toolConfig, "inspect", checkpoint);
        assertThat(inspect.status).as(inspect.err).isZero();
        Map<String, Long> entries = new TreeMap<>();
        Matcher state =
                Pattern.compile("(?m)^state \"([^\"]+)\" operator=(\\S+) subtask=\\d+ kind=(\\S+)"
                                + " .*entries=(\\d+)")
                        .matcher(inspect.out);
        Map<String, String> kinds = new HashMap<>();
        Map<String, Long> timers = new TreeMap<>();
        while (state.find()) {
            boolean dataStream =
                    state.group(2).equals(ToolStateJob.V1_UID)
                            || state.group(2).equals(ToolStateJob.V2_UID);
            if (!dataStream || state.group(1).equals("ttl-last")) {
                continue; // the SQL operators' states and the TTL state: below
            }
            Map<String, Long> counts = state.group(3).equals("timers") ? timers : entries;
            counts.merge(state.group(1), Long.parseLong(state.group(4)), Long::sum);
            kinds.put(state.group(1), state.group(3));
        }
        assertThat(timers)
                .containsEntry(
                        ToolStateJob.EVENT_TIMERS, (long) ToolStateJob.expectedTimers(n).size())
                .containsEntry("_timer_state/processing_user-timers", 0L);
        Map<String, Long> expectedEntries = new TreeMap<>();
        expected.forEach((name, lines) -> expectedEntries.put(name, (long) lines.size()));
        assertThat(entries).as(inspect.out).isEqualTo(expectedEntries);
        assertThat(kinds)
                .containsEntry("count", "value")
                .containsEntry("seen", "list")
                .containsEntry("by-mod", "map")
                .containsEntry("last", "value")
                .containsEntry("v1-seen", "list")
                .containsEntry("v1-map", "map")
                .containsEntry("sum", "reducing")
                .containsEntry("avg", "aggregating")
                .containsEntry("v1-sum", "reducing")
                .containsEntry("v1-avg", "aggregating");
        assertThat(inspect.out)
                .containsPattern("state \"ttl-last\" operator=v1-state subtask=0 kind=value"
                        + " type=KEY_VALUE ttl=true ")
                .doesNotContainPattern("state \"(count|last|seen|by-mod)\" .* ttl=true");
        Result ttl =
                tool(toolConfig, "dump", checkpoint, "--operator", ToolStateJob.V1_UID,
                        "--state", "ttl-last", "--key", "k7", "--json");
        assertThat(ttl.out.strip())
                .matches("\\{\"subtask\":\\d,\"keyGroup\":\\d+,\"key\":\"k7\","
                        + "\"namespace\":\"VoidNamespace\",\"value\":\\{\"value\":"
                        + (n - ToolStateJob.KEYS + 7)
                        + ",\"lastAccessTimestamp\":\\d+\\}\\}");
        assertThat(inspect.out)
                .contains("operator " + ToolStateJob.V2_UID, "operator " + ToolStateJob.V1_UID)
                .contains("type=KEY_VALUE_V2", "type=KEY_VALUE ");
        checkSizes(inspect.out, databases);

        for (Map.Entry<String, List<String>> e : expected.entrySet()) {
            String operator =
                    e.getKey().startsWith("v1-") || e.getKey().equals("last")
                            ? ToolStateJob.V1_UID
                            : ToolStateJob.V2_UID;
            assertThat(dump(toolConfig, checkpoint, operator, e.getKey()))
                    .as("dump of %s", e.getKey())
                    .isEqualTo(e.getValue());
        }
        List<String> timerLines = new ArrayList<>();
        Pattern timerLine = Pattern.compile("(.*)\\|-\\|\\{\"timestamp\":(\\d+)}");
        for (String line :
                dump(toolConfig, checkpoint, ToolStateJob.V1_UID, ToolStateJob.EVENT_TIMERS)) {
            Matcher timer = timerLine.matcher(line);
            assertThat(timer.matches()).as(line).isTrue();
            timerLines.add(timer.group(1) + "|" + timer.group(2));
        }
        assertThat(ToolStateJob.sorted(timerLines)).isEqualTo(ToolStateJob.expectedTimers(n));

        // SQL operators: found by name (the planner sets no uid); RowData keys, rows, accumulators
        Matcher operators =
                Pattern.compile("(?m)^operator (\\S+) id=\\S+ name=\"([^\"]*)\"")
                        .matcher(inspect.out);
        Map<String, String> sqlOperators = new TreeMap<>();
        while (operators.find()) {
            for (String prefix : List.of(ToolStateJob.AGGREGATE, ToolStateJob.JOIN)) {
                if (operators.group(2).startsWith(prefix)) {
                    sqlOperators.put(prefix, operators.group(1));
                }
            }
        }
        Map<String, Map<String, List<String>>> expectedSql = ToolStateJob.expectedSql(n);
        assertThat(sqlOperators).as(inspect.out).containsOnlyKeys(expectedSql.keySet());
        for (Map.Entry<String, Map<String, List<String>>> op : expectedSql.entrySet()) {
            for (Map.Entry<String, List<String>> e : op.getValue().entrySet()) {
                String label = sqlOperators.get(op.getKey());
                assertThat(dump(toolConfig, checkpoint, label, e.getKey()))
                        .as("dump of %s of %s", e.getKey(), op.getKey())
                        .isEqualTo(e.getValue());
                assertThat(inspect.out)
                        .containsPattern(
                                "state \""
                                        + e.getKey()
                                        + "\" operator="
                                        + Pattern.quote(label)
                                        + " subtask=\\d kind=(value|map) type=KEY_VALUE ttl=false"
                                        + " .* key=RowDataSerializer ");
            }
        }
        Result sqlKey =
                tool(toolConfig, "dump", checkpoint, "--operator",
                        sqlOperators.get(ToolStateJob.AGGREGATE), "--state", "accState", "--key",
                        "k7", "--json");
        assertThat(sqlKey.out.strip().split("\n")).hasSize(1);
        assertThat(sqlKey.out).contains("\"key\":[\"k7\"]");
        Result one =
                tool(toolConfig, "dump", checkpoint, "--operator", ToolStateJob.V2_UID,
                        "--state", "count", "--key", "k7", "--json");
        assertThat(one.out.strip().split("\n")).hasSize(1);
        assertThat(one.out)
                .contains("\"key\":\"k7\"", "\"value\":" + (n / ToolStateJob.KEYS) + "}");
        Result prefix =
                tool(toolConfig, "dump", checkpoint, "--operator", ToolStateJob.V2_UID,
                        "--state", "count", "--key-prefix", "k1");
        // k1 and k10..k19
        assertThat(prefix.out.strip().split("\n")).hasSize(11);
    }

    /**
     * Each file's bytes in {@code inspect}'s output are the file's length where it lies, and each
     * subtask's files and bytes add up its file lines.
     */
    private static void checkSizes(String inspect, int databases) throws Exception {
        Map<String, long[]> perSubtask = new TreeMap<>();
        Matcher file =
                Pattern.compile(
                                "(?m)^file \\S+ operator=(\\S+) subtask=(\\d+) .* bytes=(\\d+)"
                                        + " entries=\\d+ shared=\\S+ location=(\\S+)$")
                        .matcher(inspect);
        while (file.find()) {
            org.apache.flink.core.fs.Path location = flinkPath(file.group(4));
            assertThat(location.getFileSystem().getFileStatus(location).getLen())
                    .as("bytes of %s", location)
                    .isEqualTo(Long.parseLong(file.group(3)));
            long[] sums =
                    perSubtask.computeIfAbsent(
                            file.group(1) + " " + file.group(2), k -> new long[2]);
            sums[0]++;
            sums[1] += Long.parseLong(file.group(3));
        }
        Set<String> withFiles = new TreeSet<>();
        Matcher line =
                Pattern.compile("(?m)^subtask (\\d+) operator=(\\S+) .* files=([1-9]\\d*) ")
                        .matcher(inspect);
        while (line.find()) {
            withFiles.add(line.group(2) + " " + line.group(1));
        }
        assertThat(perSubtask.keySet()).hasSize(databases).isEqualTo(withFiles);
        perSubtask.forEach(
                (subtask, sums) -> {
                    String[] parts = subtask.split(" ");
                    assertThat(inspect)
                            .containsPattern(
                                    "(?m)^subtask "
                                            + parts[1]
                                            + " operator="
                                            + Pattern.quote(parts[0])
                                            + " .* files="
                                            + sums[0]
                                            + " bytes="
                                            + sums[1]
                                            + " ");
                });
    }

    /** The state's entries as `dump` prints them, each "key|user key|value", sorted. */
    private static List<String> dump(
            Configuration toolConfig, String checkpoint, String operator, String state)
            throws Exception {
        Result dump =
                tool(toolConfig, "dump", checkpoint, "--operator", operator, "--state", state);
        assertThat(dump.status).as(dump.err).isZero();
        List<String> seen = new ArrayList<>();
        for (String line : dump.out.lines().toList()) {
            Map<String, String> columns = new HashMap<>();
            for (String column : line.split("\t")) {
                int eq = column.indexOf('=');
                columns.put(column.substring(0, eq), column.substring(eq + 1));
            }
            seen.add(
                    columns.get("key")
                            + "|"
                            + columns.get("user-key")
                            + "|"
                            + columns.get("value"));
        }
        return ToolStateJob.sorted(seen);
    }

    private static void checkDiff(Configuration toolConfig, String a, String b) throws Exception {
        Set<String> before = ReferencedFiles.of(flinkPath(a));
        Set<String> after = ReferencedFiles.of(flinkPath(b));
        Result diff = tool(toolConfig, "diff", a, b);
        assertThat(diff.status).isZero();
        Set<String> added = new TreeSet<>();
        Set<String> removed = new TreeSet<>();
        for (String line : diff.out.split("\n")) {
            String[] words = line.split(" ");
            if (words[0].equals("added")) {
                added.add(words[1]);
            } else if (words[0].equals("removed")) {
                removed.add(words[1]);
            }
        }
        Set<String> expectedAdded = new TreeSet<>(after);
        expectedAdded.removeAll(before);
        Set<String> expectedRemoved = new TreeSet<>(before);
        expectedRemoved.removeAll(after);
        Set<String> shared = new TreeSet<>(before);
        shared.retainAll(after);
        assertThat(added).isEqualTo(expectedAdded);
        // Per state: the SSTs inspect lists under that state in each checkpoint.
        Map<String, String> sstsA = sstStates(toolConfig, a);
        Map<String, String> sstsB = sstStates(toolConfig, b);
        Map<String, long[]> perState = new TreeMap<>();
        sstsB.forEach(
                (file, state) ->
                        perState.computeIfAbsent(state, s -> new long[3])[
                                        sstsA.containsKey(file) ? 2 : 0]++);
        sstsA.forEach(
                (file, state) -> {
                    if (!sstsB.containsKey(file)) {
                        perState.computeIfAbsent(state, s -> new long[3])[1]++;
                    }
                });
        assertThat(perState.keySet()).contains("\"count\" operator=" + ToolStateJob.V2_UID);
        perState.forEach(
                (state, counts) -> {
                    String head = "state " + state + " added-files=" + counts[0];
                    assertThat(diff.out)
                            .containsPattern(
                                    Pattern.quote(head)
                                            + " \\S+ removed-files="
                                            + counts[1]
                                            + " \\S+ shared-files="
                                            + counts[2]
                                            + " ");
                });
        assertThat(removed).isEqualTo(expectedRemoved);
        assertThat(diff.out)
                .contains(
                        "total added-files=" + expectedAdded.size() + " ",
                        "removed-files=" + expectedRemoved.size() + " ",
                        "shared-files=" + shared.size() + " ");
    }

    /** Each SST `inspect` lists (as a file key) with its state line's head. */
    private static Map<String, String> sstStates(Configuration toolConfig, String checkpoint)
            throws Exception {
        Result inspect = tool(toolConfig, "inspect", checkpoint);
        Matcher file =
                Pattern.compile(
                                "(?m)^file \\S+ operator=(\\S+) subtask=\\d+ state=(\"[^\"]*\")"
                                        + " .* location=(\\S+)$")
                        .matcher(inspect.out);
        Map<String, String> files = new TreeMap<>();
        while (file.find()) {
            files.put(
                    ReferencedFiles.key(flinkPath(file.group(3))),
                    file.group(2) + " operator=" + file.group(1));
        }
        assertThat(files).as(inspect.out).isNotEmpty();
        return files;
    }

    /** The location of the largest SST `inspect` lists. */
    static String largestSst(String checkpoint) throws Exception {
        Result inspect = tool(new Configuration(), "inspect", checkpoint);
        Matcher file =
                Pattern.compile("(?m)^file \\S+ .* bytes=(\\d+) .* location=(\\S+)$")
                        .matcher(inspect.out);
        String largest = null;
        long size = -1;
        while (file.find()) {
            if (Long.parseLong(file.group(1)) > size) {
                size = Long.parseLong(file.group(1));
                largest = file.group(2);
            }
        }
        assertThat(largest).as(inspect.out).isNotNull();
        return largest;
    }

    private static org.apache.flink.core.fs.Path flinkPath(String uri) {
        return new org.apache.flink.core.fs.Path(uri);
    }

    /** A command's exit status and output. */
    /**
     * {@code inspect} of a checkpoint with one damaged or missing SST: every subtask and every
     * state of the sound ones printed with its entries; the damage named with the file and
     * {@code why}, in one subtask only; exit status 1.
     */
    private static void assertInspectShowsAllButTheDamage(String checkpoint, Path file, String why)
            throws Exception {
        Result inspect = tool(new Configuration(), "inspect", checkpoint);
        assertThat(inspect.status).as(inspect.out + inspect.err).isEqualTo(1);
        List<String> lines = inspect.out.lines().collect(Collectors.toList());
        assertThat(lines).filteredOn(l -> l.startsWith("subtask ")).hasSize(8);
        List<String> damage =
                lines.stream().filter(l -> l.startsWith("damaged ")).collect(Collectors.toList());
        assertThat(damage)
                .isNotEmpty()
                .allMatch(l -> l.contains(file.getFileName().toString()))
                .allMatch(l -> l.toLowerCase(Locale.ROOT).contains(why));
        Set<String> damagedSubtasks =
                damage.stream()
                        .map(l -> l.replaceAll("^damaged (operator=\\S+ subtask=\\d+).*", "$1"))
                        .collect(Collectors.toSet());
        assertThat(damagedSubtasks).hasSize(1);
        String sick = damagedSubtasks.iterator().next();
        assertThat(lines)
                .filteredOn(l -> l.startsWith("state ") && !l.contains(sick + " "))
                .isNotEmpty()
                .allMatch(l -> l.matches(".* entries=\\d+ .*"));

        // dump of a damaged state: the sound subtasks' entries, then the damage on stderr
        Matcher state =
                Pattern.compile("^damaged operator=(\\S+) subtask=(\\d+) state=\"([^\"]+)\"")
                        .matcher(damage.get(0));
        assertThat(state.find()).as(damage.get(0)).isTrue();
        Result dump =
                tool(new Configuration(), "dump", checkpoint, "--operator", state.group(1),
                        "--state", state.group(3));
        assertThat(dump.status).as(dump.err).isEqualTo(1);
        assertThat(dump.err)
                .contains("damaged operator=" + state.group(1) + " subtask=" + state.group(2))
                .contains(file.getFileName().toString());
        String sickLine = "subtask=" + state.group(2) + "\t";
        assertThat(dump.out.lines())
                .as("the sound subtask's entries")
                .anyMatch(l -> l.startsWith("subtask=") && !l.startsWith(sickLine));
    }

    record Result(int status, String out, String err) {}

    /** Runs a ForStTool command in this JVM with {@code config}. */
    static Result tool(Configuration config, String... args) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status =
                ForStTool.run(
                        args,
                        new PrintStream(out, true, StandardCharsets.UTF_8),
                        new PrintStream(err, true, StandardCharsets.UTF_8),
                        config);
        return new Result(
                status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Flink's plugin directory with flink-s3-fs-native, as Maven lays it out for the ITs. */
}
