package org.forstrs.flink;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * An in-memory log4j2 appender on one logger (and its children) of the test JVM's log4j
 * configuration, at a given level, for as long as it is open: tests wait for the event they
 * expect ({@link #await}) instead of sleeping.
 */
final class CapturedLog extends AbstractAppender implements AutoCloseable {

    private final String loggerName;
    private final BlockingQueue<LogEvent> events = new LinkedBlockingQueue<>();

    private CapturedLog(String loggerName) {
        super("captured-" + loggerName, null, null, true, Property.EMPTY_ARRAY);
        this.loggerName = loggerName;
    }

    /** Captures what {@code loggerName} and its children log at {@code level} and above. */
    static CapturedLog attach(String loggerName, Level level) {
        CapturedLog appender = new CapturedLog(loggerName);
        appender.start();
        LoggerContext context = context();
        Configuration config = context.getConfiguration();
        LoggerConfig logger = new LoggerConfig(loggerName, level, false);
        logger.addAppender(appender, level, null);
        config.addLogger(loggerName, logger);
        context.updateLoggers();
        return appender;
    }

    @Override
    public void append(LogEvent event) {
        events.add(event.toImmutable());
    }

    /**
     * The first event from now on that matches, within {@code deadline} (a hang guard: it fails
     * naming {@code what} it waited for).
     */
    LogEvent await(String what, Duration deadline, Predicate<LogEvent> matching)
            throws InterruptedException {
        long end = System.nanoTime() + deadline.toNanos();
        while (true) {
            LogEvent event = events.poll(end - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (event == null) {
                throw new AssertionError("no log event " + what + " within " + deadline);
            }
            if (matching.test(event)) {
                return event;
            }
        }
    }

    @Override
    public void close() {
        LoggerContext context = context();
        context.getConfiguration().removeLogger(loggerName);
        context.updateLoggers();
        stop();
    }

    private static LoggerContext context() {
        return (LoggerContext) LogManager.getContext(false);
    }
}
