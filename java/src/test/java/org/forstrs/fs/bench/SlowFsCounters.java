package org.forstrs.fs.bench;

import java.util.concurrent.atomic.LongAdder;

/** Calls made to every {@link SlowFileSystem} of this JVM since it started. */
public final class SlowFsCounters {

    static final LongAdder OPENS = new LongAdder();
    static final LongAdder READS = new LongAdder();
    static final LongAdder BYTES_READ = new LongAdder();
    static final LongAdder CREATES = new LongAdder();
    static final LongAdder DELETES = new LongAdder();
    static final LongAdder RENAMES = new LongAdder();
    static final LongAdder STATUS = new LongAdder();
    static final LongAdder LISTS = new LongAdder();

    private SlowFsCounters() {}

    public static long opens() {
        return OPENS.sum();
    }

    public static long reads() {
        return READS.sum();
    }

    public static long creates() {
        return CREATES.sum();
    }

    /** One line: every counter by name. */
    public static String summary() {
        return String.format(
                "opens %d, reads %d (%d bytes), creates %d, deletes %d, renames %d, status %d,"
                        + " lists %d",
                OPENS.sum(),
                READS.sum(),
                BYTES_READ.sum(),
                CREATES.sum(),
                DELETES.sum(),
                RENAMES.sum(),
                STATUS.sum(),
                LISTS.sum());
    }
}
