package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;

import java.io.IOException;
import java.io.PrintStream;
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

    static int run(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        if (args.length != 3 || args[1].startsWith("--") || args[2].startsWith("--")) {
            err.println(
                    "diff: expected two checkpoint or savepoint directories\n" + ForStTool.USAGE);
            return 2;
        }
        Map<String, Map<String, Long>> a = perOperator(ReferencedFiles.load(new Path(args[1])));
        Map<String, Map<String, Long>> b = perOperator(ReferencedFiles.load(new Path(args[2])));
        Map<String, Map<String, Long>> operators = new TreeMap<>();
        a.keySet().forEach(op -> operators.put(op, null));
        b.keySet().forEach(op -> operators.put(op, null));
        long[] total = new long[6];
        StringBuilder files = new StringBuilder();
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
                            files.append(
                                    String.format(
                                            "added %s bytes=%d operator=%s%n",
                                            file, size, operator));
                        }
                    });
            before.forEach(
                    (file, size) -> {
                        if (!after.containsKey(file)) {
                            counts[2]++;
                            counts[3] += size;
                            files.append(
                                    String.format(
                                            "removed %s bytes=%d operator=%s%n",
                                            file, size, operator));
                        }
                    });
            out.println("operator " + operator + " " + line(counts));
            for (int i = 0; i < 6; i++) {
                total[i] += counts[i];
            }
        }
        Map<String, Long> sstsA = ssts(new Path(args[1]), config);
        Map<String, Long> sstsB = ssts(new Path(args[2]), config);
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
        states.forEach((state, counts) -> out.println("state " + state + " " + line(counts)));
        out.print(files);
        out.println("total " + line(total));
        return 0;
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
