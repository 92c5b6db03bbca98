package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code ForStTool diff}: the files (and bytes) that checkpoint or savepoint {@code b}
 * references and {@code a} does not (added), the other way round (removed), and both (shared),
 * per operator, per state of each ForSt-RS operator (its SSTs: a file holds one state's keys),
 * and in total. Files are compared as {@link ReferencedFiles#key}s.
 */
final class Diff {

    private Diff() {}

    /**
     * Files and bytes per operator or state ({@code name}: an operator's label; a state's line
     * head, {@code "<state>" operator=<label>}): added, removed and shared files and bytes.
     */
    record Row(String name, long[] counts) {}

    /** A file one checkpoint references and the other does not. */
    record Change(boolean added, String file, long bytes, String operator) {}

    /** The difference of two checkpoints, in the order the text prints it. */
    record Result(List<Row> operators, List<Row> states, List<Change> files, long[] total) {}

    static int run(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        if (args.length != 3 || args[1].startsWith("--") || args[2].startsWith("--")) {
            err.println(
                    "diff: expected two checkpoint or savepoint directories\n" + ForStTool.USAGE);
            return 2;
        }
        Result result = of(new Path(args[1]), new Path(args[2]), config);
        for (Row operator : result.operators()) {
            out.println("operator " + operator.name() + " " + line(operator.counts()));
        }
        for (Row state : result.states()) {
            out.println("state " + state.name() + " " + line(state.counts()));
        }
        for (Change change : result.files()) {
            out.printf(
                    "%s %s bytes=%d operator=%s%n",
                    change.added() ? "added" : "removed",
                    change.file(),
                    change.bytes(),
                    change.operator());
        }
        out.println("total " + line(result.total()));
        return 0;
    }

    /** What {@code b} references and {@code a} does not, the other way round, and both. */
    static Result of(Path pathA, Path pathB, Configuration config) throws IOException {
        Map<String, Map<String, Long>> a = perOperator(ReferencedFiles.load(pathA));
        Map<String, Map<String, Long>> b = perOperator(ReferencedFiles.load(pathB));
        Map<String, Map<String, Long>> operators = new TreeMap<>();
        a.keySet().forEach(op -> operators.put(op, null));
        b.keySet().forEach(op -> operators.put(op, null));
        long[] total = new long[6];
        List<Row> operatorRows = new ArrayList<>();
        List<Change> files = new ArrayList<>();
        for (String operator : operators.keySet()) {
            Map<String, Long> before = a.getOrDefault(operator, Map.of());
            Map<String, Long> after = b.getOrDefault(operator, Map.of());
            long[] counts = new long[6];
            after.forEach(
                    (file, size) -> {
                        int at = before.containsKey(file) ? 4 : 0;
                        counts[at]++;
                        counts[at + 1] += size;
                        if (at == 0) {
                            files.add(new Change(true, file, size, operator));
                        }
                    });
            before.forEach(
                    (file, size) -> {
                        if (!after.containsKey(file)) {
                            counts[2]++;
                            counts[3] += size;
                            files.add(new Change(false, file, size, operator));
                        }
                    });
            operatorRows.add(new Row(operator, counts));
            for (int i = 0; i < 6; i++) {
                total[i] += counts[i];
            }
        }
        Map<String, Long> sstsA = ssts(pathA, config);
        Map<String, Long> sstsB = ssts(pathB, config);
        Map<String, long[]> states = new TreeMap<>();
        sstsB.forEach(
                (file, size) -> {
                    int at = sstsA.containsKey(file) ? 4 : 0;
                    long[] counts = states.computeIfAbsent(owner(file), s -> new long[6]);
                    counts[at]++;
                    counts[at + 1] += size;
                });
        sstsA.forEach(
                (file, size) -> {
                    if (!sstsB.containsKey(file)) {
                        long[] counts = states.computeIfAbsent(owner(file), s -> new long[6]);
                        counts[2]++;
                        counts[3] += size;
                    }
                });
        List<Row> stateRows = new ArrayList<>();
        states.forEach((state, counts) -> stateRows.add(new Row(state, counts)));
        return new Result(
                List.copyOf(operatorRows), List.copyOf(stateRows), List.copyOf(files), total);
    }

    /** The difference as one JSON object (the web monitor's {@code /api/diff}). */
    static String json(Result result) {
        Json out = new Json().open().array("operators");
        for (Row row : result.operators()) {
            counts(out.open().field("operator", row.name()), row.counts()).close();
        }
        out.end().array("states");
        for (Row row : result.states()) {
            // The row's name is the text line's head: "<state>" operator=<label>.
            int space = row.name().lastIndexOf(" operator=");
            String state = row.name().substring(0, space);
            counts(
                            out.open()
                                    .raw("state", state)
                                    .field(
                                            "operator",
                                            row.name().substring(space + " operator=".length())),
                            row.counts())
                    .close();
        }
        out.end().array("files");
        for (Change change : result.files()) {
            out.open()
                    .field("change", change.added() ? "added" : "removed")
                    .field("file", change.file())
                    .field("bytes", change.bytes())
                    .field("operator", change.operator())
                    .close();
        }
        out.end();
        return counts(out.object("total"), result.total()).close().close().toString();
    }

    private static Json counts(Json out, long[] c) {
        return out.field("addedFiles", c[0])
                .field("addedBytes", c[1])
                .field("removedFiles", c[2])
                .field("removedBytes", c[3])
                .field("sharedFiles", c[4])
                .field("sharedBytes", c[5]);
    }

    private static String line(long[] c) {
        return String.format(
                "added-files=%d added-bytes=%d removed-files=%d removed-bytes=%d shared-files=%d"
                        + " shared-bytes=%d",
                c[0], c[1], c[2], c[3], c[4], c[5]);
    }

    /**
     * The SSTs of every ForSt-RS database of the checkpoint, each as its file key and its state
     * line's head ({@code "<state>" operator=<label>}) joined by a newline, to its size.
     */
    private static Map<String, Long> ssts(Path dir, Configuration config) throws IOException {
        Map<String, Long> ssts = new TreeMap<>();
        CheckpointContents contents = CheckpointContents.load(dir, config);
        for (CheckpointContents.Operator operator : contents.operators()) {
            for (CheckpointContents.Subtask subtask : operator.subtasks()) {
                try (SubtaskReader reader = contents.open(operator, subtask)) {
                    for (SubtaskReader.FileInfo file : reader.files()) {
                        String key = ReferencedFiles.key(new Path(file.location()));
                        String owner =
                                JsonText.string(file.state()) + " operator=" + operator.label();
                        ssts.put(key + "\n" + owner, file.bytes());
                    }
                }
            }
        }
        return ssts;
    }

    /** The state line head of an entry of {@link #ssts}. */
    private static String owner(String entry) {
        return entry.substring(entry.indexOf('\n') + 1);
    }

    /** Each operator's files (uid, else id) with their sizes. */
    private static Map<String, Map<String, Long>> perOperator(CheckpointMetadata metadata)
            throws IOException {
        Map<String, Map<String, Long>> operators = new TreeMap<>();
        for (OperatorState operator : metadata.getOperatorStates()) {
            String label =
                    operator.getOperatorUid()
                            .filter(u -> !u.isEmpty())
                            .orElse(operator.getOperatorID().toHexString());
            operators.put(label, ReferencedFiles.withSizes(operator));
        }
        return operators;
    }
}
