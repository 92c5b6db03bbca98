package org.forstrs.fs.bench;

import org.apache.flink.core.fs.ByteBufferReadable;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The plain-Java baseline of scripts/bench-fs-proxy.sh: positional reads of random aligned
 * ranges of one file over Flink's FileSystem, one stream per thread, into a direct buffer (the
 * stream's {@code read(long, ByteBuffer)} where it has one), as a Java caller with no JNI would.
 * Called from the Rust benchmark (benches/fs_proxy.rs) in the JVM it starts.
 */
public final class JavaReadLoop {

    private JavaReadLoop() {}

    /** Reads for {@code millis} ms on {@code threads} threads; returns the bytes read. */
    public static long run(String uri, int readBytes, int threads, long millis) throws Exception {
        Path path = new Path(uri);
        FileSystem fs = FileSystem.getUnguardedFileSystem(URI.create(uri));
        long fileBytes = fs.getFileStatus(path).getLen();
        long blocks = fileBytes / readBytes;
        AtomicLong total = new AtomicLong();
        long deadline = System.nanoTime() + millis * 1_000_000L;
        List<Thread> workers = new ArrayList<>();
        List<Exception> failures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long seed = t;
            Thread worker =
                    new Thread(
                            () -> {
                                try (FSDataInputStream in = fs.open(path)) {
                                    ByteBufferReadable readable = (ByteBufferReadable) in;
                                    ByteBuffer buffer = ByteBuffer.allocateDirect(readBytes);
                                    SplittableRandom random = new SplittableRandom(seed);
                                    long bytes = 0;
                                    while (System.nanoTime() < deadline) {
                                        long position = random.nextLong(blocks) * readBytes;
                                        buffer.clear();
                                        while (buffer.hasRemaining()) {
                                            int n = readable.read(position + buffer.position(), buffer);
                                            if (n < 0) {
                                                throw new IllegalStateException("short file");
                                            }
                                        }
                                        bytes += readBytes;
                                    }
                                    total.addAndGet(bytes);
                                } catch (Exception e) {
                                    synchronized (failures) {
                                        failures.add(e);
                                    }
                                }
                            });
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        if (!failures.isEmpty()) {
            throw failures.get(0);
        }
        return total.get();
    }
}
