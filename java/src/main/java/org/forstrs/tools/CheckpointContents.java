package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;

import org.forstrs.flink.config.ForStOptions;
import org.forstrs.flink.config.S3Settings;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A checkpoint or savepoint as the tools see it: its operators (from {@code _metadata}, read with
 * Flink's deserializer) and, per operator, the ForSt-RS databases its subtasks checkpointed
 * ({@link IncrementalRemoteKeyedStateHandle}s), in subtask order. Nothing is opened or read
 * beyond {@code _metadata} until a {@link SubtaskReader} is opened.
 */
public final class CheckpointContents {

    /** One operator of the checkpoint. */
    public record Operator(OperatorState state, List<Subtask> subtasks) {

        /** The uid if the job set one, else the operator id. */
        public String label() {
            return state.getOperatorUid().filter(u -> !u.isEmpty()).orElse(id());
        }

        public String id() {
            return state.getOperatorID().toHexString();
        }

        public Optional<String> name() {
            return state.getOperatorName().filter(n -> !n.isEmpty());
        }

        /** Whether {@code selector} names this operator: its uid, id or name. */
        public boolean matches(String selector) {
            return selector.equals(id())
                    || selector.equals(state.getOperatorUid().orElse(null))
                    || selector.equals(state.getOperatorName().orElse(null));
        }

        /** Keyed state handles of other kinds than ForSt-RS's native one (canonical savepoints). */
        public long otherKeyedHandles() {
            long count = 0;
            for (OperatorSubtaskState subtask : state.getStates()) {
                for (KeyedStateHandle handle : subtask.getManagedKeyedState()) {
                    if (!(handle instanceof IncrementalRemoteKeyedStateHandle)) {
                        count++;
                    }
                }
            }
            return count;
        }
    }

    /** One checkpointed database of one subtask. */
    public record Subtask(int index, IncrementalRemoteKeyedStateHandle handle) {}

    private final Path dir;
    private final CheckpointMetadata metadata;
    private final List<Operator> operators;
    private final String[] nativeOptions;

    private CheckpointContents(Path dir, CheckpointMetadata metadata, String[] nativeOptions) {
        this.dir = dir;
        this.metadata = metadata;
        this.nativeOptions = nativeOptions;
        List<Operator> list = new ArrayList<>();
        for (OperatorState operator : metadata.getOperatorStates()) {
            List<Subtask> subtasks = new ArrayList<>();
            for (Map.Entry<Integer, OperatorSubtaskState> e :
                    operator.getSubtaskStates().entrySet()) {
                for (KeyedStateHandle handle : e.getValue().getManagedKeyedState()) {
                    if (handle instanceof IncrementalRemoteKeyedStateHandle) {
                        subtasks.add(
                                new Subtask(
                                        e.getKey(), (IncrementalRemoteKeyedStateHandle) handle));
                    }
                }
            }
            subtasks.sort(Comparator.comparingInt(Subtask::index));
            list.add(new Operator(operator, List.copyOf(subtasks)));
        }
        list.sort(Comparator.comparing(Operator::label));
        this.operators = List.copyOf(list);
    }

    /**
     * Reads the {@code _metadata} in {@code dir}; {@code config} gives the native reader its
     * storage settings (Flink's {@code s3.*} keys, {@code state.backend.forst.fs.force-proxy}).
     */
    public static CheckpointContents load(Path dir, Configuration config) throws IOException {
        List<String> options = new ArrayList<>(S3Settings.fromConfig(config).nativeOptions());
        if (config.get(ForStOptions.FS_FORCE_PROXY)) {
            options.add("fs.force-proxy");
            options.add("true");
        }
        return new CheckpointContents(
                dir, ReferencedFiles.load(dir), options.toArray(new String[0]));
    }

    public Path dir() {
        return dir;
    }

    public long checkpointId() {
        return metadata.getCheckpointId();
    }

    /** Operators by label (uid, else id). */
    public List<Operator> operators() {
        return operators;
    }

    /** The operator {@code selector} names (uid, id or name; the last in label order). */
    public Optional<Operator> operator(String selector) {
        Operator found = null;
        for (Operator candidate : operators) {
            if (candidate.matches(selector)) {
                found = candidate;
            }
        }
        return Optional.ofNullable(found);
    }

    /** Opens a subtask's database read-only; the caller closes it. */
    public SubtaskReader open(Operator operator, Subtask subtask) throws IOException {
        return SubtaskReader.open(
                subtask.handle(), operator.state().getMaxParallelism(), nativeOptions);
    }
}
