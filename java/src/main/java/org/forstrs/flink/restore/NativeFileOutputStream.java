package org.forstrs.flink.restore;

import org.forstrs.jni.ForStNative;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;

/**
 * Writes one file into the engine's storage (any URI the native side opens) through the native
 * file writer. The file appears only on {@link #finish()}; closing without finishing drops it.
 * Restore uses it to put checkpointed bytes that are not files next to the new DB. Not
 * thread-safe.
 */
final class NativeFileOutputStream extends OutputStream {

    private static final int CHUNK_BYTES = 1 << 20;

    private final String url;
    private final ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK_BYTES);
    private long handle;

    /**
     * @param dirUri the directory, as {@link ForStNative#open} takes it
     * @param options the DB's native options (for the storage keys)
     * @param name the file's path relative to {@code dirUri}
     */
    NativeFileOutputStream(String dirUri, String[] options, String name) {
        this.url = dirUri + "/" + name;
        this.handle = ForStNative.fileCreate(dirUri, options, name);
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] bytes, int offset, int length) throws IOException {
        checkOpen();
        while (length > 0) {
            int n = Math.min(length, buffer.remaining());
            buffer.put(bytes, offset, n);
            offset += n;
            length -= n;
            if (!buffer.hasRemaining()) {
                writeBuffered();
            }
        }
    }

    /** Publishes the file; returns its size. The stream is closed afterwards. */
    long finish() throws IOException {
        checkOpen();
        writeBuffered();
        long file = handle;
        handle = 0;
        return ForStNative.fileFinish(file);
    }

    /** Drops the file unless {@link #finish()} published it. */
    @Override
    public void close() {
        if (handle != 0) {
            long file = handle;
            handle = 0;
            ForStNative.fileAbort(file);
        }
    }

    private void writeBuffered() {
        if (buffer.position() > 0) {
            ForStNative.fileWrite(handle, buffer, 0, buffer.position());
            buffer.clear();
        }
    }

    private void checkOpen() throws IOException {
        if (handle == 0) {
            throw new IOException(url + " is closed");
        }
    }

    @Override
    public String toString() {
        return "NativeFileOutputStream{" + url + "}";
    }
}
