package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;

import java.io.PrintStream;
import java.util.List;

/**
 * {@code ForStTool inspect}: what a checkpoint or savepoint holds, per operator and subtask,
 * read by {@link Inspection} and printed one line per item (see {@link ForStTool#USAGE}).
 */
final class Inspect {

    private Inspect() {}

    static int run(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        if (args.length != 2 || args[1].startsWith("--")) {
            err.println(
                    "inspect: expected one checkpoint or savepoint directory\n" + ForStTool.USAGE);
            return 2;
        }
        Inspection.Checkpoint checkpoint = Inspection.of(new Path(args[1]), config);
        print(checkpoint, out);
        List<String> damage = checkpoint.damage();
        damage.forEach(line -> out.println("damaged " + line));
        return damage.isEmpty() ? 0 : 1;
    }

    static void print(Inspection.Checkpoint checkpoint, PrintStream out) {
        out.printf(
                "checkpoint %s checkpoint-id=%d operators=%d%n",
                checkpoint.dir(), checkpoint.checkpointId(), checkpoint.operators().size());
        for (Inspection.Operator operator : checkpoint.operators()) {
            out.printf(
                    "operator %s id=%s name=%s parallelism=%d max-parallelism=%d"
                            + " forst-subtasks=%d other-keyed-handles=%d%n",
                    operator.label(),
                    operator.id(),
                    JsonText.string(operator.name()),
                    operator.parallelism(),
                    operator.maxParallelism(),
                    operator.forstSubtasks(),
                    operator.otherKeyedHandles());
            for (Inspection.Subtask subtask : operator.subtasks()) {
                subtask(operator.label(), subtask, out);
            }
        }
    }

    private static void subtask(String operator, Inspection.Subtask subtask, PrintStream out) {
        out.printf(
                "subtask %d operator=%s key-groups=%d-%d checkpoint-id=%d files=%d bytes=%d"
                        + " shared-files=%d shared-bytes=%d oldest=%s newest=%s%n",
                subtask.index(),
                operator,
                subtask.firstKeyGroup(),
                subtask.lastKeyGroup(),
                subtask.checkpointId(),
                subtask.files(),
                subtask.bytes(),
                subtask.sharedFiles(),
                subtask.sharedBytes(),
                subtask.oldest() == null ? "-" : subtask.oldest().text(),
                subtask.newest() == null ? "-" : subtask.newest().text());
        if (subtask.statesUndecoded() != null) {
            out.printf(
                    "note operator=%s subtask=%d states-undecoded=%s%n",
                    operator, subtask.index(), JsonText.string(subtask.statesUndecoded()));
        }
        for (Inspection.State state : subtask.states()) {
            out.printf(
                    "state %s operator=%s subtask=%d kind=%s type=%s ttl=%s entries=%s files=%d"
                            + " bytes=%d key=%s namespace=%s user-key=%s value=%s%n",
                    JsonText.string(state.name()),
                    operator,
                    subtask.index(),
                    state.kind(),
                    state.type(),
                    state.ttl(),
                    state.entries() == null ? "-" : state.entries().toString(),
                    state.files(),
                    state.bytes(),
                    state.key(),
                    state.namespace(),
                    state.userKey(),
                    state.value());
        }
        for (Inspection.Level level : subtask.levels()) {
            out.printf(
                    "level %d operator=%s subtask=%d files=%d bytes=%d%n",
                    level.level(), operator, subtask.index(), level.files(), level.bytes());
        }
        for (Inspection.File file : subtask.fileList()) {
            out.printf(
                    "file %s operator=%s subtask=%d state=%s level=%d bytes=%d entries=%d"
                            + " shared=%s location=%s%n",
                    file.name(),
                    operator,
                    subtask.index(),
                    JsonText.string(file.state()),
                    file.level(),
                    file.bytes(),
                    file.entries(),
                    file.shared(),
                    file.location());
        }
    }

    static TypeSerializer<?> keySerializer(SubtaskReader reader) {
        try {
            return reader.meta().getKeySerializerSnapshot().restoreSerializer();
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }
}
