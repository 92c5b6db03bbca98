package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;

import java.net.URI;
import java.util.Objects;

/**
 * When a checkpoint takes the DB's files where they are instead of copying them: the DB directory
 * and the checkpoint's shared directory are on the same file system, and the DB directory is not
 * a task manager's local one. That is the DB under the job's checkpoint directory ({@code
 * primary-dir: checkpoint-dir}, as Flink's ForSt decides it) or on any file system other than the
 * local one (a DFS reachable from every task manager). A DB on the local file system elsewhere
 * (the default local working directory) may vanish with its task manager, so its files are copied
 * (hard-linked).
 */
public final class FileHandOver {

    private FileHandOver() {}

    /**
     * @param dbUri the DB directory, as the engine opened it
     * @param sharedDir the checkpoint's shared directory ({@code <checkpoints>/<job>/shared})
     */
    public static boolean applies(String dbUri, Path sharedDir) {
        URI db = new Path(dbUri).toUri();
        URI shared = sharedDir.toUri();
        if (!scheme(db).equals(scheme(shared))
                || !Objects.equals(authority(db), authority(shared))) {
            return false;
        }
        if (!scheme(db).equals("file")) {
            return true;
        }
        Path jobDir = sharedDir.getParent();
        if (jobDir == null || db.getPath() == null) {
            return false;
        }
        String prefix = jobDir.toUri().getPath();
        prefix = prefix.endsWith("/") ? prefix : prefix + "/";
        return db.getPath().startsWith(prefix);
    }

    private static String scheme(URI uri) {
        return uri.getScheme() == null ? "file" : uri.getScheme().toLowerCase();
    }

    private static String authority(URI uri) {
        String authority = uri.getAuthority();
        return authority == null || authority.isEmpty() ? null : authority;
    }
}
