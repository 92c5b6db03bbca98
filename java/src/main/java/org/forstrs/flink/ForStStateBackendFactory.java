package org.forstrs.flink;

import org.apache.flink.configuration.ConfigurationUtils;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.state.StateBackendFactory;

import org.forstrs.jni.ForStNative;
import org.forstrs.jni.NativeLibraryLoader;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.security.CodeSource;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Creates the ForSt-RS backend from the configuration. Select it with {@code state.backend.type:
 * org.forstrs.flink.ForStStateBackendFactory}, or with {@code state.backend.type: forst} when the
 * ForSt-RS jar is in Flink's {@code lib/} (see {@code
 * org.apache.flink.state.forst.ForStStateBackendFactory}).
 */
public class ForStStateBackendFactory implements StateBackendFactory<ForStStateBackend> {

    private static final Logger LOG = LoggerFactory.getLogger(ForStStateBackendFactory.class);

    /** Our jar shadows Flink's own ForSt factory: say once, loudly enough, which one runs. */
    private static final AtomicBoolean ANNOUNCED = new AtomicBoolean();

    @Override
    public ForStStateBackend createFromConfig(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        String[] tmpDirs = ConfigurationUtils.splitPaths(config.get(CoreOptions.TMP_DIRS));
        if (tmpDirs.length > 0) {
            NativeLibraryLoader.extractInto(tmpDirs[0]);
        }
        ForStStateBackend backend = new ForStStateBackend().configure(config, classLoader);
        if (ANNOUNCED.compareAndSet(false, true)) {
            CodeSource jar = ForStStateBackendFactory.class.getProtectionDomain().getCodeSource();
            LOG.info(
                    "State backend 'forst' is ForSt-RS {} from {} (native library {})",
                    ForStNative.buildInfo(),
                    jar == null ? "an unknown location" : jar.getLocation(),
                    NativeLibraryLoader.loadedFrom());
        }
        return backend;
    }
}
