package org.forstrs.jni;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.forstrs.jni.TestBatch.direct;

/**
 * The read-only checkpoint reader through the real native library: it reads a checkpointed
 * database's files where they are (scan, count, files, verify) and leaves the directory exactly
 * as it was (names, sizes, bytes, modification times); bad input and unknown or closed handles
 * are Java exceptions.
 */
class CheckpointReaderNativeTest {

    @TempDir Path dir;

    /** A closed database of 300 keys in family "state" (1-byte key groups); its manifest. */
    private byte[] checkpointedDb(String[] names) {
        long db = ForStNative.open(dir.toUri().toString(), null);
        try {
            int cf = ForStNative.createColumnFamily(db, "state");
            for (int i = 0; i < 300; i++) {
                ByteBuffer key = direct((char) (i % 128) + "key-" + i);
                ByteBuffer value = direct("value-" + i);
                ForStNative.put(db, cf, key, 0, key.capacity(), value, 0, value.capacity());
            }
            long checkpoint = ForStNative.checkpointPrepare(db);
            try {
                byte[] manifest = ForStNative.checkpointManifest(checkpoint);
                String[] files = ForStNative.checkpointFileNames(checkpoint);
                assertThat(files).hasSize(names.length);
                System.arraycopy(files, 0, names, 0, files.length);
                return manifest;
            } finally {
                ForStNative.checkpointRelease(checkpoint);
            }
        } finally {
            ForStNative.close(db);
        }
    }

    private String[] uris(String[] names) {
        return Arrays.stream(names)
                .map(n -> dir.resolve(n).toUri().toString())
                .toArray(String[]::new);
    }

    @Test
    void readsInPlaceAndLeavesTheDirectoryAsItWas() throws IOException {
        String[] names = new String[1];
        byte[] manifest = checkpointedDb(names);
        Map<String, String> before = listing();

        long reader =
                ForStNative.openCheckpointReader(null, manifest, names, uris(names), 0, 127, 1);
        try {
            assertThat(ForStNative.checkpointReaderFamilies(reader)).containsExactly("state");
            assertThat(ForStNative.checkpointReaderCount(reader, "state")).isEqualTo(300);
            String[] files = ForStNative.checkpointReaderFiles(reader);
            assertThat(files).hasSize(6);
            assertThat(files[1]).isEqualTo(names[0]);
            assertThat(files[2]).endsWith("/" + names[0]);
            assertThat(files[5]).isEqualTo("state");
            assertThat(ForStNative.checkpointReaderVerify(reader)).isEmpty();

            byte[][] first = ForStNative.checkpointReaderScan(reader, "state", null, null, 7);
            assertThat(first.length).isEqualTo(14);
            assertThat(new String(first[1], StandardCharsets.UTF_8)).startsWith("value-");
            byte[] from = new byte[] {5};
            byte[] to = new byte[] {6};
            byte[][] group5 = ForStNative.checkpointReaderScan(reader, "state", from, to, 1000);
            // keys 5, 133, 261
            assertThat(group5.length).isEqualTo(6);
            assertThatThrownBy(
                            () -> ForStNative.checkpointReaderScan(reader, "nope", null, null, 1))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("nope");
        } finally {
            ForStNative.closeCheckpointReader(reader);
        }
        assertThat(listing()).isEqualTo(before);
        assertThatThrownBy(() -> ForStNative.checkpointReaderCount(reader, "state"))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> ForStNative.closeCheckpointReader(reader))
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void badInputIsAJavaException() {
        String[] names = new String[1];
        byte[] manifest = checkpointedDb(names);
        String[] uris = uris(names);
        assertThatThrownBy(
                        () -> ForStNative.openCheckpointReader(null, null, names, uris, 0, 1, 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(
                        () ->
                                ForStNative.openCheckpointReader(
                                        null, manifest, names, new String[0], 0, 127, 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(
                        () ->
                                ForStNative.openCheckpointReader(
                                        null, manifest, names, uris, 9, 3, 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(
                        () ->
                                ForStNative.openCheckpointReader(
                                        null, manifest, names, uris, 0, 127, 3))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(
                        () ->
                                ForStNative.openCheckpointReader(
                                        null, new byte[] {1, 2, 3}, names, uris, 0, 127, 1))
                .isInstanceOf(IOException.class);
        assertThatThrownBy(
                        () ->
                                ForStNative.openCheckpointReader(
                                        null, manifest, new String[0], new String[0], 0, 127, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(names[0]);
        assertThatThrownBy(() -> ForStNative.checkpointReaderFiles(123_456_789L))
                .isInstanceOf(IllegalStateException.class);
    }

    /** Every entry under the directory: name to size, modification time and bytes. */
    private Map<String, String> listing() throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : files.toList()) {
                FileTime modified = Files.getLastModifiedTime(file);
                String bytes =
                        Files.isRegularFile(file)
                                ? Arrays.toString(Files.readAllBytes(file))
                                : "dir";
                out.put(dir.relativize(file).toString(), modified + " " + bytes);
            }
        }
        return out;
    }
}
