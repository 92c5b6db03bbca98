package org.forstrs.flink.timers;

import org.forstrs.flink.state.BatchEncoder;
import org.forstrs.flink.sync.SyncDbAccess;

/**
 * The timer writes of a backend's store queues not applied yet: puts of added timers and deletes
 * of removed ones, in issue order, applied as one native write batch when {@link #MAX_PENDING}
 * have gathered and before anything reads the timer column families or snapshots the store
 * ({@link #flush()}). A timer's add and remove cost one native call per batch instead of one
 * each, as Flink's RocksDB timer queues batch theirs.
 *
 * <p>Used from the task thread only.
 */
final class PendingTimerWrites {

    /** Writes per native call: large enough to amortize the call, small enough to stay cheap. */
    static final int MAX_PENDING = 512;

    private static final byte[] NO_VALUE = new byte[0];

    private final SyncDbAccess access;
    private final BatchEncoder batch = new BatchEncoder(16 * 1024);

    PendingTimerWrites(SyncDbAccess access) {
        this.access = access;
        batch.begin();
    }

    void put(int cf, byte[] key) {
        batch.op(BatchEncoder.PUT, cf, key, NO_VALUE);
        flushIfFull();
    }

    void delete(int cf, byte[] key) {
        batch.op(BatchEncoder.DELETE, cf, key);
        flushIfFull();
    }

    /** Applies the pending writes, atomically and in issue order. */
    void flush() {
        if (batch.count() == 0) {
            return;
        }
        access.write(batch);
        batch.begin();
    }

    private void flushIfFull() {
        if (batch.count() >= MAX_PENDING) {
            flush();
        }
    }
}
