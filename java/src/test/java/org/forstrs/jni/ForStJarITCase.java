package org.forstrs.jni;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.ReadableConfig;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.lang.reflect.Method;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The packaged jar ({@code target/forstjni-<version>.jar}, not target/classes) works on its own:
 * two class loaders that each see only the jar load their own copy of the native library and
 * each use a database.
 */
class ForStJarITCase {

    @TempDir Path dir;

    @Test
    void packagedJarLoadsTheLibraryOncePerClassLoader() throws Exception {
        final Path jar = Paths.get(System.getProperty("forstjni.jar", "target/forstjni.jar"));
        assertThat(jar).isRegularFile();
        final String[] loadedFrom = new String[2];
        for (int i = 0; i < 2; i++) {
            try (URLClassLoader loader =
                    new URLClassLoader(
                            new URL[] {jar.toUri().toURL()}, ClassLoader.getPlatformClassLoader())) {
                final Class<?> nativeClass = Class.forName(ForStNative.class.getName(), true, loader);
                assertThat(nativeClass.getClassLoader()).isSameAs(loader);
                assertThat(nativeClass.getProtectionDomain().getCodeSource().getLocation().getPath())
                        .endsWith(jar.getFileName().toString());

                final long db =
                        (long)
                                method(nativeClass, "open", String.class, String[].class)
                                        .invoke(null, dir.resolve("db" + i).toUri().toString(), null);
                final int cf =
                        (int)
                                method(nativeClass, "createColumnFamily", long.class, String.class)
                                        .invoke(null, db, "state");
                final ByteBuffer key = TestBatch.direct("key");
                final ByteBuffer value = TestBatch.direct("value from loader " + i);
                method(nativeClass, "put", long.class, int.class, ByteBuffer.class, int.class, int.class, ByteBuffer.class, int.class, int.class)
                        .invoke(null, db, cf, key, 0, key.capacity(), value, 0, value.capacity());
                final ByteBuffer out = ByteBuffer.allocateDirect(64);
                final int length =
                        (int)
                                method(nativeClass, "get", long.class, int.class, ByteBuffer.class, int.class, int.class, ByteBuffer.class, int.class, int.class)
                                        .invoke(null, db, cf, key, 0, key.capacity(), out, 0, out.capacity());
                final byte[] bytes = new byte[length];
                out.get(0, bytes);
                assertThat(new String(bytes, StandardCharsets.UTF_8)).isEqualTo("value from loader " + i);
                method(nativeClass, "close", long.class).invoke(null, db);

                final Class<?> loaderClass =
                        Class.forName(NativeLibraryLoader.class.getName(), true, loader);
                loadedFrom[i] = (String) method(loaderClass, "loadedFrom").invoke(null);
            }
        }
        final String hash = NativeLibraryLoader.sha256(Files.readAllBytes(extractLibrary(jar)));
        assertThat(loadedFrom[0]).contains("libforst-" + hash + "-");
        assertThat(loadedFrom[1]).contains("libforst-" + hash + "-").isNotEqualTo(loadedFrom[0]);
    }

    /**
     * The backend factory extracts the library into Flink's first {@code io.tmp.dirs} (not {@code
     * java.io.tmpdir}) and leaves nothing there; the engine names its version and revision.
     */
    @Test
    void factoryExtractsTheLibraryIntoFlinksTemporaryDirectory() throws Exception {
        final Path jar = Paths.get(System.getProperty("forstjni.jar", "target/forstjni.jar"));
        final Path flinkTmp = Files.createDirectories(dir.resolve("flink-tmp"));
        try (JarFirstLoader loader = new JarFirstLoader(jar)) {
            final Class<?> factory =
                    Class.forName("org.forstrs.flink.ForStStateBackendFactory", true, loader);
            final Configuration config = new Configuration();
            config.set(CoreOptions.TMP_DIRS, flinkTmp + File.pathSeparator + dir);
            final Object backend =
                    method(factory, "createFromConfig", ReadableConfig.class, ClassLoader.class)
                            .invoke(factory.getConstructor().newInstance(), config, loader);
            assertThat(backend.getClass().getClassLoader()).isSameAs(loader);

            final Class<?> loaderClass =
                    Class.forName(NativeLibraryLoader.class.getName(), true, loader);
            assertThat((String) method(loaderClass, "loadedFrom").invoke(null))
                    .contains(flinkTmp.resolve("libforst-").toString());
            assertThat(flinkTmp).as("extracted library removed after loading").isEmptyDirectory();
            final Class<?> nativeClass = Class.forName(ForStNative.class.getName(), true, loader);
            assertThat((String) method(nativeClass, "buildInfo").invoke(null))
                    .matches("\\d+\\.\\d+\\.\\d+\\S* \\(git ([0-9a-f]{12}|unknown)\\)");
        }
    }

    /** Our classes from the jar itself; Flink's from the test's class path. */
    private static final class JarFirstLoader extends URLClassLoader {
        JarFirstLoader(Path jar) throws MalformedURLException {
            super(new URL[] {jar.toUri().toURL()}, ForStJarITCase.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("org.forstrs.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> loaded = findLoadedClass(name);
                if (loaded == null) {
                    loaded = findClass(name);
                }
                if (resolve) {
                    resolveClass(loaded);
                }
                return loaded;
            }
        }
    }

    private Path extractLibrary(Path jar) throws Exception {
        try (URLClassLoader loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, null)) {
            final Path copy = dir.resolve("libforst.so");
            try (var in = loader.getResourceAsStream(NativeLibraryLoader.resourcePath().substring(1))) {
                assertThat(in).as("library inside the jar").isNotNull();
                Files.copy(in, copy);
            }
            return copy;
        }
    }

    private static Method method(Class<?> owner, String name, Class<?>... parameters)
            throws NoSuchMethodException {
        return owner.getMethod(name, parameters);
    }
}
