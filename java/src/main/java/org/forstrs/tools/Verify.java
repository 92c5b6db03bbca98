package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.AbstractChannelStateHandle;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.StateObject;
import org.apache.flink.runtime.state.StreamStateHandle;

import java.io.InputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code ForStTool verify}: reads everything a checkpoint or savepoint references. Each ForSt-RS
 * database is opened read-only and every SST checked block by block (sizes, checksums,
 * structure) by the engine, its manifest against the files its handle names; every other file
 * (state meta info, manifests, operator and channel state) is read to its end.
 */
final class Verify {

    private Verify() {}

    static int run(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        if (args.length != 2 || args[1].startsWith("--")) {
            err.println(
                    "verify: expected one checkpoint or savepoint directory\n" + ForStTool.USAGE);
            return 2;
        }
        Path dir = new Path(args[1]);
        CheckpointContents contents;
        try {
            contents = CheckpointContents.load(dir, config);
        } catch (Exception e) {
            out.printf("bad %s: %s%n", new Path(dir, "_metadata"), e);
            out.println("result=fail databases=0 problems=1");
            return 1;
        }
        List<String> problems = new ArrayList<>();
        int databases = 0;
        for (CheckpointContents.Operator operator : contents.operators()) {
            for (OperatorSubtaskState subtask : operator.state().getStates()) {
                readOtherState(subtask, problems);
            }
            for (CheckpointContents.Subtask subtask : operator.subtasks()) {
                databases++;
                List<String> found = new ArrayList<>();
                try (SubtaskReader reader = contents.open(operator, subtask)) {
                    found.addAll(reader.verify());
                } catch (Exception e) {
                    found.add(describe(subtask.handle()) + ": " + e);
                }
                out.printf(
                        "database operator=%s subtask=%d %s%n",
                        operator.label(), subtask.index(), found.isEmpty() ? "ok" : "bad");
                problems.addAll(found);
            }
        }
        for (String problem : problems) {
            out.println("bad " + problem);
        }
        out.printf(
                "result=%s databases=%d problems=%d%n",
                problems.isEmpty() ? "pass" : "fail", databases, problems.size());
        return problems.isEmpty() ? 0 : 1;
    }

    private static String describe(IncrementalRemoteKeyedStateHandle handle) {
        return "checkpoint "
                + handle.getCheckpointId()
                + " of backend "
                + handle.getBackendIdentifier();
    }

    /** Reads every stream of a subtask's state but ForSt-RS's SSTs (the engine checks those). */
    private static void readOtherState(OperatorSubtaskState subtask, List<String> problems) {
        List<StateObject> handles = new ArrayList<>();
        subtask.getManagedOperatorState().forEach(handles::add);
        subtask.getRawOperatorState().forEach(handles::add);
        subtask.getManagedKeyedState().forEach(handles::add);
        subtask.getRawKeyedState().forEach(handles::add);
        subtask.getInputChannelState().forEach(handles::add);
        subtask.getResultSubpartitionState().forEach(handles::add);
        for (StateObject handle : handles) {
            for (StreamStateHandle stream : streams(handle)) {
                try (InputStream in = stream.openInputStream()) {
                    in.transferTo(java.io.OutputStream.nullOutputStream());
                } catch (Exception e) {
                    problems.add(stream + ": " + e);
                }
            }
        }
    }

    private static List<StreamStateHandle> streams(StateObject handle) {
        List<StreamStateHandle> streams = new ArrayList<>();
        if (handle instanceof IncrementalRemoteKeyedStateHandle) {
            IncrementalRemoteKeyedStateHandle incremental =
                    (IncrementalRemoteKeyedStateHandle) handle;
            streams.add(incremental.getMetaDataStateHandle());
            for (HandleAndLocalPath file : incremental.getPrivateState()) {
                streams.add(file.getHandle());
            }
        } else if (handle instanceof KeyGroupsStateHandle) {
            streams.add(((KeyGroupsStateHandle) handle).getDelegateStateHandle());
        } else if (handle instanceof OperatorStreamStateHandle) {
            streams.add(((OperatorStreamStateHandle) handle).getDelegateStateHandle());
        } else if (handle instanceof AbstractChannelStateHandle) {
            streams.add(((AbstractChannelStateHandle<?>) handle).getDelegate());
        } else if (handle instanceof StreamStateHandle) {
            streams.add((StreamStateHandle) handle);
        }
        return streams;
    }
}
