package org.forstrs.fs.faults;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What {@link FaultInjectingFileSystem} does wrong, counted per kind of call over the whole JVM:
 * the n-th open of a data file fails with an I/O error or as if the file had vanished, the n-th
 * read call fails, every read returns fewer bytes than asked (legal, and what object stores do),
 * and the n-th file created fails to write. Each fault fires once; the counters say which fired.
 */
public final class FaultPlan {

    private static volatile FaultPlan active = new FaultPlan(Set.of(), Set.of(), Set.of(), Set.of(), false);

    private final Set<Long> failedOpens;
    private final Set<Long> vanishedOpens;
    private final Set<Long> failedReads;
    private final Set<Long> failedCreates;
    private final boolean shortReads;
    /** Whether failed reads throw a timeout (a transient error the engine retries). */
    private final boolean transientReadFailures;

    private final AtomicLong opens = new AtomicLong();
    private final AtomicLong reads = new AtomicLong();
    private final AtomicLong creates = new AtomicLong();
    private final AtomicLong shortened = new AtomicLong();
    private final AtomicLong fired = new AtomicLong();

    /**
     * @param failedOpens numbers (1-based) of opens of files named *.sst that throw an IOException
     * @param vanishedOpens numbers of such opens that throw FileNotFoundException
     * @param failedReads numbers of read calls that throw an IOException
     * @param failedCreates numbers of created files whose first write throws an IOException
     */
    public FaultPlan(
            Set<Long> failedOpens,
            Set<Long> vanishedOpens,
            Set<Long> failedReads,
            Set<Long> failedCreates,
            boolean shortReads) {
        this(failedOpens, vanishedOpens, failedReads, failedCreates, shortReads, false);
    }

    private FaultPlan(
            Set<Long> failedOpens,
            Set<Long> vanishedOpens,
            Set<Long> failedReads,
            Set<Long> failedCreates,
            boolean shortReads,
            boolean transientReadFailures) {
        this.failedOpens = failedOpens;
        this.vanishedOpens = vanishedOpens;
        this.failedReads = failedReads;
        this.failedCreates = failedCreates;
        this.shortReads = shortReads;
        this.transientReadFailures = transientReadFailures;
    }

    /**
     * A plan whose only faults are the read calls numbered {@code failedReads}, each throwing a
     * {@link SocketTimeoutException}: an error the engine classes as transient and retries.
     */
    public static FaultPlan timedOutReads(Set<Long> failedReads) {
        return new FaultPlan(Set.of(), Set.of(), failedReads, Set.of(), false, true);
    }

    /** Makes {@code plan} the one every faulty:// file system follows from now on. */
    public static void activate(FaultPlan plan) {
        active = plan;
    }

    static FaultPlan active() {
        return active;
    }

    /** Faults that fired so far. */
    public long fired() {
        return fired.get();
    }

    /** Faults the plan holds. */
    public long planned() {
        return failedOpens.size() + vanishedOpens.size() + failedReads.size() + failedCreates.size();
    }

    /** A summary of the calls seen, for the test's log. */
    public String calls() {
        return String.format(
                "%d SST opens, %d reads (%d short), %d files created",
                opens.get(), reads.get(), shortened.get(), creates.get());
    }

    /** Reads that returned fewer bytes than asked. */
    public long shortenedReads() {
        return shortened.get();
    }

    void onOpen(String path) throws IOException {
        if (!path.endsWith(".sst")) {
            return;
        }
        long n = opens.incrementAndGet();
        if (vanishedOpens.contains(n)) {
            fired.incrementAndGet();
            throw new FileNotFoundException("injected fault: " + path + " vanished (open #" + n + ")");
        }
        if (failedOpens.contains(n)) {
            fired.incrementAndGet();
            throw new IOException("injected fault: open #" + n + " of " + path);
        }
    }

    void onRead(String path) throws IOException {
        long n = reads.incrementAndGet();
        if (failedReads.contains(n)) {
            fired.incrementAndGet();
            String message = "injected fault: read #" + n + " of " + path;
            throw transientReadFailures
                    ? new SocketTimeoutException(message)
                    : new IOException(message);
        }
    }

    /** How many of {@code asked} bytes a read returns. */
    int readLength(int asked) {
        if (!shortReads || asked <= 1) {
            return asked;
        }
        shortened.incrementAndGet();
        return Math.max(1, asked / 3);
    }

    /** Whether the file created now fails at its first write. */
    boolean failsOnWrite() {
        long n = creates.incrementAndGet();
        if (failedCreates.contains(n)) {
            fired.incrementAndGet();
            return true;
        }
        return false;
    }
}
