package org.forstrs.flink.async;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.api.common.state.v2.StateIterator;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.core.asyncprocessing.InternalAsyncFuture;
import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.v2.internal.InternalPartitionedState;

import org.forstrs.flink.state.NativeDb;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.annotation.Nonnull;
import javax.annotation.Nullable;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every state type against the real native library, through a minimal request handler that runs
 * each request as its own batch (the MiniCluster tests cover Flink's controller): namespaces,
 * deletes, map iteration across many chunks, failures confined to their request, response buffer
 * growth, and use after close.
 */
class ForStStatesTest {

    private static final int MAX_PARALLELISM = 128;
    private static final int PREFIX_BYTES =
            CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(MAX_PARALLELISM);

    @TempDir Path dir;

    private NativeDb db;
    private ForStStateExecutor executor;
    private DirectHandler handler;

    /** Runs each request at once as a batch of one; failures are recorded, not thrown. */
    static final class DirectHandler implements StateRequestHandler {
        final ForStStateExecutor executor;
        final List<Throwable> errors = new CopyOnWriteArrayList<>();
        RecordContext<String> current;

        DirectHandler(ForStStateExecutor executor) {
            this.executor = executor;
        }

        void switchKey(String key) {
            current =
                    new RecordContext<>(
                            key,
                            key,
                            c -> {},
                            KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISM),
                            new EpochManager.Epoch(0),
                            0);
        }

        <IN, OUT> StateRequest<String, ?, IN, OUT> request(
                State state, StateRequestType type, @Nullable IN payload) {
            InternalAsyncFuture<OUT> future = DirectFutures.recordingFailures(errors);
            return new StateRequest<>(state, type, false, payload, future, current);
        }

        @Override
        public <IN, OUT> InternalAsyncFuture<OUT> handleRequest(
                @Nullable State state, StateRequestType type, @Nullable IN payload) {
            StateRequest<String, ?, IN, OUT> request = request(state, type, payload);
            ForStStateExecutor.Batch batch = new ForStStateExecutor.Batch();
            batch.offer(request);
            // failures are reported through the request's future
            executor.executeBatchRequests(batch).handle((v, t) -> null).join();
            return request.getFuture();
        }

        @Override
        public <IN, OUT> OUT handleRequestSync(
                State state, StateRequestType type, @Nullable IN payload) {
            int before = errors.size();
            InternalAsyncFuture<OUT> future = handleRequest(state, type, payload);
            if (errors.size() > before) {
                throw new IllegalStateException("request failed", errors.get(before));
            }
            assertThat(future.isDone()).isTrue();
            return future.get();
        }

        @Override
        public <N> void setCurrentNamespaceForState(
                @Nonnull InternalPartitionedState<N> state, N namespace) {
            current.setNamespace(state, namespace);
        }
    }

    @BeforeEach
    void open() {
        db = NativeDb.open(dir.toUri().toString(), new String[0]);
        executor = new ForStStateExecutor(db, 2);
        handler = new DirectHandler(executor);
        handler.switchKey("alice");
    }

    @AfterEach
    void close() {
        executor.shutdown();
        db.close();
    }

    private <N> KeySerde<String, N> keys(
            org.apache.flink.api.common.typeutils.TypeSerializer<N> nsSerializer, N defaultNs) {
        return new KeySerde<>(
                () ->
                        new SerializedCompositeKeyBuilder<>(
                                StringSerializer.INSTANCE, PREFIX_BYTES, 32),
                nsSerializer,
                defaultNs);
    }

    private KeySerde<String, VoidNamespace> voidKeys() {
        return keys(VoidNamespaceSerializer.INSTANCE, VoidNamespace.INSTANCE);
    }

    @Test
    void valueStateReadsWritesAndDeletesPerKey() {
        ForStValueState<String, VoidNamespace, Long> value =
                new ForStValueState<>(
                        handler, LongSerializer.INSTANCE, db.createColumnFamily("v"), voidKeys());
        assertThat(value.value()).isNull();
        value.update(5L);
        assertThat(value.value()).isEqualTo(5L);
        handler.switchKey("bob");
        assertThat(value.value()).isNull();
        value.update(7L);
        handler.switchKey("alice");
        assertThat(value.value()).isEqualTo(5L);
        value.update(null);
        assertThat(value.value()).isNull();
        handler.switchKey("bob");
        value.clear();
        assertThat(value.value()).isNull();
        assertThat(handler.errors).isEmpty();
    }

    @Test
    void namespacesAreIndependent() {
        ForStValueState<String, Long, Long> value =
                new ForStValueState<>(
                        handler,
                        LongSerializer.INSTANCE,
                        db.createColumnFamily("ns"),
                        keys(LongSerializer.INSTANCE, 0L));
        value.update(100L); // default namespace 0
        value.setCurrentNamespace(1L);
        value.update(10L);
        value.setCurrentNamespace(2L);
        value.update(20L);
        value.setCurrentNamespace(1L);
        assertThat(value.value()).isEqualTo(10L);
        value.clear();
        assertThat(value.value()).isNull();
        value.setCurrentNamespace(2L);
        assertThat(value.value()).isEqualTo(20L);
        value.setCurrentNamespace(0L);
        assertThat(value.value()).isEqualTo(100L);
    }

    @Test
    void largeValuesGrowTheResponseBuffer() {
        ForStValueState<String, VoidNamespace, byte[]> value =
                new ForStValueState<>(
                        handler,
                        BytePrimitiveArraySerializer.INSTANCE,
                        db.createColumnFamily("big"),
                        voidKeys());
        byte[] big = new byte[3 << 20];
        Arrays.fill(big, (byte) 7);
        big[big.length - 1] = 9;
        value.update(big);
        assertThat(value.value()).isEqualTo(big);
    }

    @Test
    void listStateAppendsUpdatesAndClears() {
        ForStListState<String, VoidNamespace, Long> list =
                new ForStListState<>(
                        handler, LongSerializer.INSTANCE, db.createColumnFamily("l"), voidKeys());
        assertThat(list.get()).isEmpty();
        list.add(1L);
        list.add(2L);
        list.addAll(List.of(3L, 4L));
        list.addAll(List.of());
        assertThat(list.get()).containsExactly(1L, 2L, 3L, 4L);
        list.update(List.of(9L, 8L));
        assertThat(list.get()).containsExactly(9L, 8L);
        list.update(List.of());
        assertThat(list.get()).isEmpty();
        list.add(5L);
        list.clear();
        assertThat(list.get()).isEmpty();
        assertThatThrownBy(() -> list.add(null)).hasRootCauseInstanceOf(NullPointerException.class);
    }

    @Test
    void listNamespacesMerge() {
        ForStListState<String, Long, Long> list =
                new ForStListState<>(
                        handler,
                        LongSerializer.INSTANCE,
                        db.createColumnFamily("lm"),
                        keys(LongSerializer.INSTANCE, 0L));
        list.setCurrentNamespace(1L);
        list.addAll(List.of(1L, 2L));
        list.setCurrentNamespace(2L);
        list.add(3L);
        list.setCurrentNamespace(9L);
        list.add(0L);

        list.mergeNamespaces(9L, List.of(1L, 2L));
        assertThat(list.get()).containsExactlyInAnyOrder(0L, 1L, 2L, 3L);
        list.setCurrentNamespace(1L);
        assertThat(list.get()).isEmpty();

        list.add(7L);
        list.setCurrentNamespace(3L);
        list.add(8L);
        list.asyncMergeNamespaces(9L, java.util.Arrays.asList(1L, null, 3L));
        list.setCurrentNamespace(9L);
        assertThat(list.get()).containsExactlyInAnyOrder(0L, 1L, 2L, 3L, 7L, 8L);
        list.setCurrentNamespace(3L);
        assertThat(list.get()).isEmpty();
        assertThat(handler.errors).isEmpty();
    }

    @Test
    void mapStateIteratesAcrossManyChunks() throws Exception {
        ForStMapState<String, VoidNamespace, Long, String> map =
                new ForStMapState<>(
                        handler,
                        LongSerializer.INSTANCE,
                        StringSerializer.INSTANCE,
                        db.createColumnFamily("m"),
                        voidKeys());
        assertThat(map.isEmpty()).isTrue();
        Map<Long, String> expected = new HashMap<>();
        for (long i = 0; i < 12_000; i++) {
            expected.put(i, "v" + i);
        }
        map.putAll(expected);
        map.put(-1L, null);
        expected.put(-1L, null);
        // another key's entries must not show up
        handler.switchKey("bob");
        map.put(5L, "bob's");
        handler.switchKey("alice");

        assertThat(map.isEmpty()).isFalse();
        assertThat(map.get(42L)).isEqualTo("v42");
        assertThat(map.get(-1L)).isNull();
        assertThat(map.contains(-1L)).isTrue();
        assertThat(map.contains(12_345L)).isFalse();
        Map<Long, String> seen = new HashMap<>();
        map.entries().forEach(e -> seen.put(e.getKey(), e.getValue()));
        assertThat(seen).isEqualTo(expected);
        List<Long> keys = new ArrayList<>();
        map.keys().forEach(keys::add);
        assertThat(keys)
                .hasSize(expected.size())
                .containsExactlyInAnyOrderElementsOf(expected.keySet());
        List<String> values = new ArrayList<>();
        map.values().forEach(values::add);
        assertThat(values).containsExactlyInAnyOrderElementsOf(expected.values());

        // the async path: one chunk per ITERATOR_LOADING request
        long[] count = {0};
        InternalAsyncFuture<StateIterator<Map.Entry<Long, String>>> first =
                handler.handleRequest(map, StateRequestType.MAP_ITER, null);
        assertThat(first.get().isEmpty()).isFalse();
        first.get().onNext((Map.Entry<Long, String> e) -> {
            count[0]++;
        });
        assertThat(count[0]).isEqualTo(expected.size());

        map.remove(42L);
        assertThat(map.contains(42L)).isFalse();
        map.clear();
        assertThat(map.isEmpty()).isTrue();
        assertThat(map.entries()).isEmpty();
        handler.switchKey("bob");
        assertThat(map.get(5L)).isEqualTo("bob's");
        assertThat(handler.errors).isEmpty();
    }

    @Test
    void reducingAndAggregatingStates() {
        ForStReducingState<String, VoidNamespace, Long> sum =
                new ForStReducingState<>(
                        handler,
                        Long::sum,
                        LongSerializer.INSTANCE,
                        db.createColumnFamily("r"),
                        voidKeys());
        assertThat(sum.get()).isNull();
        for (long i = 1; i <= 100; i++) {
            sum.add(i);
        }
        assertThat(sum.get()).isEqualTo(5050L);
        sum.clear();
        assertThat(sum.get()).isNull();

        AggregateFunction<String, Long, String> lengths =
                new AggregateFunction<>() {
                    private static final long serialVersionUID = 1L;

                    @Override
                    public Long createAccumulator() {
                        return 0L;
                    }

                    @Override
                    public Long add(String value, Long acc) {
                        return acc + value.length();
                    }

                    @Override
                    public String getResult(Long acc) {
                        return "total " + acc;
                    }

                    @Override
                    public Long merge(Long a, Long b) {
                        return a + b;
                    }
                };
        ForStAggregatingState<String, VoidNamespace, String, Long, String> agg =
                new ForStAggregatingState<>(
                        handler,
                        lengths,
                        LongSerializer.INSTANCE,
                        db.createColumnFamily("a"),
                        voidKeys());
        assertThat(agg.get()).isNull();
        agg.add("abc");
        agg.add("de");
        assertThat(agg.get()).isEqualTo("total 5");
        agg.clear();
        assertThat(agg.get()).isNull();
    }

    @Test
    void aFailingRequestFailsAloneInItsBatch() {
        ForStValueState<String, VoidNamespace, Long> value =
                new ForStValueState<>(
                        handler, LongSerializer.INSTANCE, db.createColumnFamily("v"), voidKeys());
        ForStListState<String, VoidNamespace, Long> list =
                new ForStListState<>(
                        handler, LongSerializer.INSTANCE, db.createColumnFamily("l"), voidKeys());
        handler.switchKey("bob");
        value.update(3L);

        ForStStateExecutor.Batch batch = new ForStStateExecutor.Batch();
        handler.switchKey("alice");
        StateRequest<String, ?, Long, Void> update =
                handler.request(value, StateRequestType.VALUE_UPDATE, 11L);
        StateRequest<String, ?, Long, Void> badAdd =
                handler.request(list, StateRequestType.LIST_ADD, null);
        handler.switchKey("bob");
        StateRequest<String, ?, Void, Long> get =
                handler.request(value, StateRequestType.VALUE_GET, null);
        batch.offer(update);
        batch.offer(badAdd);
        batch.offer(get);
        executor.executeBatchRequests(batch).join();

        assertThat(update.getFuture().isDone()).isTrue();
        assertThat(get.getFuture().get()).isEqualTo(3L);
        assertThat(badAdd.getFuture().isDone()).isFalse();
        assertThat(handler.errors).hasSize(1);
        assertThat(handler.errors.get(0)).isInstanceOf(NullPointerException.class);
        handler.switchKey("alice");
        assertThat(value.value()).isEqualTo(11L);
    }

    @Test
    void requestsAfterCloseFailWithoutTouchingTheDb() {
        ForStValueState<String, VoidNamespace, Long> value =
                new ForStValueState<>(
                        handler, LongSerializer.INSTANCE, db.createColumnFamily("v"), voidKeys());
        value.update(1L);
        db.close();
        handler.handleRequest(value, StateRequestType.VALUE_GET, null);
        assertThat(handler.errors).singleElement().isInstanceOf(IllegalStateException.class);
        assertThat(handler.errors.get(0)).hasMessageContaining("closed");
    }

    @Test
    void batchesAfterShutdownAreFailedNotLost() {
        ForStValueState<String, VoidNamespace, Long> value =
                new ForStValueState<>(
                        handler, LongSerializer.INSTANCE, db.createColumnFamily("v"), voidKeys());
        executor.shutdown();
        handler.handleRequest(value, StateRequestType.VALUE_GET, null);
        assertThat(handler.errors).singleElement().isInstanceOf(IllegalStateException.class);
    }
}
