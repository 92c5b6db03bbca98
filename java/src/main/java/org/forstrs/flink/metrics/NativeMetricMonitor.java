package org.forstrs.flink.metrics;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

import org.forstrs.flink.config.ForStMetricOptions;
import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.state.NativeDb;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * The native metrics of one backend's database: registers a gauge in the backend's metric group
 * for each metric switched on ({@link FlinkMetricNames}; {@link ForStMetricOptions#ENGINE_STATS}:
 * every engine statistic as {@code forstrs.<name>}, and the backend's last checkpoint as {@code
 * forstrs.last-checkpoint-*}). Gauges read one snapshot of all statistics,
 * taken with one native call and reused for {@link #MAX_AGE_NANOS}, so a reporter reading every
 * gauge costs one call per report. Once the database is closed (the backend disposed) gauges show
 * its values at close and never touch it.
 *
 * <p>Our statistics are per database: every state of a backend lives in one tree, so the gauges
 * are in the backend's group itself, not in one group per column family as in Flink's ForSt.
 */
public final class NativeMetricMonitor {

    /** Prefix of the gauges of {@link ForStMetricOptions#ENGINE_STATS}. */
    public static final String ENGINE_STAT_PREFIX = "forstrs.";

    /** Gauges of {@link ForStMetricOptions#ENGINE_STATS} about the last completed checkpoint. */
    private static final Map<String, ToLongFunction<CheckpointStats>> CHECKPOINT_GAUGES =
            checkpointGauges();

    /** Well below any reporter interval, well above the time one report takes. */
    private static final long MAX_AGE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final NativeDb db;
    private final long[] values;
    private long readAtNanos;

    private NativeMetricMonitor(NativeDb db) {
        this.db = db;
        this.values = new long[EngineStatNames.all().size()];
        this.readAtNanos = System.nanoTime() - MAX_AGE_NANOS;
    }

    /**
     * Registers the gauges of the switched-on {@code metricKeys} in {@code group}; keys without an
     * equivalent in the engine register nothing. With {@code diskCache} (the disk cache is on),
     * also the file-cache metrics of Flink's ForSt ({@link FlinkMetricNames#FILE_CACHE_COUNTERS}:
     * the cache is shared by the subtasks of a task manager that use its directory, and these
     * are its totals). Does nothing (not even loading the names) when no metric is on.
     */
    public static void register(
            NativeDb db,
            Supplier<CheckpointStats> lastCheckpoint,
            MetricGroup group,
            Collection<String> metricKeys,
            boolean diskCache) {
        if (metricKeys.isEmpty() && !diskCache) {
            return;
        }
        NativeMetricMonitor monitor = new NativeMetricMonitor(db);
        if (diskCache) {
            FlinkMetricNames.FILE_CACHE_COUNTERS.forEach(
                    (name, stat) -> group.counter(name, monitor.counter(stat)));
            Gauge<Long> usedBytes = monitor.gauge(FlinkMetricNames.FILE_CACHE_USED_BYTES.stat());
            group.gauge(FlinkMetricNames.FILE_CACHE_USED_BYTES.name(), usedBytes);
        }
        for (String key : metricKeys) {
            if (key.equals(ForStMetricOptions.ENGINE_STATS.key())) {
                for (String stat : EngineStatNames.all()) {
                    group.gauge(ENGINE_STAT_PREFIX + stat, monitor.gauge(stat));
                }
                CHECKPOINT_GAUGES.forEach(
                        (name, field) -> {
                            Gauge<Long> gauge = () -> checkpointValue(lastCheckpoint, field);
                            group.gauge(ENGINE_STAT_PREFIX + name, gauge);
                        });
            } else {
                for (FlinkMetricNames.Gauge gauge : FlinkMetricNames.gauges(key)) {
                    group.gauge(gauge.name(), monitor.gauge(gauge.stat()));
                }
            }
        }
    }

    private static Map<String, ToLongFunction<CheckpointStats>> checkpointGauges() {
        Map<String, ToLongFunction<CheckpointStats>> m = new LinkedHashMap<>();
        m.put("last-checkpoint-sync-nanos", CheckpointStats::syncNanos);
        m.put("last-checkpoint-async-nanos", CheckpointStats::asyncNanos);
        m.put("last-checkpoint-files-copied", CheckpointStats::filesCopied);
        m.put("last-checkpoint-files-reused", CheckpointStats::filesReused);
        m.put("last-checkpoint-bytes-copied", CheckpointStats::bytesCopied);
        m.put("last-checkpoint-bytes-through-process", CheckpointStats::bytesThroughProcess);
        return m;
    }

    /** 0 before the backend's first checkpoint. */
    private static long checkpointValue(
            Supplier<CheckpointStats> lastCheckpoint, ToLongFunction<CheckpointStats> field) {
        CheckpointStats stats = lastCheckpoint.get();
        return stats == null ? 0 : field.applyAsLong(stats);
    }

    private Gauge<Long> gauge(String stat) {
        int index = EngineStatNames.indexOf(stat);
        return () -> value(index);
    }

    /** A counter showing an engine statistic; only the engine counts, so it cannot be changed. */
    private Counter counter(String stat) {
        int index = EngineStatNames.indexOf(stat);
        return new Counter() {
            @Override
            public void inc() {
                throw new UnsupportedOperationException("counted by the engine");
            }

            @Override
            public void inc(long n) {
                throw new UnsupportedOperationException("counted by the engine");
            }

            @Override
            public void dec() {
                throw new UnsupportedOperationException("counted by the engine");
            }

            @Override
            public void dec(long n) {
                throw new UnsupportedOperationException("counted by the engine");
            }

            @Override
            public long getCount() {
                return value(index);
            }
        };
    }

    private synchronized long value(int index) {
        long now = System.nanoTime();
        if (now - readAtNanos >= MAX_AGE_NANOS) {
            // once the database is closed: its values at close
            db.readStats(values);
            readAtNanos = now;
        }
        return values[index];
    }
}
