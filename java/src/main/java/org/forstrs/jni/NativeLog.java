package org.forstrs.jni;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native library's log events in slf4j: the engine's events (storage retries, a damaged disk
 * cache entry, background failures, files it cannot delete...) are logged by loggers named {@value
 * #LOGGER_PREFIX}{@code .<Rust module>} (e.g. {@code org.forstrs.native.storage.retrying}), each
 * line prefixed with the database it happened for ({@code [job=..., op=..., subtask=...,
 * attempt=...]}), repeats of one event for one database at most 10 times a minute.
 *
 * <p>The native side only produces the levels that the logger {@value #LOGGER_PREFIX} has enabled
 * (it is told at load and again at every database open, {@link #refreshLevel}); set levels on that
 * logger, a child logger can only log less than it.
 */
public final class NativeLog {

    /** The parent of every logger of native events. */
    public static final String LOGGER_PREFIX = "org.forstrs.native";

    // Level codes shared with the native side (rust/jni/logging/layer.rs): 0 is off.
    static final int ERROR = 1;
    static final int WARN = 2;
    static final int INFO = 3;
    static final int DEBUG = 4;
    static final int TRACE = 5;

    private static final Logger NATIVE = LoggerFactory.getLogger(LOGGER_PREFIX);

    private NativeLog() {}

    /** Makes the native library log here; once per loaded library ({@link NativeLibraryLoader}). */
    static void install() {
        nativeInstall(maxLevel());
    }

    /**
     * Tells the native library the levels that are enabled now (after a logging configuration
     * changed at run time; every database open does it).
     */
    public static void refreshLevel() {
        NativeLibraryLoader.ensureLoaded();
        nativeSetMaxLevel(maxLevel());
    }

    /** The most verbose level enabled on {@value #LOGGER_PREFIX}, as a level code (0: none). */
    static int maxLevel() {
        if (NATIVE.isTraceEnabled()) {
            return TRACE;
        } else if (NATIVE.isDebugEnabled()) {
            return DEBUG;
        } else if (NATIVE.isInfoEnabled()) {
            return INFO;
        } else if (NATIVE.isWarnEnabled()) {
            return WARN;
        } else if (NATIVE.isErrorEnabled()) {
            return ERROR;
        }
        return 0;
    }

    /** Called by native code for one event (any thread; native threads are daemons). */
    static void log(int level, String logger, String message) {
        Logger log = LoggerFactory.getLogger(logger);
        switch (level) {
            case ERROR -> log.error(message);
            case WARN -> log.warn(message);
            case INFO -> log.info(message);
            case DEBUG -> log.debug(message);
            default -> log.trace(message);
        }
    }

    private static native void nativeInstall(int maxLevel);

    private static native void nativeSetMaxLevel(int maxLevel);
}
