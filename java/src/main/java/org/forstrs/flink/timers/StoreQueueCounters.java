package org.forstrs.flink.timers;

/**
 * What the store-backed timer queues of one backend hold in memory: elements cached now (over all
 * key groups), the most ever cached by one key group, and refills from the store.
 */
public final class StoreQueueCounters {

    private long cached;
    private int maxCachedPerKeyGroup;
    private long refills;

    void cached(int delta) {
        cached += delta;
    }

    void keyGroupCacheSize(int size) {
        if (size > maxCachedPerKeyGroup) {
            maxCachedPerKeyGroup = size;
        }
    }

    void refilled() {
        refills++;
    }

    /** Elements held in the key groups' caches now. */
    public long cachedElements() {
        return cached;
    }

    /** The largest number of elements one key group's cache held so far. */
    public int maxCachedPerKeyGroup() {
        return maxCachedPerKeyGroup;
    }

    /** How often a key group's cache was loaded from the store. */
    public long refills() {
        return refills;
    }
}
