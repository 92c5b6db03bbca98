package org.forstrs.flink.state;

import org.apache.flink.core.fs.Path;

import javax.annotation.Nullable;

import java.util.Set;
import java.util.stream.Collectors;

/**
 * What an attempt knows of its run when it collects the DB directories that other attempts of
 * its subtask left: the run (Flink's execution graph; a region failover keeps it, a new job or a
 * restart of the whole graph does not), the checkpoint it restored from and the files that
 * checkpoint references. Within one run Flink aborts every pending checkpoint at a failover and
 * restores the latest completed one, so a file a dead attempt of the run first handed over to a
 * later checkpoint belongs to no checkpoint that can complete: it is collected too.
 */
public final class AttemptRun {

    /** Nothing known: files other attempts handed over all stay. */
    public static final AttemptRun UNKNOWN = new AttemptRun(null, -1, Set.of());

    @Nullable private final String runId;
    private final long restoredFrom;
    private final Set<String> referencedPaths;

    /**
     * @param runId the execution graph's id
     * @param restoredFrom the checkpoint the attempt restored from, 0 if none, -1 if unknown
     * @param referencedFiles the URIs of the files that checkpoint references
     */
    public AttemptRun(@Nullable String runId, long restoredFrom, Set<String> referencedFiles) {
        this.runId = runId;
        this.restoredFrom = restoredFrom;
        this.referencedPaths =
                referencedFiles.stream().map(AttemptRun::pathOf).collect(Collectors.toSet());
    }

    /** The marker a DB directory of this run holds, or null when the run is unknown. */
    @Nullable
    String marker() {
        return runId == null ? null : "RUN-" + runId;
    }

    /** Whether a dead attempt's directory with these entries was of this run. */
    boolean sameRun(Iterable<String> entries) {
        if (runId == null || restoredFrom < 0) {
            return false;
        }
        for (String entry : entries) {
            if (entry.equals(marker())) {
                return true;
            }
        }
        return false;
    }

    long restoredFrom() {
        return restoredFrom;
    }

    /** The names of the files in {@code dirUri} that the restored checkpoint references. */
    String[] referencedIn(String dirUri) {
        String dir = pathOf(dirUri);
        return referencedPaths.stream()
                .filter(p -> p.startsWith(dir + "/") && p.indexOf('/', dir.length() + 1) < 0)
                .map(p -> p.substring(dir.length() + 1))
                .toArray(String[]::new);
    }

    /** Scheme-less, normalized path: Flink's Path and the engine's URIs spell schemes apart. */
    private static String pathOf(String uri) {
        String path = new Path(uri).toUri().getPath();
        return path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
    }
}
