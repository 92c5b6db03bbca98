package org.forstrs.flink.metrics;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;

import org.forstrs.flink.config.ForStMetricOptions;
import org.forstrs.flink.snapshot.CheckpointStats;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.StringEntries;

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

    /** Keeps the gauges and counters registered in it. */
    private static final class GaugeGroup extends UnregisteredMetricsGroup {
        final Map<String, Gauge<?>> gauges = new TreeMap<>();
        final Map<String, Counter> counters = new TreeMap<>();

        @Override
        public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
            gauges.put(name, gauge);
            return gauge;
        }

        @Override
        public <C extends Counter> C counter(String name, C counter) {
            counters.put(name, counter);
            return counter;
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
                            ForStMetricOptions.ENGINE_STATS.key()),
                    false);
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
        // closed: the values at close, without calling the closed database
        assertThat(value(group, "rocksdb.num-files-at-level6")).isEqualTo(1);
        assertThat(value(group, "forstrs.flushes")).isEqualTo(1);
    }

    @Test
    void theDiskCacheRegistersTheFileCacheMetricsOfFlinksForSt(@TempDir Path dir) {
        String[] cache = StringEntries.diskCacheOptions(dir.resolve("cache"));
        NativeDb db = NativeDb.open(dir.resolve("db").toUri().toString(), cache);
        GaugeGroup group = new GaugeGroup();
        try {
            int cf = db.createColumnFamily("state");
            for (int i = 0; i < 2000; i++) {
                put(db, cf, String.format("key-%06d", i), "value-" + "-".repeat(100));
            }
            db.compact(); // the new SSTs are cached as they are written
            ByteBuffer out = ByteBuffer.allocateDirect(256);
            ByteBuffer key = direct("key-000042");
            assertThat(db.get(cf, key, key.capacity(), out, 256)).isPositive(); // a cache hit
            NativeMetricMonitor.register(db, () -> null, group, List.of(), true);
            assertThat(group.counters)
                    .containsOnlyKeys(
                            "forst.fileCache.hit",
                            "forst.fileCache.miss",
                            "forst.fileCache.lru.loadback",
                            "forst.fileCache.lru.evict");
            assertThat(group.gauges).containsOnlyKeys("forst.fileCache.usedBytes");
            assertThat(value(group, "forst.fileCache.usedBytes")).isPositive();
            Counter hits = group.counters.get("forst.fileCache.hit");
            assertThat(hits.getCount()).isPositive();
            assertThatThrownBy(hits::inc).isInstanceOf(UnsupportedOperationException.class);
        } finally {
            db.close();
        }
    }

    @Test
    void noKeyRegistersNothing(@TempDir Path dir) {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        try {
            GaugeGroup group = new GaugeGroup();
            NativeMetricMonitor.register(db, () -> null, group, List.of(), false);
            assertThat(group.gauges).isEmpty();
            assertThat(group.counters).isEmpty();
        } finally {
            db.close();
        }
    }

    @Test
    void statsFillExactlyOneValuePerNameAndOnceClosedThoseAtClose(@TempDir Path dir) {
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
        long[] atClose = new long[values.length];
        atClose[0] = -1;
        assertThat(db.readStats(atClose)).isTrue();
        assertThat(atClose[0]).isNotNegative();
        assertThat(atClose[EngineStatNames.indexOf("block-cache-capacity-bytes")])
                .isEqualTo(values[EngineStatNames.indexOf("block-cache-capacity-bytes")]);
    }
}
