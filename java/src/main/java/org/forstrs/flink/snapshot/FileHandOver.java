package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;

import org.forstrs.flink.config.ForStOptions.HandOverScope;

import java.net.URI;
import java.util.Objects;

/**
 * When a checkpoint takes the DB's files where they are instead of copying them. By default
 * ({@link HandOverScope#SHARED_DIRECTORY}, Flink's ForSt's rule) only when the DB directory lies
 * under the checkpoint's shared directory ({@code primary-dir: checkpoint-dir}): a retained
 * checkpoint then references nothing outside the checkpoint directory. With {@link
 * HandOverScope#FILE_SYSTEM}, whenever the DB is on the checkpoint's file system and not in a task
 * manager's local directory: on any file system other than the local one, or under the job's
 * checkpoint directory on the local one (a local DB elsewhere may vanish with its task manager).
 * {@code s3}, {@code s3a}, {@code s3n} and {@code s3p} name one file system.
 */
public final class FileHandOver {

    private FileHandOver() {}

    /**
     * @param dbUri the DB directory, as the engine opened it
     * @param sharedDir the checkpoint's shared directory ({@code <checkpoints>/<job>/shared})
     */
    public static boolean applies(String dbUri, Path sharedDir, HandOverScope scope) {
        URI db = new Path(dbUri).toUri();
        URI shared = sharedDir.toUri();
        if (!fileSystem(db).equals(fileSystem(shared))
                || !Objects.equals(authority(db), authority(shared))) {
            return false;
        }
        if (scope == HandOverScope.SHARED_DIRECTORY) {
            return isUnder(db, sharedDir);
        }
        if (!fileSystem(db).equals("file")) {
            return true;
        }
        Path jobDir = sharedDir.getParent();
        return jobDir != null && isUnder(db, jobDir);
    }

    private static boolean isUnder(URI db, Path dir) {
        String prefix = dir.toUri().getPath();
        if (db.getPath() == null || prefix == null) {
            return false;
        }
        prefix = prefix.endsWith("/") ? prefix : prefix + "/";
        return db.getPath().startsWith(prefix);
    }

    /** The scheme, with the names of one file system (the S3 connectors') made one. */
    private static String fileSystem(URI uri) {
        String scheme = uri.getScheme() == null ? "file" : uri.getScheme().toLowerCase();
        switch (scheme) {
            case "s3a":
            case "s3n":
            case "s3p":
                return "s3";
            default:
                return scheme;
        }
    }

    private static String authority(URI uri) {
        String authority = uri.getAuthority();
        return authority == null || authority.isEmpty() ? null : authority;
    }
}
