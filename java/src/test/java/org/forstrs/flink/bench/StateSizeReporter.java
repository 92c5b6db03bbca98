package org.forstrs.flink.bench;

import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

import java.util.List;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * How much state ForSt-RS held when a job ended: a metric reporter (in the job's JVM) that keeps
 * every backend's {@code rocksdb.estimate-live-data-size} and {@code
 * rocksdb.cur-size-all-mem-tables} gauges, which show their database's values at close once it
 * is closed. {@link #bytes} sums them: the bytes of live SST files (compressed) and memtables over
 * every stateful operator's subtasks. Needs both metrics switched on ({@link #configure}).
 */
public final class StateSizeReporter implements MetricReporter, MetricReporterFactory {

    static final String[] METRICS = {"estimate-live-data-size", "cur-size-all-mem-tables"};

    private static final List<Gauge<?>> GAUGES = new CopyOnWriteArrayList<>();

    /** The configuration keys that switch the metrics and this reporter on. */
    static void configure(org.apache.flink.configuration.Configuration config) {
        for (String metric : METRICS) {
            config.setString("state.backend.forst.metrics." + metric, "true");
        }
        config.setString(
                "metrics.reporter.state-size.factory.class", StateSizeReporter.class.getName());
    }

    /** The sum of the kept gauges' values. */
    static long bytes() {
        long sum = 0;
        for (Gauge<?> gauge : GAUGES) {
            if (gauge.getValue() instanceof Number value) {
                sum += value.longValue();
            }
        }
        return sum;
    }

    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        return new StateSizeReporter();
    }

    @Override
    public void open(MetricConfig config) {}

    @Override
    public void close() {}

    @Override
    public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
        for (String wanted : METRICS) {
            if (name.equals("rocksdb." + wanted) && metric instanceof Gauge<?> gauge) {
                GAUGES.add(gauge);
            }
        }
    }

    /** Kept: a closed database's gauges still show its values at close. */
    @Override
    public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {}
}
