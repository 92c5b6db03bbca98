package org.forstrs.tools;

import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import org.forstrs.flink.snapshot.ForStAsyncSnapshot;
import org.forstrs.jni.ForStNative;

import javax.annotation.Nullable;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * One subtask's checkpointed database opened read-only through the engine ({@code
 * ForStNative.openCheckpointReader}): its files are read where they are, nothing is written
 * next to them. SSTs that a checkpoint storage kept as bytes rather than files (the JobManager's)
 * are written to a local scratch directory first, deleted at {@link #close}, as a restore stages
 * them.
 */
public final class SubtaskReader implements AutoCloseable {

    /** Entries per native scan call. */
    private static final int SCAN_CHUNK = 4096;

    /** One file of the database's tree. */
    public record FileInfo(
            int level, String name, String location, long bytes, long entries, String state) {}

    private final long handle;
    @Nullable private final KeyedBackendSerializationProxy<?> meta;
    @Nullable private final String metaProblem;
    private final int keyGroupPrefixBytes;
    private final java.nio.file.Path scratch;

    private SubtaskReader(
            long handle,
            @Nullable KeyedBackendSerializationProxy<?> meta,
            @Nullable String metaProblem,
            int keyGroupPrefixBytes,
            java.nio.file.Path scratch) {
        this.handle = handle;
        this.meta = meta;
        this.metaProblem = metaProblem;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.scratch = scratch;
    }

    static SubtaskReader open(
            IncrementalRemoteKeyedStateHandle checkpoint, int maxParallelism, String[] options)
            throws IOException {
        KeyedBackendSerializationProxy<?> meta =
                new KeyedBackendSerializationProxy<>(SubtaskReader.class.getClassLoader());
        String metaProblem = null;
        try (InputStream in = checkpoint.getMetaDataStateHandle().openInputStream()) {
            try {
                meta.read(new DataInputViewStreamWrapper(in));
            } catch (IOException | RuntimeException | LinkageError e) {
                // Serializer snapshots name the job's classes (a POJO's, say): without the job's
                // jar they do not resolve. The files can still be verified and scanned.
                meta = null;
                metaProblem = String.valueOf(e.getMessage());
            }
        }
        byte[] manifest = manifest(checkpoint);
        List<HandleAndLocalPath> shared = checkpoint.getSharedState();
        String[] names = new String[shared.size()];
        String[] uris = new String[shared.size()];
        java.nio.file.Path scratch = null;
        try {
            for (int i = 0; i < shared.size(); i++) {
                names[i] = shared.get(i).getLocalPath();
                StreamStateHandle file = shared.get(i).getHandle();
                if (file instanceof FileStateHandle) {
                    uris[i] = ((FileStateHandle) file).getFilePath().toUri().toString();
                } else {
                    if (scratch == null) {
                        scratch = Files.createTempDirectory("forst-tool-");
                    }
                    java.nio.file.Path copy = scratch.resolve(names[i]);
                    try (InputStream in = file.openInputStream()) {
                        Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
                    }
                    uris[i] = copy.toUri().toString();
                }
            }
            int prefixBytes =
                    CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                            maxParallelism);
            long handle =
                    ForStNative.openCheckpointReader(
                            options,
                            manifest,
                            names,
                            uris,
                            checkpoint.getKeyGroupRange().getStartKeyGroup(),
                            checkpoint.getKeyGroupRange().getEndKeyGroup(),
                            prefixBytes);
            return new SubtaskReader(handle, meta, metaProblem, prefixBytes, scratch);
        } catch (Throwable t) {
            deleteScratch(scratch);
            throw t;
        }
    }

    private static byte[] manifest(IncrementalRemoteKeyedStateHandle checkpoint)
            throws IOException {
        for (HandleAndLocalPath file : checkpoint.getPrivateState()) {
            if (ForStAsyncSnapshot.MANIFEST_NAME.equals(file.getLocalPath())) {
                try (InputStream in = file.getHandle().openInputStream()) {
                    return in.readAllBytes();
                }
            }
        }
        throw new IOException(
                "checkpoint "
                        + checkpoint.getCheckpointId()
                        + " of backend "
                        + checkpoint.getBackendIdentifier()
                        + " has no "
                        + ForStAsyncSnapshot.MANIFEST_NAME
                        + ": not written by the ForSt-RS state backend");
    }

    /**
     * The state meta info the checkpoint holds (names, kinds, serializers); null if it does not
     * decode here ({@link #metaProblem}).
     */
    @Nullable
    public KeyedBackendSerializationProxy<?> meta() {
        return meta;
    }

    /**
     * Why the meta info does not decode here (typically a class of the job missing from the
     * class path), or null when it does.
     */
    @Nullable
    public String metaProblem() {
        return metaProblem;
    }

    /** The meta info of each state, by name, in the checkpoint's order; empty without meta. */
    public Map<String, StateMetaInfoSnapshot> states() {
        Map<String, StateMetaInfoSnapshot> states = new LinkedHashMap<>();
        if (meta == null) {
            return states;
        }
        for (StateMetaInfoSnapshot snapshot : meta.getStateMetaInfoSnapshots()) {
            states.put(snapshot.getName(), snapshot);
        }
        return states;
    }

    public int keyGroupPrefixBytes() {
        return keyGroupPrefixBytes;
    }

    /** Names of the database's column families (one per state). */
    public List<String> families() {
        return Arrays.asList(ForStNative.checkpointReaderFamilies(handle));
    }

    public List<FileInfo> files() {
        String[] rows = ForStNative.checkpointReaderFiles(handle);
        List<FileInfo> files = new ArrayList<>();
        for (int i = 0; i + 5 < rows.length; i += 6) {
            files.add(
                    new FileInfo(
                            Integer.parseInt(rows[i]),
                            rows[i + 1],
                            rows[i + 2],
                            Long.parseLong(rows[i + 3]),
                            Long.parseLong(rows[i + 4]),
                            rows[i + 5]));
        }
        return files;
    }

    /** Entries of the state (one per key; a map state's one per user key). */
    public long count(String state) {
        return ForStNative.checkpointReaderCount(handle, state);
    }

    /** Every entry of {@code state} in key order, raw: key and value as the backend wrote them. */
    public Stream<byte[][]> scan(String state) {
        return scan(state, null, null);
    }

    /**
     * The entries of {@code state} from key {@code from} (inclusive; null: the first) to {@code
     * to} (exclusive; null: the last), in key order, raw.
     */
    public Stream<byte[][]> scan(String state, byte[] from, byte[] to) {
        return Stream.iterate(
                        ForStNative.checkpointReaderScan(handle, state, from, to, SCAN_CHUNK),
                        chunk -> chunk != null,
                        chunk ->
                                chunk.length < 2 * SCAN_CHUNK
                                        ? null
                                        : ForStNative.checkpointReaderScan(
                                                handle,
                                                state,
                                                successor(chunk[chunk.length - 2]),
                                                to,
                                                SCAN_CHUNK))
                .flatMap(
                        chunk -> {
                            List<byte[][]> entries = new ArrayList<>(chunk.length / 2);
                            for (int i = 0; i + 1 < chunk.length; i += 2) {
                                entries.add(new byte[][] {chunk[i], chunk[i + 1]});
                            }
                            return entries.stream();
                        });
    }

    /** Problems found reading every file and block (each naming its file); empty: sound. */
    public List<String> verify() {
        return Arrays.asList(ForStNative.checkpointReaderVerify(handle));
    }

    /** The smallest key after {@code key}. */
    private static byte[] successor(byte[] key) {
        return Arrays.copyOf(key, key.length + 1);
    }

    @Override
    public void close() {
        try {
            ForStNative.closeCheckpointReader(handle);
        } finally {
            deleteScratch(scratch);
        }
    }

    private static void deleteScratch(java.nio.file.Path scratch) {
        if (scratch == null) {
            return;
        }
        try (Stream<java.nio.file.Path> files = Files.walk(scratch)) {
            files.sorted((a, b) -> b.getNameCount() - a.getNameCount())
                    .forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // A scratch file left in the temporary directory is harmless.
        }
    }
}
