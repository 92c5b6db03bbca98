package org.forstrs.flink.snapshot;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * The most recent checkpoint costs of every ForSt-RS keyed backend in this JVM, for benchmarks
 * and tests that run jobs in-process (a MiniCluster) and cannot reach the backend instances.
 */
public final class CheckpointStatsLog {

    private static final int CAPACITY = 4096;

    private static final Deque<CheckpointStats> RECENT = new ArrayDeque<>();

    private CheckpointStatsLog() {}

    public static void add(CheckpointStats stats) {
        synchronized (RECENT) {
            if (RECENT.size() == CAPACITY) {
                RECENT.removeFirst();
            }
            RECENT.addLast(stats);
        }
    }

    /** The recorded stats, oldest first (at most the last 4096). */
    public static List<CheckpointStats> recent() {
        synchronized (RECENT) {
            return List.copyOf(RECENT);
        }
    }

    /** Forgets everything recorded so far. */
    public static void clear() {
        synchronized (RECENT) {
            RECENT.clear();
        }
    }
}
