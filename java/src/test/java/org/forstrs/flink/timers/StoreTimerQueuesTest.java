package org.forstrs.flink.timers;

import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.util.CloseableIterator;

import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.sync.SyncDbAccess;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store-backed timer queue against a model (a set of timers, polled by smallest timestamp):
 * random adds with many duplicates, removes of cached, uncached and absent timers, polls and
 * peeks, with a cache of 3 timers per key group so caches run dry and refill all the time; then
 * the same queue opened again over the store, as after a restore.
 */
class StoreTimerQueuesTest {

    private static final int KEY_GROUPS = 8;
    private static final int CACHE = 3;

    private static final TimerSerializer<Integer, VoidNamespace> SERIALIZER =
            new TimerSerializer<>(IntSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE);

    @TempDir Path dir;
    private NativeDb db;
    private SyncDbAccess access;

    /** A model timer: (key, timestamp). */
    private record Timer(int key, long timestamp) {}

    @BeforeEach
    void open() {
        db = NativeDb.open(dir.toUri().toString(), new String[0]);
        access = new SyncDbAccess(db);
    }

    @AfterEach
    void close() {
        db.close();
    }

    private StoreTimerQueues queues() {
        return new StoreTimerQueues(
                access,
                db::createColumnFamily,
                KeyGroupRange.of(0, KEY_GROUPS - 1),
                KEY_GROUPS,
                CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(KEY_GROUPS),
                CACHE);
    }

    private static KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Integer, VoidNamespace>>
            queue(StoreTimerQueues queues) {
        return queues.create("timers", SERIALIZER);
    }

    private static TimerHeapInternalTimer<Integer, VoidNamespace> timer(Timer t) {
        return new TimerHeapInternalTimer<>(t.timestamp(), t.key(), VoidNamespace.INSTANCE);
    }

    private static Timer model(TimerHeapInternalTimer<Integer, VoidNamespace> t) {
        return new Timer(t.getKey(), t.getTimestamp());
    }

    @Test
    void behavesLikeASetPolledBySmallestTimestamp() {
        Random random = new Random(20261130L);
        StoreTimerQueues queues = queues();
        var queue = queue(queues);
        Set<Timer> model = new HashSet<>();
        for (int step = 0; step < 30_000; step++) {
            // phases that grow the queue and phases that drain it (caches run dry)
            boolean growing = (step / 2_000) % 2 == 0;
            int op = random.nextInt(10);
            if (op < (growing ? 5 : 1)) {
                Timer t = new Timer(random.nextInt(40), random.nextInt(300));
                queue.add(timer(t));
                model.add(t);
            } else if (op < (growing ? 7 : 4)) {
                // a stored timer (often uncached) or one that is not there
                Timer t =
                        !model.isEmpty() && random.nextBoolean()
                                ? new ArrayList<>(model).get(random.nextInt(model.size()))
                                : new Timer(random.nextInt(40), random.nextInt(300));
                queue.remove(timer(t));
                model.remove(t);
            } else if (op < 9) {
                var polled = queue.poll();
                assertSmallest(model, polled);
                if (polled != null) {
                    model.remove(model(polled));
                }
            } else {
                assertSmallest(model, queue.peek());
                assertThat(queue.isEmpty()).isEqualTo(model.isEmpty());
            }
            if (step % 1000 == 0) {
                assertThat(queue.size()).isEqualTo(model.size());
                assertThat(contents(queue)).isEqualTo(model);
            }
            assertThat(queues.counters().maxCachedPerKeyGroup()).isLessThanOrEqualTo(CACHE);
            assertThat(queues.counters().cachedElements())
                    .isLessThanOrEqualTo((long) CACHE * KEY_GROUPS);
        }
        assertThat(queues.counters().refills()).isGreaterThan(KEY_GROUPS);
        assertThat(queues.storedElements()).isEqualTo(model.size());

        // Opened again over the same store (as after a restore): caches load lazily.
        StoreTimerQueues reopened = queues();
        var again = queue(reopened);
        assertThat(contents(again)).isEqualTo(model);
        while (!model.isEmpty()) {
            var polled = again.poll();
            assertSmallest(model, polled);
            model.remove(model(polled));
        }
        assertThat(again.poll()).isNull();
        assertThat(reopened.storedElements()).isZero();
        assertThat(reopened.counters().cachedElements()).isZero();
    }

    @Test
    void headsAndDuplicatesAcrossTheCacheBoundary() {
        StoreTimerQueues queues = queues();
        var queue = queue(queues);
        // one key, so one key group: timestamps 10..1 in reverse push each head out of the cache
        for (long ts = 10; ts >= 1; ts--) {
            assertThat(queue.add(timer(new Timer(7, ts)))).isTrue();
        }
        // duplicates of cached timers change nothing
        assertThat(queue.add(timer(new Timer(7, 1)))).isFalse();
        assertThat(queue.add(timer(new Timer(7, 3)))).isFalse();
        assertThat(queue.size()).isEqualTo(10);
        assertThat(queues.counters().cachedElements()).isEqualTo(CACHE);
        assertThat(queues.storedElements()).isEqualTo(10);
        // removing an uncached timer and the cached head
        assertThat(queue.remove(timer(new Timer(7, 9)))).isFalse();
        assertThat(queue.remove(timer(new Timer(7, 1)))).isTrue();
        List<Long> polled = new ArrayList<>();
        for (var t = queue.poll(); t != null; t = queue.poll()) {
            polled.add(t.getTimestamp());
        }
        assertThat(polled).containsExactly(2L, 3L, 4L, 5L, 6L, 7L, 8L, 10L);
        assertThat(queues.storedElements()).isZero();
        // a duplicate of an uncached timer is stored once
        for (long ts = 1; ts <= 5; ts++) {
            queue.add(timer(new Timer(7, ts)));
        }
        queue.add(timer(new Timer(7, 5)));
        assertThat(queue.size()).isEqualTo(5);
        assertThat(queues.storedElements()).isEqualTo(5);
    }

    private static void assertSmallest(
            Set<Timer> model, TimerHeapInternalTimer<Integer, VoidNamespace> actual) {
        if (model.isEmpty()) {
            assertThat(actual).isNull();
            return;
        }
        long smallest = model.stream().mapToLong(Timer::timestamp).min().orElseThrow();
        assertThat(actual).isNotNull();
        assertThat(actual.getTimestamp()).isEqualTo(smallest);
        assertThat(model).contains(model(actual));
    }

    private static Set<Timer> contents(
            KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Integer, VoidNamespace>> queue) {
        Set<Timer> contents = new HashSet<>();
        CloseableIterator<TimerHeapInternalTimer<Integer, VoidNamespace>> it = queue.iterator();
        it.forEachRemaining(t -> contents.add(model(t)));
        try {
            it.close();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        return contents;
    }
}
