package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ForStTool inspect}: what a checkpoint or savepoint holds, per operator and subtask (see
 * {@link ForStTool#USAGE} for the output's lines).
 */
final class Inspect {

    private static final Pattern CHECKPOINT_DIR = Pattern.compile("chk-(\\d+)");

    private Inspect() {}

    static int run(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        if (args.length != 2 || args[1].startsWith("--")) {
            err.println(
                    "inspect: expected one checkpoint or savepoint directory\n" + ForStTool.USAGE);
            return 2;
        }
        Path dir = new Path(args[1]);
        CheckpointContents contents = CheckpointContents.load(dir, config);
        Map<String, String> earlier = earlierReferences(dir, contents.checkpointId());
        String jobDir = ReferencedFiles.key(dir.getParent()) + "/";
        out.printf(
                "checkpoint %s checkpoint-id=%d operators=%d%n",
                dir, contents.checkpointId(), contents.operators().size());
        for (CheckpointContents.Operator operator : contents.operators()) {
            out.printf(
                    "operator %s id=%s name=%s parallelism=%d max-parallelism=%d"
                            + " forst-subtasks=%d other-keyed-handles=%d%n",
                    operator.label(),
                    operator.id(),
                    JsonText.string(operator.name().orElse("")),
                    operator.state().getParallelism(),
                    operator.state().getMaxParallelism(),
                    operator.subtasks().size(),
                    operator.otherKeyedHandles());
            for (CheckpointContents.Subtask subtask : operator.subtasks()) {
                try (SubtaskReader reader = contents.open(operator, subtask)) {
                    subtask(operator, subtask, reader, earlier, jobDir, out);
                }
            }
        }
        return 0;
    }

    private static void subtask(
            CheckpointContents.Operator operator,
            CheckpointContents.Subtask subtask,
            SubtaskReader reader,
            Map<String, String> earlier,
            String jobDir,
            PrintStream out) {
        List<SubtaskReader.FileInfo> files = reader.files();
        long bytes = 0;
        long sharedFiles = 0;
        long sharedBytes = 0;
        List<String> sharing = new ArrayList<>();
        for (SubtaskReader.FileInfo file : files) {
            bytes += file.bytes();
            String key = ReferencedFiles.key(new Path(file.location()));
            String shared =
                    earlier.containsKey(key)
                            ? earlier.get(key)
                            : key.startsWith(jobDir) ? "no" : "elsewhere";
            sharing.add(shared);
            if (!shared.equals("no")) {
                sharedFiles++;
                sharedBytes += file.bytes();
            }
        }
        out.printf(
                "subtask %d operator=%s key-groups=%d-%d checkpoint-id=%d files=%d bytes=%d"
                        + " shared-files=%d shared-bytes=%d%n",
                subtask.index(),
                operator.label(),
                subtask.handle().getKeyGroupRange().getStartKeyGroup(),
                subtask.handle().getKeyGroupRange().getEndKeyGroup(),
                subtask.handle().getCheckpointId(),
                files.size(),
                bytes,
                sharedFiles,
                sharedBytes);
        if (reader.metaProblem() != null) {
            out.printf(
                    "note operator=%s subtask=%d states-undecoded=%s%n",
                    operator.label(), subtask.index(), JsonText.string(reader.metaProblem()));
        }
        TypeSerializer<?> keySerializer = keySerializer(reader);
        Map<String, StateMetaInfoSnapshot> states = reader.states();
        Set<String> families = new java.util.TreeSet<>(reader.families());
        Map<String, long[]> perState = new TreeMap<>();
        for (SubtaskReader.FileInfo file : files) {
            long[] counts = perState.computeIfAbsent(file.state(), s -> new long[2]);
            counts[0]++;
            counts[1] += file.bytes();
        }
        for (StateMetaInfoSnapshot snapshot : states.values()) {
            StateDescription state = StateDescription.of(snapshot);
            boolean stored = families.remove(state.name);
            out.printf(
                    "state %s operator=%s subtask=%d kind=%s type=%s ttl=%s entries=%s files=%d"
                            + " bytes=%d key=%s namespace=%s user-key=%s value=%s%n",
                    JsonText.string(state.name),
                    operator.label(),
                    subtask.index(),
                    state.kind,
                    state.backendType,
                    state.ttl,
                    stored ? Long.toString(reader.count(state.name)) : "-",
                    perState.getOrDefault(state.name, new long[2])[0],
                    perState.getOrDefault(state.name, new long[2])[1],
                    StateDescription.describe(keySerializer),
                    StateDescription.describe(state.namespace),
                    StateDescription.describe(state.userKey),
                    StateDescription.describe(state.value));
        }
        for (String family : families) {
            out.printf(
                    "state %s operator=%s subtask=%d kind=unknown type=- ttl=false entries=%d"
                            + " files=%d bytes=%d key=- namespace=- user-key=- value=-%n",
                    JsonText.string(family),
                    operator.label(),
                    subtask.index(),
                    reader.count(family),
                    perState.getOrDefault(family, new long[2])[0],
                    perState.getOrDefault(family, new long[2])[1]);
        }
        Map<Integer, long[]> levels = new TreeMap<>();
        for (SubtaskReader.FileInfo file : files) {
            long[] level = levels.computeIfAbsent(file.level(), l -> new long[2]);
            level[0]++;
            level[1] += file.bytes();
        }
        levels.forEach(
                (level, counts) ->
                        out.printf(
                                "level %d operator=%s subtask=%d files=%d bytes=%d%n",
                                level, operator.label(), subtask.index(), counts[0], counts[1]));
        for (int i = 0; i < files.size(); i++) {
            SubtaskReader.FileInfo file = files.get(i);
            out.printf(
                    "file %s operator=%s subtask=%d state=%s level=%d bytes=%d entries=%d"
                            + " shared=%s location=%s%n",
                    file.name(),
                    operator.label(),
                    subtask.index(),
                    JsonText.string(file.state()),
                    file.level(),
                    file.bytes(),
                    file.entries(),
                    sharing.get(i),
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

    /**
     * The files the retained checkpoints before {@code checkpointId} in the same job directory
     * reference, each with the first ({@code chk-<n>}) that does.
     */
    private static Map<String, String> earlierReferences(Path dir, long checkpointId)
            throws IOException {
        Map<String, String> earlier = new TreeMap<>();
        Matcher own = CHECKPOINT_DIR.matcher(dir.getName());
        Path jobDir = dir.getParent();
        if (!own.matches() || jobDir == null) {
            return earlier;
        }
        FileSystem fs = jobDir.getFileSystem();
        FileStatus[] siblings = fs.listStatus(jobDir);
        List<Long> ids = new ArrayList<>();
        for (FileStatus sibling : siblings == null ? new FileStatus[0] : siblings) {
            Matcher m = CHECKPOINT_DIR.matcher(sibling.getPath().getName());
            if (m.matches()
                    && Long.parseLong(m.group(1)) < checkpointId
                    && fs.exists(new Path(sibling.getPath(), "_metadata"))) {
                ids.add(Long.parseLong(m.group(1)));
            }
        }
        ids.sort(Long::compare);
        for (long id : ids) {
            for (String file : ReferencedFiles.of(new Path(jobDir, "chk-" + id))) {
                earlier.putIfAbsent(file, "chk-" + id);
            }
        }
        return earlier;
    }
}
