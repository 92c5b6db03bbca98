package org.forstrs.jni;

/**
 * Arms the engine's failpoints ({@code lsm::failpoints}): named places in a flush, a compaction
 * and a write that panic when armed, for tests of what a panic does to a database, and one that
 * loses a put. Only the library built with the cargo feature {@code failpoints} has them: the
 * tests tagged {@value #TAG} run in their own Maven executions that load it ({@link
 * NativeLibraryLoader#LIBRARY_PROPERTY}); the jar's library has no way to arm one.
 */
public final class Failpoints {

    /** The JUnit tag of the tests that arm failpoints. */
    public static final String TAG = "failpoints";

    static {
        NativeLibraryLoader.ensureLoaded();
    }

    private Failpoints() {}

    /**
     * Makes the named failpoint fire the next {@code times} times it is reached, in every
     * database of this process ({@code 0} disarms it). {@code "flush"} panics a flush after it
     * wrote its files and before it installs them, {@code "compaction"} a compaction that merges
     * files at the same step, {@code "write"} a write on the caller's thread before it applies
     * its batch; the database then fails, and every later call on it throws an {@link
     * IllegalStateException} whose message holds "failpoint '<name>' fired". {@code "drop-put"}
     * instead leaves a put out of the memtable while its write succeeds: a lost update, for
     * tests that must notice one.
     *
     * @throws IllegalArgumentException for an unknown name or a negative count
     */
    public static native void arm(String name, int times);
}
