package org.forstrs.tools;

import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The jar's main class: {@code java -jar forstjni-<version>.jar <command>} runs {@link ForStTool}
 * with Flink's jars, which a jar's manifest cannot name by wildcard. They are found in {@code
 * $FLINK_HOME/lib}, else in the directory this jar lies in when that is a Flink {@code lib/}
 * (it holds {@code flink-dist}); {@code $FLINK_HOME} (or that directory's parent) then also gives
 * the tool Flink's {@code conf/} and {@code plugins/}. Leading {@code --classpath <jars>}
 * options add the job's jars. Uses only the JDK: nothing of Flink is loaded before the class
 * path is complete.
 */
public final class ToolLauncher {

    /** The Flink home the launcher found, for {@link ForStTool}'s configuration and plugins. */
    static final String FLINK_HOME_PROPERTY = "forstrs.flink.home";

    private ToolLauncher() {}

    public static void main(String[] args) throws Exception {
        File ownJar = ownJar();
        File home = flinkHome(ownJar);
        if (home == null) {
            System.err.println(
                    "ForStTool needs Flink 2.3's jars: set FLINK_HOME to Flink's directory or"
                            + " run this jar where it lies in Flink's lib/");
            System.exit(2);
        }
        List<URL> classPath = new ArrayList<>();
        classPath.add(ownJar.toURI().toURL());
        File[] jars = new File(home, "lib").listFiles((dir, name) -> name.endsWith(".jar"));
        Arrays.sort(jars);
        for (File jar : jars) {
            if (!jar.getCanonicalFile().equals(ownJar.getCanonicalFile())) {
                classPath.add(jar.toURI().toURL());
            }
        }
        // --classpath <jars>: the job's classes, to decode state whose serializers name them.
        int first = 0;
        while (first + 1 < args.length && args[first].equals("--classpath")) {
            for (String entry : args[first + 1].split(File.pathSeparator)) {
                classPath.add(new File(entry).toURI().toURL());
            }
            first += 2;
        }
        args = Arrays.copyOfRange(args, first, args.length);
        System.setProperty(FLINK_HOME_PROPERTY, home.getPath());
        // The platform loader as parent: the tool and Flink come from one loader, as in Flink.
        ClassLoader loader =
                new URLClassLoader(
                        classPath.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        Thread.currentThread().setContextClassLoader(loader);
        Method main =
                loader.loadClass(ForStTool.class.getName()).getMethod("main", String[].class);
        try {
            main.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    private static File ownJar() throws URISyntaxException {
        return new File(
                ToolLauncher.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** $FLINK_HOME if it has a lib/, else the parent of a Flink lib/ this jar lies in; or null. */
    private static File flinkHome(File ownJar) {
        String env = System.getenv("FLINK_HOME");
        if (env != null && new File(env, "lib").isDirectory()) {
            return new File(env);
        }
        File dir = ownJar.getAbsoluteFile().getParentFile();
        String[] dist = dir == null ? null : dir.list((d, name) -> name.startsWith("flink-dist"));
        return dist != null && dist.length > 0 ? dir.getParentFile() : null;
    }
}
