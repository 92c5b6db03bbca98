package org.apache.flink.state.forst;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.state.StateBackendFactory;

import org.forstrs.flink.ForStStateBackend;

/**
 * The class Flink's {@code StateBackendLoader} instantiates for {@code state.backend.type:
 * forst}. The ForSt-RS jar in {@code lib/} comes before {@code flink-dist} on the class path, so
 * this class replaces the built-in ForSt's factory and hands over to the ForSt-RS one. This is the
 * only class of the jar outside the {@code org.forstrs} packages.
 */
public class ForStStateBackendFactory implements StateBackendFactory<ForStStateBackend> {

    private final org.forstrs.flink.ForStStateBackendFactory delegate =
            new org.forstrs.flink.ForStStateBackendFactory();

    @Override
    public ForStStateBackend createFromConfig(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        return delegate.createFromConfig(config, classLoader);
    }
}
