package org.forstrs.fs;

/** Files under a directory, as returned by {@link FlinkFsBridge#list}: two parallel arrays. */
public final class FileListing {

    private final String[] paths;
    private final long[] sizes;

    FileListing(String[] paths, long[] sizes) {
        this.paths = paths;
        this.sizes = sizes;
    }

    /** Paths relative to the listed directory ("a.sst", "sub/b.sst"). */
    public String[] paths() {
        return paths;
    }

    /** Sizes in bytes, index for index with {@link #paths()}. */
    public long[] sizes() {
        return sizes;
    }
}
