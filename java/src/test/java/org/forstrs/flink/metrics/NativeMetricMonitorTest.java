package org.forstrs.flink.metrics;

import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;

import org.forstrs.flink.config.ForStMetricOptions;
import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.state.NativeDb;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Gauges of a real database: which are registered, what they show, and after close. */
class NativeMetricMonitorTest {

    private static final String PREFIX = ForStMetricOptions.PREFIX;

    /** Keeps the gauges registered in it. */
    private static final class GaugeGroup extends UnregisteredMetricsGroup {
        final Map<String, Gauge<?>> gauges = new TreeMap<>();

        @Override
        public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
            gauges.put(name, gauge);
            return gauge;
        }
    }

    private static long value(GaugeGroup group, String name) {
        assertThat(group.gauges).containsKey(name);
        return ((Number) group.gauges.get(name).getValue()).longValue();
    }

    private static void put(NativeDb db, int cf, String key, String value) {
        ByteBuffer k = direct(key);
        ByteBuffer v = direct(value);
        db.put(cf, k, k.capacity(), v, v.capacity());
    }

    private static ByteBuffer direct(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }

    @Test
    void switchedOnKeysRegisterTheirGaugesWhichReadTheDatabase(@TempDir Path dir) {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        GaugeGroup group = new GaugeGroup();
        try {
            int cf = db.createColumnFamily("state");
            for (int i = 0; i < 100; i++) {
                put(db, cf, "key-" + i, "value-" + i);
            }
            db.compact(); // flush, then compact into the last level
            CheckpointStats checkpoint =
                    new CheckpointStats(7, 11, 13, 17, List.of("a", "b"), 3, 19, List.of());
            NativeMetricMonitor.register(
                    db,
                    () -> checkpoint,
                    group,
                    List.of(
                            PREFIX + "num-files-at-level",
                            PREFIX + "bytes-written",
                            PREFIX + "bloom-filter-useful",
                            ForStMetricOptions.ENGINE_STATS.key()));
            assertThat(group.gauges)
                    .containsKeys("rocksdb.num-files-at-level0", "rocksdb.num-files-at-level6")
                    .containsKey("rocksdb.bytes_written")
                    .doesNotContainKey("rocksdb.bloom_filter_useful");
            for (String stat : EngineStatNames.all()) {
                assertThat(group.gauges).containsKey("forstrs." + stat);
            }
            assertThat(value(group, "forstrs.flushes")).isEqualTo(1);
            assertThat(value(group, "forstrs.compactions")).isEqualTo(1);
            assertThat(value(group, "rocksdb.num-files-at-level6")).isEqualTo(1);
            assertThat(value(group, "rocksdb.num-files-at-level0")).isZero();
            assertThat(value(group, "rocksdb.bytes_written")).isPositive();
            assertThat(value(group, "forstrs.last-checkpoint-async-nanos")).isEqualTo(13);
            assertThat(value(group, "forstrs.last-checkpoint-files-copied")).isEqualTo(2);
            assertThat(value(group, "forstrs.last-checkpoint-bytes-through-process")).isEqualTo(17);
        } finally {
            db.close();
        }
        // closed: the last values, without calling the closed database
        assertThat(value(group, "rocksdb.num-files-at-level6")).isEqualTo(1);
        assertThat(value(group, "forstrs.flushes")).isEqualTo(1);
    }

    @Test
    void noKeyRegistersNothing(@TempDir Path dir) {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        try {
            GaugeGroup group = new GaugeGroup();
            NativeMetricMonitor.register(db, () -> null, group, List.of());
            assertThat(group.gauges).isEmpty();
        } finally {
            db.close();
        }
    }

    @Test
    void statsFillExactlyOneValuePerNameAndNeverAClosedDatabase(@TempDir Path dir) {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        long[] values = new long[EngineStatNames.all().size()];
        try {
            assertThat(db.readStats(values)).isTrue();
            assertThat(values[EngineStatNames.indexOf("block-cache-capacity-bytes")]).isPositive();
            assertThatThrownBy(() -> db.readStats(new long[values.length + 1]))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("statistics");
        } finally {
            db.close();
        }
        values[0] = -1;
        assertThat(db.readStats(values)).isFalse();
        assertThat(values[0]).isEqualTo(-1);
    }
}
