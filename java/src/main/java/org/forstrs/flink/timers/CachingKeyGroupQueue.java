package org.forstrs.flink.timers;

import org.apache.flink.runtime.state.InternalPriorityQueue;
import org.apache.flink.runtime.state.heap.AbstractHeapPriorityQueueElement;
import org.apache.flink.util.CloseableIterator;

import org.forstrs.flink.sync.PrefixScan;
import org.forstrs.flink.sync.SyncDbAccess;

import javax.annotation.Nonnull;
import javax.annotation.Nullable;

import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.TreeSet;

/**
 * The timers of one key group, in the store: every element is a key (key-group prefix + the
 * element serialized with the queue's byte-ordered serializer) with an empty value, so the
 * store's key order is the queue's order. In memory only the smallest elements are kept (at most
 * the cache size, as raw keys); when the cache runs dry it is loaded again with one prefix scan
 * of the key group, starting after the last element taken out.
 *
 * <p>Invariant: the cache holds the smallest elements of the store; {@code allInCache} says it
 * holds all of them. Set semantics: an element is stored once however often it is added.
 */
final class CachingKeyGroupQueue<T> extends AbstractHeapPriorityQueueElement
        implements InternalPriorityQueue<T> {

    private final StoreQueueContext<T> context;
    private final int keyGroup;
    private final byte[] prefix;
    private final TreeSet<byte[]> cache = new TreeSet<>(Arrays::compareUnsigned);

    /** Whether the cache holds every element of the key group. */
    private boolean allInCache;

    /** The element of the cache's first key, deserialized once for repeated peeks. */
    @Nullable private T head;

    /** The last element taken out when the cache ran dry: the next load starts after it. */
    @Nullable private byte[] resumeAfter;

    CachingKeyGroupQueue(StoreQueueContext<T> context, int keyGroup) {
        this.context = context;
        this.keyGroup = keyGroup;
        this.prefix = context.keyGroupPrefix(keyGroup);
    }

    @Nullable
    @Override
    public T peek() {
        refillIfDry();
        if (cache.isEmpty()) {
            return null;
        }
        if (head == null) {
            head = context.element(cache.first());
        }
        return head;
    }

    @Nullable
    @Override
    public T poll() {
        refillIfDry();
        byte[] first = cache.pollFirst();
        if (first == null) {
            return null;
        }
        context.counters().cached(-1);
        context.delete(first);
        if (cache.isEmpty()) {
            resumeAfter = first;
        }
        T element = head != null ? head : context.element(first);
        head = null;
        return element;
    }

    /** Adds the element; true if it became the head of this key group. */
    @Override
    public boolean add(@Nonnull T element) {
        refillIfDry();
        byte[] key = context.key(keyGroup, element);
        boolean cacheFull = cache.size() >= context.cacheSize();
        boolean belongsInCache =
                cache.isEmpty()
                        ? allInCache
                        : (!cacheFull && allInCache)
                                || Arrays.compareUnsigned(key, cache.last()) <= 0;
        if (!belongsInCache) {
            // Larger than every cached element (an equal one is there already): only the
            // store holds it.
            context.put(key);
            allInCache = false;
            return false;
        }
        if (!cache.add(key)) {
            return false; // already there
        }
        context.put(key);
        context.counters().cached(1);
        if (cache.size() > context.cacheSize()) {
            // the largest cached element now lives in the store only
            cache.pollLast();
            context.counters().cached(-1);
            allInCache = false;
        }
        context.counters().keyGroupCacheSize(cache.size());
        if (cache.first() == key) {
            head = element;
            return true;
        }
        return false;
    }

    /** Removes the element; true if the head of this key group changed. */
    @Override
    public boolean remove(@Nonnull T element) {
        refillIfDry();
        if (cache.isEmpty()) {
            return false; // the key group is empty
        }
        byte[] key = context.key(keyGroup, element);
        context.delete(key);
        byte[] oldFirst = cache.first();
        if (!cache.remove(key)) {
            return false;
        }
        context.counters().cached(-1);
        if (cache.isEmpty()) {
            resumeAfter = key;
        }
        if (Arrays.equals(oldFirst, key)) {
            head = null;
            return true;
        }
        return false;
    }

    @Override
    public boolean isEmpty() {
        return peek() == null;
    }

    /** The number of elements; counts the store's keys unless all are cached. */
    @Override
    public int size() {
        refillIfDry();
        if (allInCache) {
            return cache.size();
        }
        int size = 0;
        PrefixScan scan = new PrefixScan(context.flushedAccess(), context.cf(), prefix);
        while (scan.hasNext()) {
            scan.next();
            size++;
        }
        return size;
    }

    @Override
    public void addAll(@Nullable Collection<? extends T> elements) {
        if (elements != null) {
            for (T element : elements) {
                add(element);
            }
        }
    }

    /** Every element, in order, read from the store (which holds all of them). */
    @Nonnull
    @Override
    public CloseableIterator<T> iterator() {
        PrefixScan scan = new PrefixScan(context.flushedAccess(), context.cf(), prefix);
        Iterator<T> elements =
                new Iterator<>() {
                    @Override
                    public boolean hasNext() {
                        context.flushedAccess(); // the next chunk sees timers added meanwhile
                        return scan.hasNext();
                    }

                    @Override
                    public T next() {
                        return context.element(scan.next().key());
                    }
                };
        return CloseableIterator.adapterForIterator(elements);
    }

    /** Elements cached now (for the counters' tests). */
    int cachedElements() {
        return cache.size();
    }

    private void refillIfDry() {
        if (allInCache || !cache.isEmpty()) {
            return;
        }
        SyncDbAccess.Chunk chunk =
                context.flushedAccess()
                        .scan(context.cf(), prefix, resumeAfter, context.cacheSize());
        cache.addAll(chunk.keys());
        allInCache = !chunk.hasMore();
        head = null;
        context.counters().cached(cache.size());
        context.counters().keyGroupCacheSize(cache.size());
        context.counters().refilled();
    }
}
