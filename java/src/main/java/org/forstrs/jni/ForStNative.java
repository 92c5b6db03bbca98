package org.forstrs.jni;

import java.nio.ByteBuffer;

/**
 * The native methods of ForSt-RS: every call from Java into the Rust engine goes through this
 * class.
 *
 * <p>Databases are opaque {@code long} handles from {@link #open}; using a handle after {@link
 * #close}, or a made-up one, throws {@link IllegalStateException}. Column families are {@code
 * int} ids from {@link #createColumnFamily}; an unknown id throws {@link
 * IllegalArgumentException}.
 *
 * <p>Keys, values and batches travel in <b>direct</b> {@link ByteBuffer}s, addressed by absolute
 * offset and length (the buffers' position and limit are ignored and left unchanged). A null or
 * heap buffer, a negative offset or length, or a range past the buffer's capacity throws {@link
 * IllegalArgumentException}. While a call runs, the caller must not touch its buffers from another
 * thread.
 *
 * <p>Errors: storage failures throw {@link java.io.IOException} (declared by no method: it is
 * thrown from native code, callers catch {@link Exception} where they must tell it apart), of a
 * subtype where the kind is known: {@link java.io.FileNotFoundException} (missing file), {@link
 * java.nio.file.FileAlreadyExistsException} (e.g. another writer of the same directory), {@link
 * java.nio.file.AccessDeniedException}, {@link ForStCorruptionException} (damaged file). Bad input
 * throws {@link IllegalArgumentException}, closed handles {@link IllegalStateException}, and a
 * bug in native code (a Rust panic) {@link RuntimeException}. A database whose background flush or
 * compaction failed for good (a permanent error, or a transient one that outlasted its retries)
 * refuses every later call with an {@link IllegalStateException} whose cause is the exception of
 * that error. Each message carries the native error text with its causes. None of them takes the
 * JVM down.
 */
public final class ForStNative {

    /** Returned by {@link #get} for a key without a value. */
    public static final int NOT_FOUND = -1;

    static {
        NativeLibraryLoader.ensureLoaded();
    }

    private ForStNative() {}

    /** Loads the native library if this class loader has not yet (also done on first use). */
    public static void load() {
        NativeLibraryLoader.ensureLoaded();
    }

    /** The engine's version and the git revision it was built from. */
    public static native String buildInfo();

    /**
     * Opens (or creates) a database.
     *
     * @param url storage location: {@code file:///abs/dir}, an absolute path, {@code
     *     memory://name}, {@code s3://bucket/prefix}, or any URI a Flink file system serves
     *     ({@code hdfs://...}), reached through Flink's {@code FileSystem}
     * @param options key/value pairs ({@code {"memtable-bytes", "67108864", ...}}), or null for the
     *     defaults; an unknown key or bad value throws {@link IllegalArgumentException} naming the
     *     key. Storage keys: {@code fs.force-proxy} ("true": every URI through Flink's {@code
     *     FileSystem}), {@code s3.*}, {@code local.*}
     * @return the database handle (never 0)
     */
    public static native long open(String url, String[] options);

    /**
     * The engine's options, the one definition Java reads them from: for each option six strings,
     * name, type ({@code bytes}, {@code count}, {@code bool}, {@code choice}), default, minimum
     * (empty: none), the allowed words joined by {@code ','} (empty unless a choice), doc.
     */
    public static native String[] engineOptions();

    /**
     * Parses and validates {@code options} as {@link #open} does, without opening anything.
     *
     * @throws IllegalArgumentException naming the option that is unknown or wrong
     */
    public static native void checkOptions(String[] options);

    /** Name/value pairs of every engine option of an open database, as the engine runs with them. */
    public static native String[] optionsInEffect(long db);

    /**
     * The names of the engine's statistics, the one definition Java reads them from, in the order
     * {@link #stats} fills its array.
     */
    public static native String[] statNames();

    /**
     * Fills {@code values} (exactly {@code statNames().length} long) with the database's
     * statistics, in the order of {@link #statNames}.
     */
    public static native void stats(long db, long[] values);

    /** Closes the database; unflushed writes are dropped (no WAL). The handle becomes invalid. */
    public static native void close(long db);

    /**
     * Closes the database as {@link #close} does, then fills {@code finalStats} (as {@link #stats}
     * would) with its statistics once its background work stopped.
     */
    public static native void closeWithStats(long db, long[] finalStats);

    /**
     * Creates the column family {@code name}, or finds the existing one.
     *
     * @return its id, used by every other call and by the batch wire format
     */
    public static native int createColumnFamily(long db, String name);

    /**
     * Reads the value of a key into {@code out[outOffset, outOffset + outLength)}.
     *
     * @param outLength room for the value; at least 1
     * @return the value's length, {@link #NOT_FOUND}, or {@code -(value length)} (at most -2) if
     *     the value does not fit; then nothing is written and the caller retries with more room
     */
    public static native int get(
            long db,
            int cf,
            ByteBuffer key,
            int keyOffset,
            int keyLength,
            ByteBuffer out,
            int outOffset,
            int outLength);

    /** Sets the value of a key. */
    public static native void put(
            long db,
            int cf,
            ByteBuffer key,
            int keyOffset,
            int keyLength,
            ByteBuffer value,
            int valueOffset,
            int valueLength);

    /** Appends to the list at a key (Flink's list state layout: elements joined by ','). */
    public static native void merge(
            long db,
            int cf,
            ByteBuffer key,
            int keyOffset,
            int keyLength,
            ByteBuffer value,
            int valueOffset,
            int valueLength);

    /** Deletes a key. */
    public static native void delete(long db, int cf, ByteBuffer key, int keyOffset, int keyLength);

    /** Writes every memtable to storage. */
    public static native void flush(long db);

    /**
     * Runs one batch of state requests (docs/BATCH_WIRE_FORMAT.md): reads see the state before
     * the batch, writes are applied atomically after the reads.
     *
     * @param request direct buffer holding the encoded batch in {@code [0, requestLength)}
     * @param response direct buffer receiving the encoded responses from offset 0; must not overlap
     *     {@code request}
     * @return bytes written to {@code response}, or {@code -(bytes needed)} if it is too small, in
     *     which case nothing was applied and the caller retries with a buffer at least that large
     */
    public static native long executeBatch(
            long db, ByteBuffer request, int requestLength, ByteBuffer response);

    // ---- Checkpoints (FLIP-428) ----

    /**
     * Checkpoint, synchronous phase: freezes the memtable and pins the files of the current
     * version. Does no I/O; its duration does not depend on state or memtable size.
     *
     * @return a checkpoint handle, to be released with {@link #checkpointRelease}
     */
    public static native long checkpointPrepare(long db);

    /**
     * Checkpoint, asynchronous phase: waits until the data frozen by {@link #checkpointPrepare}
     * is flushed, then returns the checkpoint's manifest (column families, files, sequence
     * numbers). The bytes are opaque to Java; {@link #openRestored} takes them back. After this,
     * {@link #checkpointFileNames} and {@link #checkpointFileSizes} describe the files.
     */
    public static native byte[] checkpointManifest(long checkpoint);

    /** Names (relative to the DB directory) of the checkpoint's SST files. */
    public static native String[] checkpointFileNames(long checkpoint);

    /**
     * Per file of {@link #checkpointFileNames}, its URI when it lives outside the DB directory (a
     * checkpoint's file the DB was restored from by reference, which an earlier checkpoint owns
     * and which cannot be handed over), else null.
     */
    public static native String[] checkpointFileLocations(long checkpoint);

    /** Sizes of the files of {@link #checkpointFileNames}, in the same order. */
    public static native long[] checkpointFileSizes(long checkpoint);

    /**
     * Copies checkpoint files {@code names[i]} to {@code destDir/destNames[i]}, concurrently,
     * inside the storage when it can (hard link on a local file system, server-side copy on an
     * object store) and by streaming through this process otherwise.
     *
     * @param destDir a directory URL as {@link #open} takes, or Flink's {@code file:/abs} form
     * @return the number of bytes that passed through this process (0 when every copy stayed
     *     inside the storage)
     */
    public static native long checkpointCopyFiles(
            long checkpoint, String[] names, String destDir, String[] destNames);

    /**
     * Hands checkpoint files {@code names} over to the checkpoint where they are, in the DB
     * directory under the same names: no byte moves. The DB never deletes them again (whoever
     * holds the checkpoint does: Flink's SharedStateRegistry); a new DB manifest records it, with
     * {@code checkpointId} as the first checkpoint that handed each file over, before this returns.
     */
    public static native void checkpointHandOver(
            long checkpoint, String[] names, long checkpointId);

    /**
     * Reads part of a checkpoint file, for checkpoint storages that take streams instead of files
     * (the JobManager's): Java streams the file into Flink's checkpoint stream chunk by chunk.
     *
     * @param name a name {@link #checkpointFileNames} returned
     * @param position where to start reading in the file (not negative)
     * @param out a direct buffer; the bytes go to {@code out[outOffset, outOffset + length)}
     * @return the bytes read: {@code length}, fewer only at the end of the file, 0 at or past it
     */
    public static native int checkpointReadFile(
            long checkpoint, String name, long position, ByteBuffer out, int outOffset, int length);

    /** Lets compaction delete the pinned files again. Releasing twice is a no-op. */
    public static native void checkpointRelease(long checkpoint);

    /**
     * Builds a new database at {@code url} from one or more checkpoints and opens it. Files are
     * referenced where they are (the DB never deletes them; files staged under {@code url} are
     * linked in and owned), never copied or rewritten: each source keeps only the keys of the new
     * key-group range (the clip is a per-file key bound, no data moves).
     *
     * @param url the new database's directory; it must not hold a database yet
     * @param options as for {@link #open}
     * @param manifests per source, the bytes {@link #checkpointManifest} returned
     * @param fileNames per source, the names {@link #checkpointFileNames} returned
     * @param fileUris per source, where each of those files is now (same order)
     * @param sourceKeyGroups per source, its first and last key group: {@code {s0, e0, s1, e1,
     *     ...}}
     * @param keyGroupStart first key group of the new database
     * @param keyGroupEnd last key group of the new database (inclusive)
     * @param keyGroupPrefixBytes bytes of key-group prefix at the start of every key (1 or 2)
     * @return the database handle, as from {@link #open}
     */
    public static native long openRestored(
            String url,
            String[] options,
            byte[][] manifests,
            String[][] fileNames,
            String[][] fileUris,
            int[] sourceKeyGroups,
            int keyGroupStart,
            int keyGroupEnd,
            int keyGroupPrefixBytes);

    /**
     * Opens one checkpointed database read-only, its files where they are (for the tools that
     * look inside checkpoints): nothing is created, locked, copied or written, no disk cache is
     * used. Close with {@link #closeCheckpointReader}.
     *
     * @param options storage keys only ({@code s3.*}, {@code fs.force-proxy}), or null
     * @param manifest the checkpoint's manifest, as {@link #checkpointManifest} returned it
     * @param fileNames the names the manifest gives the checkpoint's SSTs
     * @param fileUris where each of those files is (same order)
     * @param keyGroupStart first key group of the checkpointed database
     * @param keyGroupEnd its last key group (inclusive)
     * @param keyGroupPrefixBytes bytes of key-group prefix at the start of every key (1 or 2)
     * @return a reader handle
     */
    public static native long openCheckpointReader(
            String[] options,
            byte[] manifest,
            String[] fileNames,
            String[] fileUris,
            int keyGroupStart,
            int keyGroupEnd,
            int keyGroupPrefixBytes);

    /** The names of the reader's column families (one per state). */
    public static native String[] checkpointReaderFamilies(long reader);

    /**
     * Six strings per file of the reader's tree: level, name, location URI, bytes, entries, and
     * the state (column family) whose keys it holds.
     */
    public static native String[] checkpointReaderFiles(long reader);

    /**
     * Up to {@code max} entries of {@code state} from key {@code from} (inclusive; null: the
     * first) to {@code to} (exclusive; null: the last), as {@code key, value, key, value...}
     * (keys as the backend wrote them: key-group prefix, key, namespace, user key). Fewer than
     * {@code max} entries: the range is done.
     */
    public static native byte[][] checkpointReaderScan(
            long reader, String state, byte[] from, byte[] to, int max);

    /** How many entries {@code state} holds (one per key, a map state's one per user key). */
    public static native long checkpointReaderCount(long reader, String state);

    /**
     * Reads every file and block of the reader's tree, checking sizes and checksums; one message
     * per bad file (naming it), none if all is sound.
     */
    public static native String[] checkpointReaderVerify(long reader);

    /** Closes a reader from {@link #openCheckpointReader}. */
    public static native void closeCheckpointReader(long reader);

    /**
     * Starts writing the file {@code name} under {@code dirUri} (restore puts checkpointed bytes
     * that are not files, e.g. the JobManager's, next to the new database this way). Nothing is
     * visible under {@code name} before {@link #fileFinish}.
     *
     * @param dirUri a directory URL as {@link #open} takes
     * @param options as for {@link #open} (only the storage keys matter)
     * @param name a path relative to {@code dirUri}; no {@code ..} segments
     * @return a file-writer handle for {@link #fileWrite}, {@link #fileFinish}, {@link #fileAbort}
     */
    public static native long fileCreate(String dirUri, String[] options, String name);

    /** Appends {@code data[offset, offset + length)} (a direct buffer) to the file. */
    public static native void fileWrite(long file, ByteBuffer data, int offset, int length);

    /**
     * Publishes the file (atomically) and closes the handle, also when publishing fails.
     *
     * @return the file's size in bytes
     */
    public static native long fileFinish(long file);

    /** Drops the file being written and closes the handle; a closed handle is a no-op. */
    public static native void fileAbort(long file);

    /** Deletes the file {@code name} under {@code dirUri}; a missing file is no error. */
    public static native void fileDelete(String dirUri, String[] options, String name);

    /**
     * Deletes the files of the closed (or dead) DB at {@code dirUri} that the DB owns, its {@code
     * LOCK} included, through the native side (any scheme the engine reaches). Files it handed
     * over to checkpoints stay; their checkpoints' owner (Flink's SharedStateRegistry) deletes
     * them. A directory without a manifest keeps its SSTs (nothing says they are the DB's).
     *
     * @param options as for {@link #open} (only the storage keys matter)
     * @param reopened a DB opens at {@code dirUri} next: the kept files stay under an empty DB
     *     that protects them from its orphan collection; otherwise nothing of the DB stays
     * @param restoredFrom for a DB that died in this run (same execution graph): the checkpoint
     *     the run restored from (0: none), so that files only checkpoints after it handed over
     *     (all aborted at the failover) go too; -1 otherwise
     * @param referenced with {@code restoredFrom}: the DB's files (names in its directory) the
     *     restored checkpoint references, which stay; may be null
     * @return how many files were kept (0: nothing is left but, maybe, empty directories)
     */
    public static native int deleteDatabase(
            String dirUri,
            String[] options,
            boolean reopened,
            long restoredFrom,
            String[] referenced);

    /**
     * The names directly under the directory {@code dirUri} (files, and directories holding
     * files) through the native store, if the native side serves its scheme ({@code s3}, {@code
     * memory}, {@code file}, unless {@code fs.force-proxy}).
     *
     * @param options as for {@link #open} (only the storage keys matter)
     * @return null if Flink's FileSystem serves the scheme
     */
    public static native String[] listChildren(String dirUri, String[] options);

    /**
     * Deletes the directory {@code dirUri} with everything under it through the native store, if
     * the native side serves its scheme ({@code s3}, {@code memory}, {@code file}, unless {@code
     * fs.force-proxy}): one listing and bulk deletes on S3.
     *
     * @param options as for {@link #open} (only the storage keys matter)
     * @return false if Flink's FileSystem serves the scheme; nothing was deleted then
     */
    public static native boolean deleteDirectory(String dirUri, String[] options);

    /**
     * Whether the database's current version lists the file {@code name} (relative to its
     * directory): a file handed over to a checkpoint that the database still reads.
     */
    public static native boolean holdsFile(long db, String name);

    /**
     * The database owns again the files {@code names} it handed over to checkpoints that all came
     * to nothing (discarded before Flink's JobManager heard of them): it deletes them once it no
     * longer reads them. Names it never handed over are ignored.
     */
    public static native void takeBackFiles(long db, String[] names);

    /**
     * The database reads its files {@code names}, restored by reference from a snapshot, from
     * copies of the same bytes at {@code uris} from now on (each checked to have the file's size),
     * and records that in its manifest. Names it does not hold, or holds in its own directory, are
     * skipped.
     *
     * @return how many files moved
     */
    public static native int relocateFiles(long db, String[] names, String[] uris);

    /** Compacts every file into the last level and waits until it is done. */
    public static native void compact(long db);

    /**
     * Sets (or clears) the TTL compaction filter of a column family: compaction then removes
     * entries whose Flink {@code TtlValue} expired ({@code timestamp + ttl <= now}) and cuts the
     * expired head off lists (elements joined by ','). Not persisted: set it again after open.
     *
     * @param layout 0: no filter (the other arguments are ignored); 1: one {@code TtlValue} at
     *     byte offset {@code layoutParameter} of the value; 2: a list of elements of {@code
     *     layoutParameter} bytes each (at least 8); 3: a list whose element boundaries {@code
     *     listElementFilter} finds
     * @param ttlMillis the state's time to live (positive)
     * @param queryTimeAfterNumEntries compaction reads the time again after this many entries
     * @param timeProvider null for the wall clock, else an object with a {@code long
     *     currentTimestamp()} method (Flink's {@code TtlTimeProvider}), called from compaction
     *     threads
     * @param listElementFilter for layout 3: an object with a method {@code int
     *     nextUnexpiredOffset(byte[] list, long ttl, long currentTimestamp)}, as Flink's {@code
     *     FlinkCompactionFilter.ListElementFilter}, called from compaction threads; if it throws,
     *     the entry is kept
     */
    public static native void setTtlCompactionFilter(
            long db,
            int cf,
            int layout,
            int layoutParameter,
            long ttlMillis,
            long queryTimeAfterNumEntries,
            Object timeProvider,
            Object listElementFilter);
}
