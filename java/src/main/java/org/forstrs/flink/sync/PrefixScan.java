package org.forstrs.flink.sync;

import org.forstrs.flink.snapshot.StateEntry;

import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The entries of a column family whose keys start with a prefix, in key order, read lazily in
 * chunks. Each chunk resumes after the last key seen, so writes between chunks (the caller
 * removing or rewriting entries it has seen) neither skip nor repeat entries.
 */
public final class PrefixScan implements Iterator<PrefixScan.Entry> {

    /** Entries per native call. */
    static final int CHUNK = 512;

    /** One stored entry: the full key and the raw value. */
    public record Entry(byte[] key, byte[] value) implements StateEntry {}

    private final SyncDbAccess access;
    private final int cf;
    private final byte[] prefix;
    private SyncDbAccess.Chunk chunk;
    private int next;
    private byte[] lastKey;

    public PrefixScan(SyncDbAccess access, int cf, byte[] prefix) {
        this.access = access;
        this.cf = cf;
        this.prefix = prefix;
    }

    @Override
    public boolean hasNext() {
        if (chunk != null && next < chunk.keys().size()) {
            return true;
        }
        if (chunk != null && (!chunk.hasMore() || chunk.keys().isEmpty())) {
            return false;
        }
        chunk = access.scan(cf, prefix, lastKey, CHUNK);
        next = 0;
        return !chunk.keys().isEmpty();
    }

    @Override
    public Entry next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        lastKey = chunk.keys().get(next);
        return new Entry(lastKey, chunk.values().get(next++));
    }
}
