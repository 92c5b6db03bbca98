package org.forstrs.flink.snapshot;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * The most recent snapshot costs of every ForSt-RS keyed backend in this JVM, for benchmarks and
 * tests that run jobs in-process (a MiniCluster) and cannot reach the backend instances: what the
 * backends log through {@link CheckpointStats#log}, caught by a log4j appender on that logger
 * (attached on first use, for the rest of the JVM's life).
 */
public final class CheckpointStatsLog extends AbstractAppender {

    private static final int CAPACITY = 4096;

    private static final Deque<CheckpointStats> RECENT = new ArrayDeque<>();

    static {
        attach();
    }

    private CheckpointStatsLog() {
        super("forst-rs-checkpoint-stats", null, null, true, Property.EMPTY_ARRAY);
    }

    private static void attach() {
        CheckpointStatsLog appender = new CheckpointStatsLog();
        appender.start();
        LoggerContext context = (LoggerContext) LogManager.getContext(false);
        Configuration config = context.getConfiguration();
        String name = CheckpointStats.class.getName();
        LoggerConfig logger = new LoggerConfig(name, Level.DEBUG, false);
        logger.addAppender(appender, Level.DEBUG, null);
        config.addLogger(name, logger);
        context.updateLoggers();
    }

    @Override
    public void append(LogEvent event) {
        Object[] parameters = event.getMessage().getParameters();
        if (parameters != null
                && parameters.length == 1
                && parameters[0] instanceof CheckpointStats) {
            synchronized (RECENT) {
                if (RECENT.size() == CAPACITY) {
                    RECENT.removeFirst();
                }
                RECENT.addLast((CheckpointStats) parameters[0]);
            }
        }
    }

    /** The recorded stats, oldest first (at most the last 4096). */
    public static List<CheckpointStats> recent() {
        synchronized (RECENT) {
            return List.copyOf(RECENT);
        }
    }

    /** Forgets everything recorded so far (and, called first, starts recording). */
    public static void clear() {
        synchronized (RECENT) {
            RECENT.clear();
        }
    }
}
