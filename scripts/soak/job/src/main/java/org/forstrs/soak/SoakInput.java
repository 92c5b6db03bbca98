package org.forstrs.soak;

/**
 * The soak's deterministic input: record {@code i} of {@code records}, computable without Flink
 * (scripts/soak/check.py computes the same numbers to check the results).
 */
public final class SoakInput {

    /** Event time of record 0 (ms); record i is STEP_MS later per index. */
    public static final long T0 = 1_700_000_000_000L;

    public static final long STEP_MS = 10;

    private SoakInput() {}

    /** splitmix64 of i: pseudo-random, the same in Python. */
    static long mix(long i) {
        long z = (i + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    public static int userOf(long i, int users) {
        return (int) Long.remainderUnsigned(mix(i), users);
    }

    public static long amountOf(long i) {
        return 1 + Long.remainderUnsigned(mix(i + (1L << 40)), 1000);
    }

    public static long timeOf(long i) {
        return T0 + i * STEP_MS;
    }

    /** The fee of record i's payment, the other side of the join. */
    public static long feeOf(long i) {
        return Long.remainderUnsigned(mix(i) >>> 20, 100);
    }
}
