package org.forstrs.fs.bench;

import org.apache.flink.core.fs.ByteBufferReadable;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystem.WriteMode;
import org.apache.flink.core.fs.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code slowfs://} is found by its scheme, serves the local files and counts its calls. */
class SlowFileSystemTest {

    @Test
    void readsLocalFilesAndCountsOpensAndReads(@TempDir java.nio.file.Path dir) throws Exception {
        Path file = new Path(SlowFileSystem.SCHEME + "://" + dir.resolve("f").toAbsolutePath());
        FileSystem fs = file.getFileSystem();
        assertThat(fs).isInstanceOf(SlowFileSystem.class);
        long creates = SlowFsCounters.creates();
        try (FSDataOutputStream out = fs.create(file, WriteMode.NO_OVERWRITE)) {
            out.write("hello slow world".getBytes(StandardCharsets.UTF_8));
        }
        assertThat(SlowFsCounters.creates()).isEqualTo(creates + 1);
        assertThat(fs.getFileStatus(file).getLen()).isEqualTo(16);
        assertThat(fs.getFileStatus(file).getPath().toUri().getScheme()).isEqualTo("slowfs");

        long opens = SlowFsCounters.opens();
        long reads = SlowFsCounters.reads();
        try (FSDataInputStream in = fs.open(file)) {
            byte[] head = new byte[5];
            assertThat(in.read(head, 0, 5)).isEqualTo(5);
            assertThat(new String(head, StandardCharsets.UTF_8)).isEqualTo("hello");
            ByteBuffer tail = ByteBuffer.allocateDirect(5);
            assertThat(((ByteBufferReadable) in).read(11, tail)).isEqualTo(5);
            assertThat(tail.flip()).isEqualTo(ByteBuffer.wrap("world".getBytes()));
        }
        assertThat(SlowFsCounters.opens()).isEqualTo(opens + 1);
        assertThat(SlowFsCounters.reads()).isEqualTo(reads + 2);
        assertThat(SlowFsCounters.summary()).contains("opens ", "reads ");
    }
}
