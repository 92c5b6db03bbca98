package org.forstrs.flink;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.state.StateBackendFactory;

/**
 * Creates the ForSt-RS backend from the configuration. Select it with {@code state.backend.type:
 * org.forstrs.flink.ForStStateBackendFactory}, or with {@code state.backend.type: forst} when the
 * ForSt-RS jar is in Flink's {@code lib/} (see {@code
 * org.apache.flink.state.forst.ForStStateBackendFactory}).
 */
public class ForStStateBackendFactory implements StateBackendFactory<ForStStateBackend> {

    @Override
    public ForStStateBackend createFromConfig(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        return new ForStStateBackend().configure(config, classLoader);
    }
}
