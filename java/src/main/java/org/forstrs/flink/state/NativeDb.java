package org.forstrs.flink.state;

import org.forstrs.jni.ForStNative;
import org.forstrs.jni.NativeLog;

import javax.annotation.Nullable;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.function.Supplier;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One open native database. Calls run under a read lock and {@link #close} takes the write lock,
 * so the handle is never closed while a batch still runs on it; calls after close throw {@link
 * IllegalStateException}.
 */
public final class NativeDb implements Closeable {

    private final String uri;
    private final String[] options;
    private final long handle;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private boolean closed;
    /** The statistics at close, once closed (null if the close failed). */
    private long[] finalStats;
    private volatile ReferencedFiles referencedFiles = ReferencedFiles.NONE;
    private final HandedOverFiles handedOverFiles = new HandedOverFiles(this);
    /** Released once the DB is closed (see {@link DbLease}). */
    @Nullable private volatile DbLease lease;

    private NativeDb(String uri, String[] options, long handle) {
        this.uri = uri;
        this.options = options == null ? new String[0] : options.clone();
        this.handle = handle;
    }

    public static NativeDb open(String uri, String[] options) {
        NativeLog.refreshLevel();
        return new NativeDb(uri, options, ForStNative.open(uri, options));
    }

    /** Builds a database at {@code uri} from checkpoints; see {@link ForStNative#openRestored}. */
    public static NativeDb openRestored(String uri, String[] options, RestoreSources sources) {
        NativeLog.refreshLevel();
        return new NativeDb(
                uri,
                options,
                ForStNative.openRestored(
                        uri,
                        options,
                        sources.manifests(),
                        sources.fileNames(),
                        sources.fileUris(),
                        sources.keyGroups(),
                        sources.targetStart(),
                        sources.targetEnd(),
                        sources.keyGroupPrefixBytes()));
    }

    public String uri() {
        return uri;
    }

    /** The checkpoint files the DB was restored from by reference (none if it was not). */
    public ReferencedFiles referencedFiles() {
        return referencedFiles;
    }

    /** Records the checkpoint files the DB was just restored from by reference. */
    public void setReferencedFiles(ReferencedFiles files) {
        this.referencedFiles = files;
    }

    /** The options the database was opened with (also valid after close: cleanup needs them). */
    public String[] options() {
        return options.clone();
    }

    public int createColumnFamily(String name) {
        lock.readLock().lock();
        try {
            checkOpen();
            return ForStNative.createColumnFamily(handle, name);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** See {@link ForStNative#setTtlCompactionFilter}. */
    void setTtlCompactionFilter(
            int cf,
            int layout,
            int layoutParameter,
            long ttlMillis,
            long queryTimeAfterNumEntries,
            Object timeProvider,
            Object listElementFilter) {
        lock.readLock().lock();
        try {
            checkOpen();
            ForStNative.setTtlCompactionFilter(
                    handle,
                    cf,
                    layout,
                    layoutParameter,
                    ttlMillis,
                    queryTimeAfterNumEntries,
                    timeProvider,
                    listElementFilter);
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Flushes, compacts every file into the last level and waits (for tests: settles deletes,
     * drops expired TTL entries).
     */
    public void compact() {
        lock.readLock().lock();
        try {
            checkOpen();
            ForStNative.flush(handle);
            ForStNative.compact(handle);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** See {@link ForStNative#executeBatch}. */
    public long executeBatch(ByteBuffer request, int requestLength, ByteBuffer response) {
        lock.readLock().lock();
        try {
            checkOpen();
            return ForStNative.executeBatch(handle, request, requestLength, response);
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Reads one value into {@code out[0, outLength)}; see {@link ForStNative#get} for the return
     * value.
     */
    public int get(int cf, ByteBuffer key, int keyLength, ByteBuffer out, int outLength) {
        lock.readLock().lock();
        try {
            checkOpen();
            return ForStNative.get(handle, cf, key, 0, keyLength, out, 0, outLength);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Sets the value of one key. */
    public void put(int cf, ByteBuffer key, int keyLength, ByteBuffer value, int valueLength) {
        lock.readLock().lock();
        try {
            checkOpen();
            ForStNative.put(handle, cf, key, 0, keyLength, value, 0, valueLength);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Appends to the list at one key (elements joined by ','). */
    public void merge(int cf, ByteBuffer key, int keyLength, ByteBuffer value, int valueLength) {
        lock.readLock().lock();
        try {
            checkOpen();
            ForStNative.merge(handle, cf, key, 0, keyLength, value, 0, valueLength);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Deletes one key. */
    public void delete(int cf, ByteBuffer key, int keyLength) {
        lock.readLock().lock();
        try {
            checkOpen();
            ForStNative.delete(handle, cf, key, 0, keyLength);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Writes the memtables to SST files now. */
    public void flush() {
        lock.readLock().lock();
        try {
            checkOpen();
            ForStNative.flush(handle);
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Fills {@code values} with the engine's statistics ({@link ForStNative#stats}); once the
     * database is closed, with those at close (when its background work had stopped).
     *
     * @return false, leaving {@code values} as they were, if the close failed
     */
    public boolean readStats(long[] values) {
        lock.readLock().lock();
        try {
            if (closed) {
                if (finalStats == null) {
                    return false;
                }
                System.arraycopy(finalStats, 0, values, 0, finalStats.length);
                return true;
            }
            ForStNative.stats(handle, values);
            return true;
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Whether this database, while open, still reads the file {@code name} (relative to its
     * directory); false once it is closed.
     */
    public boolean holdsFile(String name) {
        lock.readLock().lock();
        try {
            return !closed && ForStNative.holdsFile(handle, name);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** The files this DB handed over to checkpoints, and who owns them (outlives the DB). */
    public HandedOverFiles handedOverFiles() {
        return handedOverFiles;
    }

    /**
     * Owns again files handed over to checkpoints that all came to nothing; see {@link
     * ForStNative#takeBackFiles}.
     *
     * @throws IllegalStateException if the DB is closed
     */
    void takeBack(String[] names) {
        whileOpen(
                () -> {
                    ForStNative.takeBackFiles(handle, names);
                    return null;
                });
    }

    /**
     * Reads the files {@code copies} maps by name, restored by reference, from the copies at the
     * mapped URIs from now on; see {@link ForStNative#relocateFiles}.
     *
     * @return how many files moved
     * @throws IllegalStateException if the DB is closed
     */
    public int relocate(Map<String, String> copies) {
        String[] names = copies.keySet().toArray(new String[0]);
        String[] uris = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            uris[i] = copies.get(names[i]);
        }
        return whileOpen(() -> ForStNative.relocateFiles(handle, names, uris));
    }

    /**
     * Synchronous phase of a checkpoint: freezes the memtable and pins the current files (no I/O).
     */
    public NativeCheckpoint prepareCheckpoint() {
        lock.readLock().lock();
        try {
            checkOpen();
            return new NativeCheckpoint(this, ForStNative.checkpointPrepare(handle));
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Runs a call on a checkpoint of this DB while the DB is guaranteed open (close waits for it).
     */
    <T> T whileOpen(Supplier<T> call) {
        lock.readLock().lock();
        try {
            checkOpen();
            return call.get();
        } finally {
            lock.readLock().unlock();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("ForSt-RS database " + uri + " is closed");
        }
    }

    public boolean isClosed() {
        lock.readLock().lock();
        try {
            return closed;
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Holds {@code lease} until this DB is closed. */
    public void holdLease(@Nullable DbLease lease) {
        this.lease = lease;
    }

    @Override
    public void close() {
        lock.writeLock().lock();
        try {
            if (!closed) {
                closed = true;
                long[] stats = new long[ForStNative.statNames().length];
                ForStNative.closeWithStats(handle, stats);
                finalStats = stats;
            }
        } finally {
            lock.writeLock().unlock();
            DbLease held = lease;
            lease = null;
            if (held != null) {
                held.close();
            }
        }
    }
}
