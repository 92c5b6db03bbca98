package org.forstrs.flink.async;

import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.asyncprocessing.InternalAsyncFuture;
import org.apache.flink.runtime.asyncprocessing.AbstractStateIterator;
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

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.annotation.Nonnull;
import javax.annotation.Nullable;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The requests of one key take effect in issue order, whatever the batching and the executor's
 * thread count: random request sequences over a few keys, on value, list and map state, cut into
 * batches at random points and handed to an executor with four threads without waiting (so
 * batches sharing a key run concurrently unless the executor orders them). Every read, and the
 * final state, must equal running the requests one by one. The seed is printed on failure; replay
 * one with {@code -Dforst.order.seed=<seed>}.
 */
class ExecutorOrderStressTest {

    private static final int MAX_PARALLELISM = 128;
    private static final int PREFIX_BYTES =
            CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(MAX_PARALLELISM);
    private static final int SEEDS = 40;
    private static final int REQUESTS_PER_SEED = 3_000;
    private static final String[] KEYS = {"a", "b", "c", "d", "e"};

    @TempDir Path dir;

    /** Collects requests into the current batch; the test hands batches over. */
    static final class BatchingHandler implements StateRequestHandler {
        final Map<String, RecordContext<String>> contexts = new HashMap<>();
        final List<Throwable> errors = new CopyOnWriteArrayList<>();
        RecordContext<String> current;
        ForStStateExecutor.Batch batch = new ForStStateExecutor.Batch();

        void switchKey(String key) {
            current =
                    contexts.computeIfAbsent(
                            key,
                            k ->
                                    new RecordContext<>(
                                            k,
                                            k,
                                            c -> {},
                                            KeyGroupRangeAssignment.assignToKeyGroup(
                                                    k, MAX_PARALLELISM),
                                            new EpochManager.Epoch(0),
                                            0));
        }

        @Override
        public <IN, OUT> InternalAsyncFuture<OUT> handleRequest(
                @Nullable State state, StateRequestType type, @Nullable IN payload) {
            InternalAsyncFuture<OUT> future = DirectFutures.recordingFailures(errors);
            batch.offer(new StateRequest<>(state, type, false, payload, future, current));
            return future;
        }

        @Override
        public <IN, OUT> OUT handleRequestSync(
                State state, StateRequestType type, @Nullable IN payload) {
            throw new UnsupportedOperationException("the stress test issues async requests only");
        }

        @Override
        public <N> void setCurrentNamespaceForState(
                @Nonnull InternalPartitionedState<N> state, N namespace) {
            current.setNamespace(state, namespace);
        }
    }

    /** A read and what running the requests one by one answers at that point. */
    private record Expected(
            String what, InternalAsyncFuture<?> actual, Object expected, String history) {}

    /** The sequential meaning of the requests. */
    private static final class Model {
        final Map<String, Long> values = new HashMap<>();
        final Map<String, List<Long>> lists = new HashMap<>();
        final Map<String, TreeMap<Long, Long>> maps = new HashMap<>();

        TreeMap<Long, Long> map(String key) {
            return maps.computeIfAbsent(key, k -> new TreeMap<>());
        }
    }

    @Test
    void batchesSharingKeysRunInHandOverOrder() throws Exception {
        String replay = System.getProperty("forst.order.seed");
        Random seeds = new Random();
        for (int i = 0; i < (replay == null ? SEEDS : 1); i++) {
            long seed = replay == null ? seeds.nextLong() : Long.parseLong(replay);
            try {
                runSeed(seed, dir.resolve("seed-" + i));
            } catch (Throwable t) {
                throw new AssertionError(
                        "failed with seed " + seed + " (replay with -Dforst.order.seed=" + seed + ")",
                        t);
            }
        }
    }

    private void runSeed(long seed, Path path) throws Exception {
        Random rnd = new Random(seed);
        NativeDb db = NativeDb.open(path.toUri().toString(), new String[0]);
        ForStStateExecutor executor = new ForStStateExecutor(db, 4);
        try {
            BatchingHandler handler = new BatchingHandler();
            KeySerde<String, VoidNamespace> keys =
                    new KeySerde<>(
                            () ->
                                    new SerializedCompositeKeyBuilder<>(
                                            StringSerializer.INSTANCE, PREFIX_BYTES, 32),
                            VoidNamespaceSerializer.INSTANCE,
                            VoidNamespace.INSTANCE);
            ForStValueState<String, VoidNamespace, Long> value =
                    new ForStValueState<>(
                            handler, LongSerializer.INSTANCE, db.createColumnFamily("v"), keys);
            ForStListState<String, VoidNamespace, Long> list =
                    new ForStListState<>(
                            handler, LongSerializer.INSTANCE, db.createColumnFamily("l"), keys);
            ForStMapState<String, VoidNamespace, Long, Long> map =
                    new ForStMapState<>(
                            handler,
                            LongSerializer.INSTANCE,
                            LongSerializer.INSTANCE,
                            db.createColumnFamily("m"),
                            keys);

            Model model = new Model();
            Map<String, StringBuilder> history = new HashMap<>();
            List<Expected> reads = new ArrayList<>();
            List<CompletableFuture<Void>> batches = new ArrayList<>();
            for (long step = 0; step < REQUESTS_PER_SEED; step++) {
                String key = KEYS[rnd.nextInt(KEYS.length)];
                handler.switchKey(key);
                long userKey = rnd.nextInt(4);
                int op = rnd.nextInt(13);
                trail = history.computeIfAbsent(key, k -> new StringBuilder());
                trail.append(
                        String.format(
                                " [batch %d step %d op %d user key %d]",
                                batches.size(), step, op, userKey));
                switch (op) {
                    case 0:
                        value.asyncUpdate(step);
                        model.values.put(key, step);
                        break;
                    case 1:
                        value.asyncClear();
                        model.values.remove(key);
                        break;
                    case 2:
                        reads.add(read("value", value.asyncValue(), model.values.get(key)));
                        break;
                    case 3:
                        list.asyncAdd(step);
                        model.lists.computeIfAbsent(key, k -> new ArrayList<>()).add(step);
                        break;
                    case 4:
                        list.asyncUpdate(List.of(step, step + 1));
                        model.lists.put(key, new ArrayList<>(List.of(step, step + 1)));
                        break;
                    case 5:
                        list.asyncClear();
                        model.lists.remove(key);
                        break;
                    case 6:
                        reads.add(
                                read(
                                        "list",
                                        list.asyncGet(),
                                        List.copyOf(model.lists.getOrDefault(key, List.of()))));
                        break;
                    case 7:
                        map.asyncPut(userKey, step);
                        model.map(key).put(userKey, step);
                        break;
                    case 8:
                        map.asyncRemove(userKey);
                        model.map(key).remove(userKey);
                        break;
                    case 9:
                        map.asyncClear();
                        model.map(key).clear();
                        break;
                    case 10:
                        reads.add(read("map get", map.asyncGet(userKey), model.map(key).get(userKey)));
                        reads.add(
                                read(
                                        "map contains",
                                        map.asyncContains(userKey),
                                        model.map(key).containsKey(userKey)));
                        break;
                    case 11:
                        reads.add(read("map isEmpty", map.asyncIsEmpty(), model.map(key).isEmpty()));
                        break;
                    default:
                        reads.add(
                                read(
                                        "map entries",
                                        map.asyncEntries(),
                                        new TreeMap<>(model.map(key))));
                }
                if (rnd.nextInt(8) == 0) {
                    batches.add(handOver(handler, executor));
                }
            }
            batches.add(handOver(handler, executor));
            CompletableFuture.allOf(batches.toArray(new CompletableFuture<?>[0])).join();

            // the final state, read after every batch finished
            for (String key : KEYS) {
                handler.switchKey(key);
                trail = history.getOrDefault(key, new StringBuilder());
                reads.add(read("final value", value.asyncValue(), model.values.get(key)));
                reads.add(
                        read(
                                "final list",
                                list.asyncGet(),
                                List.copyOf(model.lists.getOrDefault(key, List.of()))));
                reads.add(
                        read(
                                "final map",
                                map.asyncEntries(),
                                new TreeMap<>(model.maps.getOrDefault(key, new TreeMap<>()))));
            }
            handOver(handler, executor).join();

            assertThat(handler.errors).isEmpty();
            for (int i = 0; i < reads.size(); i++) {
                Expected e = reads.get(i);
                assertThat(e.actual.isDone()).as("read %d (%s) completed", i, e.what).isTrue();
                assertThat(normalize(e.actual.get(), e.expected))
                        .as("read %d (%s) %s", i, e.what, e.history)
                        .isEqualTo(e.expected);
            }
        } finally {
            executor.shutdown();
            db.close();
        }
    }

    /** The requests issued so far for the current key, shown when one of its reads is wrong. */
    private StringBuilder trail = new StringBuilder();

    private Expected read(String what, Object future, Object expected) {
        return new Expected(what, (InternalAsyncFuture<?>) future, expected, trail.toString());
    }

    private static CompletableFuture<Void> handOver(
            BatchingHandler handler, ForStStateExecutor executor) {
        ForStStateExecutor.Batch batch = handler.batch;
        handler.batch = new ForStStateExecutor.Batch();
        return batch.isEmpty()
                ? CompletableFuture.completedFuture(null)
                : executor.executeBatchRequests(batch);
    }

    /** Iterator results as what the model holds: a list of elements, or a sorted map. */
    private static Object normalize(Object result, Object expected) {
        if (!(result instanceof AbstractStateIterator)) {
            return result;
        }
        AbstractStateIterator<?> iterator = (AbstractStateIterator<?>) result;
        assertThat(iterator.hasNextLoading()).as("one chunk holds these few elements").isFalse();
        List<Object> items = new ArrayList<>();
        iterator.getCurrentCache().forEach(items::add);
        if (!(expected instanceof TreeMap)) {
            return items;
        }
        TreeMap<Long, Long> entries = new TreeMap<>();
        for (Object item : items) {
            Map.Entry<?, ?> entry = (Map.Entry<?, ?>) item;
            entries.put((Long) entry.getKey(), (Long) entry.getValue());
        }
        return entries;
    }
}
