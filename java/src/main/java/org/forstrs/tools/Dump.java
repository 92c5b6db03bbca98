package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code ForStTool dump}: the entries of one state of one operator, decoded with the
 * checkpoint's serializers ({@link EntryDecoder}), subtask by subtask in key order, as text or
 * JSON lines (see {@link ForStTool#USAGE}). {@code --key} of a string, long or int key reads
 * only that key's entries ({@link KeyPrefix}); other filters scan the state.
 */
final class Dump {

    private Dump() {}

    static int run(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        String dir = null;
        String operatorName = null;
        String stateName = null;
        String key = null;
        String keyPrefix = null;
        boolean json = false;
        for (int i = 1; i < args.length; i++) {
            boolean hasValue = i + 1 < args.length;
            switch (args[i]) {
                case "--operator" -> operatorName = hasValue ? args[++i] : null;
                case "--state" -> stateName = hasValue ? args[++i] : null;
                case "--key" -> key = hasValue ? args[++i] : null;
                case "--key-prefix" -> keyPrefix = hasValue ? args[++i] : null;
                case "--json" -> json = true;
                default -> {
                    if (dir != null || args[i].startsWith("--")) {
                        err.println(
                                "dump: unexpected argument " + args[i] + "\n" + ForStTool.USAGE);
                        return 2;
                    }
                    dir = args[i];
                }
            }
        }
        if (dir == null || operatorName == null || stateName == null) {
            err.println("dump: a directory, --operator and --state are needed\n" + ForStTool.USAGE);
            return 2;
        }
        CheckpointContents contents = CheckpointContents.load(new Path(dir), config);
        CheckpointContents.Operator operator = contents.operator(operatorName).orElse(null);
        if (operator == null) {
            err.println("dump: no operator " + operatorName + " in " + dir);
            return 1;
        }
        boolean asJson = json;
        String state = stateName;
        List<String> damage = new ArrayList<>();
        boolean found =
                StateEntries.read(
                        contents,
                        operator,
                        stateName,
                        key,
                        keyPrefix,
                        null,
                        f -> {
                            out.println(
                                    asJson
                                            ? json(f.subtask(), f.entry())
                                            : text(f.subtask(), f.entry()));
                            return true;
                        },
                        (subtask, e) ->
                                damage.add(
                                        "damaged "
                                                + Inspection.damageLine(
                                                        operator.label(),
                                                        subtask,
                                                        state,
                                                        Inspection.reason(e))));
        if (!found) {
            err.println("dump: operator " + operator.label() + " has no state " + stateName);
            return 1;
        }
        // After the entries: what could not be read is said, and the status says it too.
        damage.forEach(err::println);
        return damage.isEmpty() ? 0 : 1;
    }

    private static String text(int subtask, EntryDecoder.Entry e) {
        return String.join(
                "\t",
                List.of(
                        "subtask=" + subtask,
                        "key-group=" + e.keyGroup(),
                        "key=" + e.key(),
                        "namespace=" + e.namespace(),
                        "user-key=" + (e.userKey() == null ? "-" : e.userKey()),
                        "value=" + e.value()));
    }

    static String json(int subtask, EntryDecoder.Entry e) {
        return "{\"subtask\":"
                + subtask
                + ",\"keyGroup\":"
                + e.keyGroup()
                + ",\"key\":"
                + e.key()
                + ",\"namespace\":"
                + e.namespace()
                + (e.userKey() == null ? "" : ",\"userKey\":" + e.userKey())
                + ",\"value\":"
                + e.value()
                + "}";
    }
}
