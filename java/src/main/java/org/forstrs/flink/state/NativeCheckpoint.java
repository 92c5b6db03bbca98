package org.forstrs.flink.state;

import org.forstrs.jni.ForStNative;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A checkpoint of a {@link NativeDb} between its synchronous phase and its release: the files it
 * names stay pinned (compaction does not delete them) until {@link #release()}.
 */
public final class NativeCheckpoint {

    /** Bytes per native read when a file is streamed out: few calls, bounded memory. */
    static final int STREAM_CHUNK_BYTES = 1 << 20;

    private final NativeDb db;
    private final long handle;
    private final AtomicBoolean released = new AtomicBoolean();

    NativeCheckpoint(NativeDb db, long handle) {
        this.db = db;
        this.handle = handle;
    }

    /** The directory of the DB the checkpoint is of, as the engine opened it. */
    public String dbUri() {
        return db.uri();
    }

    /** The database the checkpoint is of. */
    public NativeDb db() {
        return db;
    }

    /** Waits for the frozen data to be flushed; returns the opaque manifest. */
    public byte[] manifest() {
        return db.whileOpen(() -> ForStNative.checkpointManifest(handle));
    }

    /** SST names relative to the DB directory (valid after {@link #manifest()}). */
    public String[] fileNames() {
        return db.whileOpen(() -> ForStNative.checkpointFileNames(handle));
    }

    /**
     * Per file of {@link #fileNames()}: its URI when it lives outside the DB directory (restored
     * by reference, owned by an earlier checkpoint), else null.
     */
    public String[] fileLocations() {
        return db.whileOpen(() -> ForStNative.checkpointFileLocations(handle));
    }

    /** Sizes of {@link #fileNames()}, same order. */
    public long[] fileSizes() {
        return db.whileOpen(() -> ForStNative.checkpointFileSizes(handle));
    }

    /**
     * Copies {@code names[i]} to {@code destDir/destNames[i]} inside the storage where it can.
     *
     * @return bytes that passed through this process
     */
    public long copyFiles(String[] names, String destDir, String[] destNames) {
        return db.whileOpen(
                () -> ForStNative.checkpointCopyFiles(handle, names, destDir, destNames));
    }

    /**
     * Hands the files {@code names} over to checkpoint {@code checkpointId} where they are
     * ({@code <db directory>/<name>}): the DB never deletes them again, unless it takes them back.
     */
    void handOver(String[] names, long checkpointId) {
        db.whileOpen(
                () -> {
                    ForStNative.checkpointHandOver(handle, names, checkpointId);
                    return null;
                });
    }

    /**
     * Writes the checkpoint file {@code name} of {@code size} bytes to {@code out}, reading it from
     * the DB's storage chunk by chunk (for checkpoint storages that take streams, not files).
     */
    public void streamFile(String name, long size, OutputStream out) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect((int) Math.min(STREAM_CHUNK_BYTES, size));
        byte[] chunk = new byte[buffer.capacity()];
        long position = 0;
        while (position < size) {
            long from = position;
            int want = (int) Math.min(chunk.length, size - position);
            int read =
                    db.whileOpen(
                            () ->
                                    ForStNative.checkpointReadFile(
                                            handle, name, from, buffer, 0, want));
            if (read != want) {
                throw new IOException(
                        "Checkpoint file "
                                + name
                                + " of "
                                + db.uri()
                                + " ended after "
                                + (position + read)
                                + " of its "
                                + size
                                + " bytes");
            }
            buffer.get(0, chunk, 0, read);
            out.write(chunk, 0, read);
            position += read;
        }
    }

    /** Unpins the files; later calls do nothing. */
    public void release() {
        if (!released.compareAndSet(false, true)) {
            return;
        }
        try {
            db.whileOpen(
                    () -> {
                        ForStNative.checkpointRelease(handle);
                        return null;
                    });
        } catch (IllegalStateException e) {
            if (!db.isClosed()) {
                throw e;
            }
            // Closing the DB dropped its checkpoints already.
        }
    }
}
