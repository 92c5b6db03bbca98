package org.forstrs.jni;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.forstrs.jni.TestBatch.direct;

/**
 * Each kind of native error arrives as its own Java exception type, with the native error's
 * text and cause, through the real native library.
 */
class ForStNativeErrorsTest {

    private static final String FAMILY = "state";

    @TempDir Path dir;

    @Test
    void aMissingFileThrowsFileNotFoundExceptionNamingIt() throws IOException {
        final Path table = oneFlushedTable();
        Files.delete(table);
        final long db = reopen();
        try {
            assertThatThrownBy(() -> get(db, "key-1"))
                    .isInstanceOf(FileNotFoundException.class)
                    .hasMessageContaining(table.getFileName().toString())
                    .hasMessageContaining("No such file");
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    void aDamagedFileThrowsForStCorruptionExceptionNamingIt() throws IOException {
        final Path table = oneFlushedTable();
        final byte[] bytes = Files.readAllBytes(table);
        // The footer's magic number.
        bytes[bytes.length - 1] ^= 0x01;
        Files.write(table, bytes);
        final long db = reopen();
        try {
            assertThatThrownBy(() -> get(db, "key-1"))
                    .isInstanceOf(ForStCorruptionException.class)
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining(table.getFileName().toString());
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    void aDirectoryThatMayNotBeCreatedThrowsAccessDeniedException() {
        // sysfs refuses new directories to every user, root included (permission bits do not
        // stop root).
        final String url = "file:///sys/forst-" + UUID.randomUUID() + "/db";
        assertThatThrownBy(() -> ForStNative.open(url, null))
                .isInstanceOf(AccessDeniedException.class)
                .hasMessageContaining("/sys/forst-")
                // The operating system's error is part of the message.
                .hasMessageContaining("os error");
    }

    @Test
    void aSecondWriterOfOneDirectoryThrowsFileAlreadyExistsException() {
        final long first = ForStNative.open(url(), null);
        try {
            // Refused at open, by the claim the first writer holds in the storage.
            assertThatThrownBy(() -> ForStNative.open(url(), null))
                    .isInstanceOf(FileAlreadyExistsException.class)
                    .hasMessageContaining("LOCK")
                    .hasMessageContaining("already open for writing");
            // The first writer is untouched.
            ForStNative.createColumnFamily(first, "a");
        } finally {
            ForStNative.close(first);
        }
        // Closed, the directory opens again.
        ForStNative.close(ForStNative.open(url(), null));
    }

    @Test
    void aPermanentFlushErrorFailsTheDatabaseWithTheOriginalErrorAsCause() throws IOException {
        final Path home = dir.resolve("db");
        final long db = ForStNative.open(home.toUri().toString(), null);
        try {
            final int cf = ForStNative.createColumnFamily(db, FAMILY);
            put(db, cf, "key", "value");
            // The database's directory becomes a file: no flush can ever write there.
            deleteTree(home);
            Files.writeString(home, "in the way");
            assertThatThrownBy(() -> ForStNative.flush(db))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("failed")
                    .hasMessageContaining(home.toString())
                    .cause()
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining(home.toString());
            // Every later call fails the same way, so the Flink task fails over.
            assertThatThrownBy(() -> get(db, cf, "key"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasCauseInstanceOf(IOException.class);
            assertThatThrownBy(() -> put(db, cf, "other", "value"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(home.toString());
        } finally {
            ForStNative.close(db);
        }
    }

    @Test
    @Tag(Failpoints.TAG)
    void aPanicOnTheCallersThreadFailsTheDatabaseForEveryLaterCall() {
        final long db = ForStNative.open(url(), null);
        try {
            final int cf = ForStNative.createColumnFamily(db, FAMILY);
            put(db, cf, "key", "value");
            Failpoints.arm("write", 1);
            assertThatThrownBy(() -> put(db, cf, "other", "value"))
                    .isInstanceOf(RuntimeException.class)
                    .hasMessageContaining("panic in ForSt-RS native code")
                    .hasMessageContaining("failpoint 'write' fired");
            // The panic left the database as it left it: nobody may use it any more.
            assertThatThrownBy(() -> get(db, cf, "key"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("failed")
                    .hasMessageContaining("a native call panicked: failpoint 'write' fired");
            assertThatThrownBy(() -> put(db, cf, "third", "value"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("failpoint 'write' fired");
        } finally {
            Failpoints.arm("write", 0);
            ForStNative.close(db);
        }
        // Closed after the failure, the directory is free for the next writer.
        final long again = ForStNative.open(url(), null);
        ForStNative.close(again);
    }

    @Test
    void closeWithStatsRefusesAWrongArrayBeforeClosingAndFillsTheValuesAtClose() {
        final long db = ForStNative.open(url(), null);
        final int cf = ForStNative.createColumnFamily(db, FAMILY);
        put(db, cf, "key-1", "value-1");
        ForStNative.flush(db);
        final List<String> names = List.of(ForStNative.statNames());
        assertThatThrownBy(() -> ForStNative.closeWithStats(db, new long[names.size() - 1]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("statistics");
        assertThatThrownBy(() -> ForStNative.closeWithStats(db, null))
                .isInstanceOf(IllegalArgumentException.class);
        final long[] values = new long[names.size()];
        ForStNative.closeWithStats(db, values);
        assertThat(values[names.indexOf("flushes")]).isEqualTo(1);
        assertThatThrownBy(() -> ForStNative.stats(db, values))
                .isInstanceOf(IllegalStateException.class);
    }

    // ---------------------------------------------------------------- helpers

    private String url() {
        return dir.toUri().toString();
    }

    /** Writes keys into one SST file, closes the database and returns the file. */
    private Path oneFlushedTable() throws IOException {
        final long db = ForStNative.open(url(), null);
        final int cf = ForStNative.createColumnFamily(db, FAMILY);
        for (int i = 0; i < 100; i++) {
            put(db, cf, "key-" + i, "value-" + i);
        }
        ForStNative.flush(db);
        ForStNative.close(db);
        try (Stream<Path> files = Files.list(dir)) {
            final List<Path> tables = files.filter(p -> p.toString().endsWith(".sst")).toList();
            assertThat(tables).hasSize(1);
            return tables.get(0);
        }
    }

    /** Reopens the database; its tables are opened on first read. */
    private long reopen() {
        return ForStNative.open(url(), null);
    }

    private static String get(long db, String key) {
        return get(db, ForStNative.createColumnFamily(db, FAMILY), key);
    }

    private static String get(long db, int cf, String key) {
        final ByteBuffer k = direct(key);
        final ByteBuffer out = ByteBuffer.allocateDirect(64);
        final int length = ForStNative.get(db, cf, k, 0, k.capacity(), out, 0, out.capacity());
        if (length == ForStNative.NOT_FOUND) {
            return null;
        }
        final byte[] bytes = new byte[length];
        out.get(0, bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static void put(long db, int cf, String key, String value) {
        final ByteBuffer k = direct(key);
        final ByteBuffer v = direct(value);
        ForStNative.put(db, cf, k, 0, k.capacity(), v, 0, v.capacity());
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted((a, b) -> b.compareTo(a)).toList()) {
                Files.delete(path);
            }
        }
    }
}
