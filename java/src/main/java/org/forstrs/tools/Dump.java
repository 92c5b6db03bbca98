package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import java.io.PrintStream;
import java.util.Iterator;
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
        CheckpointContents.Operator operator = null;
        for (CheckpointContents.Operator candidate : contents.operators()) {
            if (candidate.matches(operatorName)) {
                operator = candidate;
            }
        }
        if (operator == null) {
            err.println("dump: no operator " + operatorName + " in " + dir);
            return 1;
        }
        boolean found = false;
        for (CheckpointContents.Subtask subtask : operator.subtasks()) {
            try (SubtaskReader reader = contents.open(operator, subtask)) {
                if (reader.metaProblem() != null) {
                    err.printf(
                            "dump: the state meta info of operator %s subtask %d does not decode"
                                    + " here: %s (run with the job's jar: --classpath <jar>)%n",
                            operator.label(), subtask.index(), reader.metaProblem());
                    return 1;
                }
                StateMetaInfoSnapshot snapshot = reader.states().get(stateName);
                if (snapshot == null || !reader.families().contains(stateName)) {
                    continue;
                }
                found = true;
                TypeSerializer<?> keySerializer = Inspect.keySerializer(reader);
                EntryDecoder decoder =
                        new EntryDecoder(
                                StateDescription.of(snapshot),
                                keySerializer,
                                reader.keyGroupPrefixBytes());
                KeyPrefix.Range range =
                        key == null
                                ? null
                                : KeyPrefix.of(
                                        key,
                                        keySerializer,
                                        operator.state().getMaxParallelism(),
                                        reader.keyGroupPrefixBytes());
                if (range != null
                        && !subtask.handle().getKeyGroupRange().contains(range.keyGroup())) {
                    continue;
                }
                Iterator<byte[][]> entries =
                        range == null
                                ? reader.scan(stateName).iterator()
                                : reader.scan(stateName, range.from(), range.to()).iterator();
                while (entries.hasNext()) {
                    byte[][] raw = entries.next();
                    EntryDecoder.Entry entry = decoder.decode(raw[0], raw[1]);
                    if ((key != null && !entry.keyText().equals(key))
                            || (keyPrefix != null && !entry.keyText().startsWith(keyPrefix))) {
                        continue;
                    }
                    out.println(json ? json(subtask.index(), entry) : text(subtask.index(), entry));
                }
            }
        }
        if (!found) {
            err.println("dump: operator " + operator.label() + " has no state " + stateName);
            return 1;
        }
        return 0;
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

    private static String json(int subtask, EntryDecoder.Entry e) {
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
