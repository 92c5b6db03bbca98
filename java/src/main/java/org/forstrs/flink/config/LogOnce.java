package org.forstrs.flink.config;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.helpers.MessageFormatter;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * INFO (and WARN) lines about the configuration that a JVM prints once, however many times backends are
 * configured (every job, on the client, the JobManager and each TaskManager).
 */
final class LogOnce {

    private static final Logger LOG = LoggerFactory.getLogger(ForStBackendConfig.class);

    private static final Set<String> LOGGED = ConcurrentHashMap.newKeySet();

    private LogOnce() {}

    /** Logs the message ({@code {}} placeholders, as SLF4J) unless this JVM already did. */
    static void info(String format, Object... args) {
        String message = MessageFormatter.arrayFormat(format, args).getMessage();
        if (LOGGED.add(message)) {
            LOG.info(message);
        }
    }

    /** As {@link #info}, at WARN: a setting that is not applied and may matter. */
    static void warn(String format, Object... args) {
        String message = MessageFormatter.arrayFormat(format, args).getMessage();
        if (LOGGED.add(message)) {
            LOG.warn(message);
        }
    }
}
