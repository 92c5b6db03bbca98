package org.forstrs.flink;

import org.forstrs.jni.ForStNative;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A checkpoint of a {@link NativeDb} between its synchronous phase and its release: the files it
 * names stay pinned (compaction does not delete them) until {@link #release()}.
 */
final class NativeCheckpoint {

    private final NativeDb db;
    private final long handle;
    private final AtomicBoolean released = new AtomicBoolean();

    NativeCheckpoint(NativeDb db, long handle) {
        this.db = db;
        this.handle = handle;
    }

    /** Waits for the frozen data to be flushed; returns the opaque manifest. */
    byte[] manifest() {
        return db.whileOpen(() -> ForStNative.checkpointManifest(handle));
    }

    /** SST names relative to the DB directory (valid after {@link #manifest()}). */
    String[] fileNames() {
        return db.whileOpen(() -> ForStNative.checkpointFileNames(handle));
    }

    /** Sizes of {@link #fileNames()}, same order. */
    long[] fileSizes() {
        return db.whileOpen(() -> ForStNative.checkpointFileSizes(handle));
    }

    /**
     * Copies {@code names[i]} to {@code destDir/destNames[i]} inside the storage where it can.
     *
     * @return bytes that passed through this process
     */
    long copyFiles(String[] names, String destDir, String[] destNames) {
        return db.whileOpen(
                () -> ForStNative.checkpointCopyFiles(handle, names, destDir, destNames));
    }

    /** Unpins the files; later calls do nothing. */
    void release() {
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
