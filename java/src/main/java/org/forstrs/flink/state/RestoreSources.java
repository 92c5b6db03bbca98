package org.forstrs.flink.state;

/**
 * The checkpoints a restored DB is built from, in the shape of {@link
 * org.forstrs.jni.ForStNative#openRestored}: per source its manifest, SST names and where those
 * files are now, and its key groups {@code {start0, end0, start1, end1, ...}}; then the new DB's
 * key-group range (inclusive) and key-group prefix width.
 */
public record RestoreSources(
        byte[][] manifests,
        String[][] fileNames,
        String[][] fileUris,
        int[] keyGroups,
        int targetStart,
        int targetEnd,
        int keyGroupPrefixBytes) {}
