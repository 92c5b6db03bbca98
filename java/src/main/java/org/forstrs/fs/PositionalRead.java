package org.forstrs.fs;

import org.apache.flink.core.fs.ByteBufferReadable;
import org.apache.flink.core.fs.FSDataInputStream;

import java.io.EOFException;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;

/**
 * How one kind of stream fills a buffer from a position, chosen once per stream class, best first:
 *
 * <ol>
 *   <li>Hadoop streams with {@code ByteBufferPositionedReadable} (HDFS since Hadoop 3.3): the
 *       Hadoop stream reads straight into the direct buffer. Flink's own {@code
 *       HadoopDataInputStream.read(long, ByteBuffer)} would copy through a {@code byte[]} for
 *       direct buffers, so it is bypassed. Reached by reflection: Hadoop is optional at runtime.
 *   <li>Flink's {@link ByteBufferReadable} (the local file system: {@code FileChannel} positional
 *       reads into the buffer).
 *   <li>Anything else: seek, then read through a {@code byte[]} scratch buffer owned by the
 *       calling thread.
 * </ol>
 */
abstract class PositionalRead {

    /** Hadoop's capability name for {@code ByteBufferPositionedReadable} (StreamCapabilities). */
    private static final String HADOOP_PREAD_BYTEBUFFER = "in:preadbytebuffer";

    private static final int SCRATCH_BYTES = 64 * 1024;

    private static final ThreadLocal<byte[]> SCRATCH =
            ThreadLocal.withInitial(() -> new byte[SCRATCH_BYTES]);

    private static final ConcurrentHashMap<Class<?>, Boolean> HADOOP_BUFFER_CAPABLE =
            new ConcurrentHashMap<>();

    /** Fills {@code buffer} from its position to its limit with the bytes at {@code position}. */
    abstract void readFully(long position, ByteBuffer buffer) throws IOException;

    /** What the proxy reports as the read path, for tests and logs. */
    abstract String kind();

    static PositionalRead of(FSDataInputStream stream) {
        PositionalRead hadoop = HadoopBufferRead.of(stream);
        if (hadoop != null) {
            return hadoop;
        }
        if (stream instanceof ByteBufferReadable) {
            return new FlinkBufferRead((ByteBufferReadable) stream);
        }
        return new ScratchRead(stream);
    }

    private static EOFException pastEnd(long position, int missing) {
        return new EOFException(
                "end of file before " + missing + " more bytes (read at offset " + position + ")");
    }

    /** Hadoop's {@code ByteBufferPositionedReadable.readFully(long, ByteBuffer)}. */
    static final class HadoopBufferRead extends PositionalRead {
        private final Object hadoopStream;
        private final MethodHandle readFully;

        private HadoopBufferRead(Object hadoopStream, MethodHandle readFully) {
            this.hadoopStream = hadoopStream;
            this.readFully = readFully;
        }

        static PositionalRead of(FSDataInputStream stream) {
            try {
                Method unwrap = stream.getClass().getMethod("getHadoopInputStream");
                Object hadoop = unwrap.invoke(stream);
                if (hadoop == null || !capable(hadoop)) {
                    return null;
                }
                Class<?> readable =
                        Class.forName(
                                "org.apache.hadoop.fs.ByteBufferPositionedReadable",
                                false,
                                hadoop.getClass().getClassLoader());
                MethodHandle handle =
                        MethodHandles.publicLookup()
                                .findVirtual(
                                        readable,
                                        "readFully",
                                        MethodType.methodType(
                                                void.class, long.class, ByteBuffer.class))
                                .asType(
                                        MethodType.methodType(
                                                void.class,
                                                Object.class,
                                                long.class,
                                                ByteBuffer.class));
                return new HadoopBufferRead(hadoop, handle);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // Not a Hadoop stream, or a Hadoop without the interface: use another path.
                return null;
            }
        }

        private static boolean capable(Object hadoop) throws ReflectiveOperationException {
            Class<?> type = hadoop.getClass();
            Boolean known = HADOOP_BUFFER_CAPABLE.get(type);
            if (known != null && !known) {
                return false;
            }
            // Asked per stream: a wrapper's answer depends on the stream it wraps.
            Method has = type.getMethod("hasCapability", String.class);
            boolean capable = (Boolean) has.invoke(hadoop, HADOOP_PREAD_BYTEBUFFER);
            if (!capable) {
                HADOOP_BUFFER_CAPABLE.put(type, false);
            }
            return capable;
        }

        @Override
        void readFully(long position, ByteBuffer buffer) throws IOException {
            try {
                readFully.invokeExact(hadoopStream, position, buffer);
            } catch (IOException | RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IOException(t);
            }
        }

        @Override
        String kind() {
            return "hadoop-bytebuffer";
        }
    }

    /** Flink's {@link ByteBufferReadable#read(long, ByteBuffer)}, looped until full. */
    static final class FlinkBufferRead extends PositionalRead {
        private final ByteBufferReadable stream;

        FlinkBufferRead(ByteBufferReadable stream) {
            this.stream = stream;
        }

        @Override
        void readFully(long position, ByteBuffer buffer) throws IOException {
            long at = position;
            while (buffer.hasRemaining()) {
                int n = stream.read(at, buffer);
                if (n < 0) {
                    throw pastEnd(position, buffer.remaining());
                }
                at += n;
            }
        }

        @Override
        String kind() {
            return "flink-bytebuffer";
        }
    }

    /** Seek and read through a per-thread scratch array. */
    static final class ScratchRead extends PositionalRead {
        private final FSDataInputStream stream;

        ScratchRead(FSDataInputStream stream) {
            this.stream = stream;
        }

        @Override
        void readFully(long position, ByteBuffer buffer) throws IOException {
            byte[] scratch = SCRATCH.get();
            stream.seek(position);
            while (buffer.hasRemaining()) {
                int n = stream.read(scratch, 0, Math.min(scratch.length, buffer.remaining()));
                if (n < 0) {
                    throw pastEnd(position, buffer.remaining());
                }
                buffer.put(scratch, 0, n);
            }
        }

        @Override
        String kind() {
            return "scratch-array";
        }
    }
}
