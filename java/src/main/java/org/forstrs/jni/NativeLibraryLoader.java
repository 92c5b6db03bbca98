package org.forstrs.jni;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * Loads the ForSt-RS native library ({@code libforst.so}) that the jar carries under {@code
 * native/<platform>/}.
 *
 * <p>The library is extracted to a fresh temporary file whose name contains the SHA-256 of its
 * content ({@code libforst-<sha256>-<random>.so}), so that two builds are never confused and two
 * class loaders (one per Flink job, for example) each load their own copy; the JVM refuses to
 * load one library file into two class loaders. Within one class loader the library is loaded
 * once (a static guard). The file is deleted right after loading: the loaded mapping stays valid
 * on Linux. Once loaded, the library's log events go to slf4j ({@link NativeLog}).
 *
 * <p>The extraction directory is, first found: the system property {@value #TMP_DIR_PROPERTY},
 * the directory set by {@link #extractInto} (the backend factory passes Flink's {@code
 * io.tmp.dirs}), {@code java.io.tmpdir}. The system property {@value #LIBRARY_PROPERTY} names a
 * library file to load instead of the jar's (a build of one's own, such as the tests' build with
 * failpoints); it must come from the same commit as the jar's classes.
 */
public final class NativeLibraryLoader {

    /** System property naming the directory the library is extracted to. */
    public static final String TMP_DIR_PROPERTY = "forstrs.native.tmpdir";

    /** System property naming a library file loaded in place of the jar's. */
    public static final String LIBRARY_PROPERTY = "forstrs.native.library";

    private static final String LIBRARY_FILE = "libforst.so";

    private static final Object LOCK = new Object();

    private static volatile String loadedFrom;

    private static volatile String extractionDirectory;

    private NativeLibraryLoader() {}

    /**
     * Loads the library unless this class loader already did.
     *
     * @throws UnsatisfiedLinkError if the platform is not supported or the library cannot be
     *     extracted or loaded
     */
    public static void ensureLoaded() {
        if (loadedFrom != null) {
            return;
        }
        synchronized (LOCK) {
            if (loadedFrom != null) {
                return;
            }
            final String ownBuild = System.getProperty(LIBRARY_PROPERTY);
            if (ownBuild != null) {
                System.load(Paths.get(ownBuild).toAbsolutePath().toString());
                installLog();
                loadedFrom = ownBuild + " (" + LIBRARY_PROPERTY + ")";
                return;
            }
            final String resource = resourcePath();
            try {
                final byte[] library = readResource(resource);
                final Path file = extract(library);
                try {
                    System.load(file.toAbsolutePath().toString());
                } finally {
                    Files.deleteIfExists(file);
                }
                installLog();
                loadedFrom = resource + " (" + file.toAbsolutePath() + ")";
            } catch (IOException e) {
                final UnsatisfiedLinkError error =
                        new UnsatisfiedLinkError(
                                "Cannot extract the ForSt-RS native library " + resource + ": " + e);
                error.initCause(e);
                throw error;
            }
        }
    }

    /**
     * Sends the library's log events to slf4j, before anything can open a database. Without slf4j
     * on the class path (the library used outside Flink) they are dropped.
     */
    private static void installLog() {
        try {
            NativeLog.install();
        } catch (NoClassDefFoundError e) {
            if (!e.getMessage().startsWith("org/slf4j/")) {
                throw e;
            }
        }
    }

    /**
     * Extract into {@code directory} unless the system property {@value #TMP_DIR_PROPERTY} says
     * otherwise; no effect once the library is loaded.
     */
    public static void extractInto(String directory) {
        extractionDirectory = directory;
    }

    /** Where the library was loaded from (resource and extracted file), or null if not loaded yet. */
    public static String loadedFrom() {
        return loadedFrom;
    }

    /** The resource path of the library for this platform. */
    static String resourcePath() {
        final String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        final String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.startsWith("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new UnsatisfiedLinkError(
                    "ForSt-RS ships a native library for linux-x86_64 only, not for "
                            + os
                            + "-"
                            + arch);
        }
        return "/native/linux-x86_64/" + LIBRARY_FILE;
    }

    private static byte[] readResource(String resource) throws IOException {
        try (InputStream in = NativeLibraryLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException(
                        "resource "
                                + resource
                                + " is missing from the class path (was the jar built with mvn package?)");
            }
            final ByteArrayOutputStream out = new ByteArrayOutputStream(16 << 20);
            in.transferTo(out);
            return out.toByteArray();
        }
    }

    private static Path extract(byte[] library) throws IOException {
        String dirName = System.getProperty(TMP_DIR_PROPERTY);
        if (dirName == null) {
            dirName = extractionDirectory;
        }
        final Path dir =
                Paths.get(dirName != null ? dirName : System.getProperty("java.io.tmpdir"));
        Files.createDirectories(dir);
        final Path file = Files.createTempFile(dir, "libforst-" + sha256(library) + "-", ".so");
        try {
            Files.write(file, library);
        } catch (IOException e) {
            Files.deleteIfExists(file);
            throw e;
        }
        return file;
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            // Every Java platform must provide SHA-256 (java.security.MessageDigest docs).
            throw new IllegalStateException("SHA-256 is not available", e);
        }
    }
}
