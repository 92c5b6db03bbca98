package org.forstrs.flink.async;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.state.ttl.TtlValue;

import org.forstrs.flink.ForStStateBackend;
import org.forstrs.flink.config.ForStOptions;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.ValueSerde;
import org.forstrs.flink.sync.ForStSyncKeyedStateBackend;
import org.forstrs.jni.ForStNative;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.annotation.Nullable;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Expired TTL state leaves the store when compaction runs (Flink's default compaction-filter
 * cleanup), on both keyed backends: value state, map state, list state of fixed-length elements
 * (parsed natively) and of variable-length ones (the engine calls back into Java), with time from
 * a manual {@link TtlTimeProvider} (also called back). What is stored is read raw from the engine,
 * not through the TTL states, which would hide expired values anyway.
 */
class TtlCompactionTest {

    private static final int KEY_GROUPS = 128;
    private static final long TTL = 100;

    /** Written once, at time 1000. */
    private static final List<String> STALE = List.of("s0", "s1", "s2", "s3");

    /** Written at 1000 and again at 1050. */
    private static final List<String> FRESH = List.of("f0", "f1", "f2");

    @TempDir Path dir;

    private final JobID jobId = new JobID();
    private final ManualTime time = new ManualTime();
    private MockEnvironment env;
    private ForStStateBackend backend;

    /** Flink's tests use a manual provider alike. */
    static final class ManualTime implements TtlTimeProvider {
        volatile long now;

        @Override
        public long currentTimestamp() {
            return now;
        }
    }

    /** The four TTL states of one backend, each written with the number {@code n}. */
    private interface States {
        void write(String key, long n) throws Exception;
    }

    @BeforeEach
    void setUp() throws Exception {
        env = MockEnvironment.builder().build();
        env.setCheckpointStorageAccess(
                new FileSystemCheckpointStorage(dir.resolve("checkpoints").toUri())
                        .createCheckpointStorage(jobId));
        Configuration settings = new Configuration();
        settings.set(ForStOptions.LOCAL_DIRECTORIES, dir.resolve("local").toString());
        backend = new ForStStateBackend(settings);
    }

    @AfterEach
    void tearDown() throws Exception {
        env.close();
    }

    private KeyedStateBackendParametersImpl<String> parameters() {
        return new KeyedStateBackendParametersImpl<>(
                env,
                jobId,
                "ttl",
                StringSerializer.INSTANCE,
                KEY_GROUPS,
                new KeyGroupRange(0, KEY_GROUPS - 1),
                env.getTaskKvStateRegistry(),
                time,
                new UnregisteredMetricsGroup(),
                List.of(),
                new CloseableRegistry());
    }

    private static StateTtlConfig ttl() {
        return StateTtlConfig.newBuilder(Duration.ofMillis(TTL)).build();
    }

    @Test
    void synchronousBackendDropsExpiredStateInCompaction() throws Exception {
        ForStSyncKeyedStateBackend<String> sync =
                backend.createKeyedStateBackend(parameters());
        try {
            ValueStateDescriptor<Long> value =
                    new ValueStateDescriptor<>("value", LongSerializer.INSTANCE);
            ListStateDescriptor<Long> fixed =
                    new ListStateDescriptor<>("fixed-list", LongSerializer.INSTANCE);
            ListStateDescriptor<String> list =
                    new ListStateDescriptor<>("list", StringSerializer.INSTANCE);
            MapStateDescriptor<Long, String> map =
                    new MapStateDescriptor<>(
                            "map", LongSerializer.INSTANCE, StringSerializer.INSTANCE);
            for (org.apache.flink.api.common.state.StateDescriptor<?, ?> d :
                    List.of(value, fixed, list, map)) {
                d.enableTimeToLive(ttl());
            }
            VoidNamespace ns = VoidNamespace.INSTANCE;
            VoidNamespaceSerializer nss = VoidNamespaceSerializer.INSTANCE;
            checkCompactionDropsExpired(
                    sync.getNativeDb(),
                    (key, n) -> {
                        sync.setCurrentKey(key);
                        sync.getPartitionedState(ns, nss, value).update(n);
                        sync.getPartitionedState(ns, nss, fixed).add(n);
                        sync.getPartitionedState(ns, nss, list).add("x," + n);
                        sync.getPartitionedState(ns, nss, map).put(n, "v" + n);
                    });
        } finally {
            sync.dispose();
        }
    }

    @Test
    void asyncBackendDropsExpiredStateInCompaction() throws Exception {
        ForStKeyedStateBackend<String> async = backend.createAsyncKeyedStateBackend(parameters());
        try {
            ForStStatesTest.DirectHandler handler =
                    new ForStStatesTest.DirectHandler(
                            (ForStStateExecutor) async.createStateExecutor());
            async.setup(handler);
            handler.switchKey(STALE.get(0));
            org.apache.flink.api.common.state.v2.ValueStateDescriptor<Long> valueDesc =
                    new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>(
                            "value", LongSerializer.INSTANCE);
            org.apache.flink.api.common.state.v2.ListStateDescriptor<Long> fixedDesc =
                    new org.apache.flink.api.common.state.v2.ListStateDescriptor<>(
                            "fixed-list", LongSerializer.INSTANCE);
            org.apache.flink.api.common.state.v2.ListStateDescriptor<String> listDesc =
                    new org.apache.flink.api.common.state.v2.ListStateDescriptor<>(
                            "list", StringSerializer.INSTANCE);
            org.apache.flink.api.common.state.v2.MapStateDescriptor<Long, String> mapDesc =
                    new org.apache.flink.api.common.state.v2.MapStateDescriptor<>(
                            "map", LongSerializer.INSTANCE, StringSerializer.INSTANCE);
            for (org.apache.flink.api.common.state.v2.StateDescriptor<?> d :
                    List.of(valueDesc, fixedDesc, listDesc, mapDesc)) {
                d.enableTimeToLive(ttl());
            }
            VoidNamespace ns = VoidNamespace.INSTANCE;
            VoidNamespaceSerializer nss = VoidNamespaceSerializer.INSTANCE;
            org.apache.flink.api.common.state.v2.ValueState<Long> value =
                    async.getOrCreateKeyedState(ns, nss, valueDesc);
            org.apache.flink.api.common.state.v2.ListState<Long> fixed =
                    async.getOrCreateKeyedState(ns, nss, fixedDesc);
            org.apache.flink.api.common.state.v2.ListState<String> list =
                    async.getOrCreateKeyedState(ns, nss, listDesc);
            org.apache.flink.api.common.state.v2.MapState<Long, String> map =
                    async.getOrCreateKeyedState(ns, nss, mapDesc);
            checkCompactionDropsExpired(
                    async.getNativeDb(),
                    (key, n) -> {
                        handler.switchKey(key);
                        value.update(n);
                        fixed.add(n);
                        list.add("x," + n);
                        map.put(n, "v" + n);
                    });
            assertThat(handler.errors).isEmpty();
        } finally {
            async.dispose();
        }
    }

    private void checkCompactionDropsExpired(NativeDb db, States states) throws Exception {
        time.now = 1000;
        for (String key : STALE) {
            states.write(key, 1);
        }
        for (String key : FRESH) {
            states.write(key, 1);
        }
        time.now = 1050;
        for (String key : FRESH) {
            states.write(key, 2);
        }
        Raw raw = new Raw(db);

        // Not expired yet (1000 + 100 > 1099): compaction keeps everything.
        time.now = 1099;
        db.compact();
        for (String key : STALE) {
            assertThat(raw.value(key)).as(key).isNotNull();
            assertThat(raw.fixedList(key)).as(key).containsExactly(1000L);
            assertThat(raw.list(key)).as(key).containsExactly(1000L);
            assertThat(raw.mapEntry(key, 1)).as(key).isNotNull();
        }

        // Written at 1000: expired. The fresh keys keep what they got at 1050.
        time.now = 1100;
        db.compact();
        for (String key : STALE) {
            assertThat(raw.value(key)).as(key).isNull();
            assertThat(raw.fixedList(key)).as(key).isNull();
            assertThat(raw.list(key)).as(key).isNull();
            assertThat(raw.mapEntry(key, 1)).as(key).isNull();
        }
        for (String key : FRESH) {
            assertThat(raw.value(key)).as(key).isNotNull();
            assertThat(raw.fixedList(key)).as(key).containsExactly(1050L);
            assertThat(raw.list(key)).as(key).containsExactly(1050L);
            assertThat(raw.mapEntry(key, 1)).as(key).isNull();
            assertThat(raw.mapEntry(key, 2)).as(key).isNotNull();
        }

        time.now = 1150;
        db.compact();
        for (String key : FRESH) {
            assertThat(raw.value(key)).as(key).isNull();
            assertThat(raw.fixedList(key)).as(key).isNull();
            assertThat(raw.list(key)).as(key).isNull();
            assertThat(raw.mapEntry(key, 2)).as(key).isNull();
        }
    }

    /** Reads values from the engine by Flink's key layout, as the backends write them. */
    private static final class Raw {
        private final NativeDb db;
        private final SerializedCompositeKeyBuilder<String> keys =
                new SerializedCompositeKeyBuilder<>(
                        StringSerializer.INSTANCE,
                        CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                                KEY_GROUPS),
                        32);
        private final ByteBuffer keyBuffer = ByteBuffer.allocateDirect(256);
        private final ByteBuffer out = ByteBuffer.allocateDirect(4096);

        Raw(NativeDb db) {
            this.db = db;
        }

        @Nullable
        byte[] value(String key) throws Exception {
            return get("value", key, null);
        }

        @Nullable
        byte[] mapEntry(String key, long userKey) throws Exception {
            return get("map", key, userKey);
        }

        /** The stored elements' last-access timestamps; null if nothing is stored. */
        @Nullable
        List<Long> fixedList(String key) throws Exception {
            return timestamps(get("fixed-list", key, null), LongSerializer.INSTANCE);
        }

        @Nullable
        List<Long> list(String key) throws Exception {
            return timestamps(get("list", key, null), StringSerializer.INSTANCE);
        }

        private static <T> List<Long> timestamps(@Nullable byte[] bytes, TypeSerializer<T> user)
                throws Exception {
            if (bytes == null) {
                return null;
            }
            List<Long> timestamps = new ArrayList<>();
            for (TtlValue<T> element :
                    ValueSerde.deserializeList(
                            new TtlStateFactory.TtlSerializer<>(LongSerializer.INSTANCE, user),
                            bytes)) {
                timestamps.add(element.getLastAccessTimestamp());
            }
            return timestamps;
        }

        @Nullable
        private byte[] get(String state, String key, @Nullable Long userKey) throws Exception {
            keys.setKeyAndKeyGroup(key, KeyGroupRangeAssignment.assignToKeyGroup(key, KEY_GROUPS));
            byte[] bytes =
                    userKey == null
                            ? keys.buildCompositeKeyNamespace(
                                    VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE)
                            : keys.buildCompositeKeyNamesSpaceUserKey(
                                    VoidNamespace.INSTANCE,
                                    VoidNamespaceSerializer.INSTANCE,
                                    userKey,
                                    LongSerializer.INSTANCE);
            keyBuffer.clear();
            keyBuffer.put(bytes);
            // Ids follow from the name: this finds the state's family.
            int cf = db.createColumnFamily(state);
            int length = db.get(cf, keyBuffer, bytes.length, out, out.capacity());
            if (length == ForStNative.NOT_FOUND) {
                return null;
            }
            assertThat(length).isPositive();
            byte[] value = new byte[length];
            out.get(0, value);
            return value;
        }
    }
}
