package org.forstrs.tools;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import javax.annotation.Nullable;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a checkpoint or savepoint holds, as a tree of records: operators, their subtasks'
 * databases, states, levels and files. {@code inspect} prints it as lines ({@link Inspect}), the
 * web monitor as JSON ({@link #json}); both read it from here so they never disagree. A damaged
 * checkpoint is read as far as it can be: a database that cannot be opened, or a state whose
 * entries cannot be counted (a damaged or missing file), is marked with the reason, naming the
 * file, and everything else is shown.
 */
final class Inspection {

    private static final Pattern CHECKPOINT_DIR = Pattern.compile("chk-(\\d+)");

    /** The checkpoint in {@code dir}. */
    record Checkpoint(String dir, long checkpointId, List<Operator> operators) {

        /** What could not be read, one {@link Inspection#damageLine} each. */
        List<String> damage() {
            List<String> damage = new ArrayList<>();
            for (Operator operator : operators) {
                for (Subtask subtask : operator.subtasks) {
                    if (subtask.damaged != null) {
                        damage.add(
                                damageLine(operator.label, subtask.index, null, subtask.damaged));
                    }
                    for (State state : subtask.states) {
                        if (state.damaged != null) {
                            damage.add(
                                    damageLine(
                                            operator.label,
                                            subtask.index,
                                            state.name,
                                            state.damaged));
                        }
                    }
                }
            }
            return damage;
        }
    }

    record Operator(
            String label,
            String id,
            String name,
            int parallelism,
            int maxParallelism,
            int forstSubtasks,
            long otherKeyedHandles,
            List<Subtask> subtasks) {}

    /**
     * One subtask's database; {@code oldest} and {@code newest} are its files by the file
     * system's modification time (null when it lists none); {@code statesUndecoded} says why its
     * state meta info does not decode here (a class of the job missing), else null; {@code
     * damaged} why the database could not be read at all (then it lists nothing), else null.
     */
    record Subtask(
            int index,
            int firstKeyGroup,
            int lastKeyGroup,
            long checkpointId,
            long files,
            long bytes,
            long sharedFiles,
            long sharedBytes,
            @Nullable Dated oldest,
            @Nullable Dated newest,
            @Nullable String statesUndecoded,
            @Nullable String damaged,
            List<State> states,
            List<Level> levels,
            List<File> fileList) {}

    /** A file's name and modification time. */
    record Dated(String name, Instant modified) {
        String text() {
            return name + "@" + modified;
        }
    }

    /**
     * One state of one subtask; {@code entries} is null for a state the database has no column
     * family of, or whose entries could not be read ({@code damaged} says why, naming the file);
     * serializers are described by {@link StateDescription#describe}.
     */
    record State(
            String name,
            String kind,
            String type,
            boolean ttl,
            @Nullable Long entries,
            long files,
            long bytes,
            String key,
            String namespace,
            String userKey,
            String value,
            @Nullable String damaged) {}

    record Level(int level, long files, long bytes) {}

    /** {@code shared}: no, chk-<n> (an earlier retained checkpoint references it) or elsewhere. */
    record File(
            String name,
            String state,
            int level,
            long bytes,
            long entries,
            String shared,
            String location) {}

    private Inspection() {}

    /** Reads the checkpoint in {@code dir} and each of its ForSt-RS databases. */
    static Checkpoint of(Path dir, Configuration config) throws IOException {
        CheckpointContents contents = CheckpointContents.load(dir, config);
        Map<String, String> earlier = earlierReferences(dir, contents.checkpointId());
        String jobDir = ReferencedFiles.key(dir.getParent()) + "/";
        List<Operator> operators = new ArrayList<>();
        for (CheckpointContents.Operator operator : contents.operators()) {
            List<Subtask> subtasks = new ArrayList<>();
            for (CheckpointContents.Subtask subtask : operator.subtasks()) {
                subtasks.add(subtask(contents, operator, subtask, earlier, jobDir));
            }
            operators.add(
                    new Operator(
                            operator.label(),
                            operator.id(),
                            operator.name().orElse(""),
                            operator.state().getParallelism(),
                            operator.state().getMaxParallelism(),
                            operator.subtasks().size(),
                            operator.otherKeyedHandles(),
                            List.copyOf(subtasks)));
        }
        return new Checkpoint(dir.toString(), contents.checkpointId(), List.copyOf(operators));
    }

    /** The subtask's database, or a record of why it could not be read. */
    private static Subtask subtask(
            CheckpointContents contents,
            CheckpointContents.Operator operator,
            CheckpointContents.Subtask subtask,
            Map<String, String> earlier,
            String jobDir) {
        try (SubtaskReader reader = contents.open(operator, subtask)) {
            return subtask(subtask, reader, earlier, jobDir);
        } catch (Exception e) { // native errors arrive unchecked too: any of them is damage
            return new Subtask(
                    subtask.index(),
                    subtask.handle().getKeyGroupRange().getStartKeyGroup(),
                    subtask.handle().getKeyGroupRange().getEndKeyGroup(),
                    subtask.handle().getCheckpointId(),
                    0,
                    0,
                    0,
                    0,
                    null,
                    null,
                    null,
                    reason(e),
                    List.of(),
                    List.of(),
                    List.of());
        }
    }

    private static Subtask subtask(
            CheckpointContents.Subtask subtask,
            SubtaskReader reader,
            Map<String, String> earlier,
            String jobDir)
            throws IOException {
        List<SubtaskReader.FileInfo> files = reader.files();
        long bytes = 0;
        long sharedFiles = 0;
        long sharedBytes = 0;
        Dated oldest = null;
        Dated newest = null;
        List<File> fileList = new ArrayList<>();
        Map<String, long[]> perState = new TreeMap<>();
        Map<Integer, long[]> levels = new TreeMap<>();
        for (SubtaskReader.FileInfo file : files) {
            bytes += file.bytes();
            Path location = new Path(file.location());
            String key = ReferencedFiles.key(location);
            String shared =
                    earlier.containsKey(key)
                            ? earlier.get(key)
                            : key.startsWith(jobDir) ? "no" : "elsewhere";
            if (!shared.equals("no")) {
                sharedFiles++;
                sharedBytes += file.bytes();
            }
            fileList.add(
                    new File(
                            file.name(),
                            file.state(),
                            file.level(),
                            file.bytes(),
                            file.entries(),
                            shared,
                            file.location()));
            add(perState.computeIfAbsent(file.state(), s -> new long[2]), file.bytes());
            add(levels.computeIfAbsent(file.level(), l -> new long[2]), file.bytes());
            Dated dated = dated(file.name(), location);
            if (dated != null && (oldest == null || dated.modified.isBefore(oldest.modified))) {
                oldest = dated;
            }
            if (dated != null && (newest == null || dated.modified.isAfter(newest.modified))) {
                newest = dated;
            }
        }
        TypeSerializer<?> keySerializer = Inspect.keySerializer(reader);
        Set<String> families = new TreeSet<>(reader.families());
        List<State> states = new ArrayList<>();
        for (StateMetaInfoSnapshot snapshot : reader.states().values()) {
            StateDescription state = StateDescription.of(snapshot);
            boolean stored = families.remove(state.name);
            long[] counts = perState.getOrDefault(state.name, new long[2]);
            Counted counted = stored ? count(reader, state.name) : Counted.NONE;
            states.add(
                    new State(
                            state.name,
                            state.kind,
                            state.backendType,
                            state.ttl,
                            counted.entries,
                            counts[0],
                            counts[1],
                            StateDescription.describe(keySerializer),
                            StateDescription.describe(state.namespace),
                            StateDescription.describe(state.userKey),
                            StateDescription.describe(state.value),
                            counted.damaged));
        }
        for (String family : families) {
            long[] counts = perState.getOrDefault(family, new long[2]);
            Counted counted = count(reader, family);
            states.add(
                    new State(
                            family,
                            "unknown",
                            "-",
                            false,
                            counted.entries,
                            counts[0],
                            counts[1],
                            "-",
                            "-",
                            "-",
                            "-",
                            counted.damaged));
        }
        List<Level> levelList = new ArrayList<>();
        levels.forEach((level, c) -> levelList.add(new Level(level, c[0], c[1])));
        return new Subtask(
                subtask.index(),
                subtask.handle().getKeyGroupRange().getStartKeyGroup(),
                subtask.handle().getKeyGroupRange().getEndKeyGroup(),
                subtask.handle().getCheckpointId(),
                files.size(),
                bytes,
                sharedFiles,
                sharedBytes,
                oldest,
                newest,
                reader.metaProblem(),
                null,
                List.copyOf(states),
                List.copyOf(levelList),
                List.copyOf(fileList));
    }

    /** A state's entries, or why they could not be counted. */
    private record Counted(@Nullable Long entries, @Nullable String damaged) {
        static final Counted NONE = new Counted(null, null);
    }

    private static Counted count(SubtaskReader reader, String family) {
        try {
            return new Counted(reader.count(family), null);
        } catch (Exception e) { // native errors arrive unchecked too: any of them is damage
            return new Counted(null, reason(e));
        }
    }

    /** {@code operator= subtask= [state=] reason=}: what {@code inspect} and {@code dump} print. */
    static String damageLine(
            String operator, int subtask, @Nullable String state, String reason) {
        return "operator="
                + operator
                + " subtask="
                + subtask
                + (state == null ? "" : " state=" + JsonText.string(state))
                + " reason="
                + JsonText.string(reason);
    }

    /** An error's message (the native ones name the file), or its class when it has none. */
    static String reason(Throwable e) {
        return e.getMessage() == null ? e.getClass().getName() : e.getMessage();
    }

    private static void add(long[] counts, long bytes) {
        counts[0]++;
        counts[1] += bytes;
    }

    /** The file's modification time; null if the file system cannot tell (it is gone). */
    @Nullable
    private static Dated dated(String name, Path location) {
        try {
            FileStatus status = location.getFileSystem().getFileStatus(location);
            return new Dated(name, Instant.ofEpochMilli(status.getModificationTime()));
        } catch (IOException e) {
            return null; // verify reports missing files; inspect shows what it can
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

    /** The checkpoint as one JSON object (the web monitor's {@code /api/inspect}). */
    static String json(Checkpoint c) {
        Json out = new Json().open();
        out.field("dir", c.dir).field("checkpointId", c.checkpointId).array("operators");
        for (Operator o : c.operators) {
            out.open()
                    .field("label", o.label)
                    .field("id", o.id)
                    .field("name", o.name)
                    .field("parallelism", o.parallelism)
                    .field("maxParallelism", o.maxParallelism)
                    .field("forstSubtasks", o.forstSubtasks)
                    .field("otherKeyedHandles", o.otherKeyedHandles)
                    .array("subtasks");
            for (Subtask s : o.subtasks) {
                subtaskJson(s, out);
            }
            out.end().close();
        }
        return out.end().close().toString();
    }

    private static void subtaskJson(Subtask s, Json out) {
        out.open()
                .field("index", s.index)
                .field("firstKeyGroup", s.firstKeyGroup)
                .field("lastKeyGroup", s.lastKeyGroup)
                .field("checkpointId", s.checkpointId)
                .field("files", s.files)
                .field("bytes", s.bytes)
                .field("sharedFiles", s.sharedFiles)
                .field("sharedBytes", s.sharedBytes);
        dated("oldest", s.oldest, out);
        dated("newest", s.newest, out);
        out.field("statesUndecoded", s.statesUndecoded);
        out.field("damaged", s.damaged);
        out.array("states");
        for (State st : s.states) {
            out.open()
                    .field("name", st.name)
                    .field("kind", st.kind)
                    .field("type", st.type)
                    .field("ttl", st.ttl)
                    .field("entries", st.entries)
                    .field("files", st.files)
                    .field("bytes", st.bytes)
                    .field("key", st.key)
                    .field("namespace", st.namespace)
                    .field("userKey", st.userKey)
                    .field("value", st.value)
                    .field("damaged", st.damaged)
                    .close();
        }
        out.end().array("levels");
        for (Level l : s.levels) {
            out.open()
                    .field("level", l.level)
                    .field("files", l.files)
                    .field("bytes", l.bytes)
                    .close();
        }
        out.end().array("fileList");
        for (File f : s.fileList) {
            out.open()
                    .field("name", f.name)
                    .field("state", f.state)
                    .field("level", f.level)
                    .field("bytes", f.bytes)
                    .field("entries", f.entries)
                    .field("shared", f.shared)
                    .field("location", f.location)
                    .close();
        }
        out.end().close();
    }

    private static void dated(String name, @Nullable Dated d, Json out) {
        if (d == null) {
            out.field(name, (String) null);
        } else {
            out.object(name)
                    .field("name", d.name)
                    .field("modified", d.modified.toString())
                    .close();
        }
    }
}
