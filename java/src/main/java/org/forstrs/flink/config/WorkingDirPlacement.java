package org.forstrs.flink.config;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageAccess;

import java.net.URI;

/**
 * Keeps a DB's working directory out of the parts of the checkpoint directory that Flink owns:
 * the job's {@code shared} directory (its files are deleted by the JobManager as checkpoints are
 * subsumed) and its {@code chk-<n>} directories (deleted whole with their checkpoint). Anywhere
 * else, including the job's {@code taskowned} directory (FLIP-428's layout), is fine.
 */
public final class WorkingDirPlacement {

    private WorkingDirPlacement() {}

    public static void check(String dbUri, CheckpointStorageAccess storage) {
        if (!(storage instanceof FsCheckpointStorageAccess)) {
            return;
        }
        FsCheckpointStorageAccess fs = (FsCheckpointStorageAccess) storage;
        URI jobDir = fs.getCheckpointsDirectory().toUri();
        URI db = new Path(dbUri).toUri();
        if (!sameScheme(jobDir, db) || jobDir.getPath() == null || db.getPath() == null) {
            return;
        }
        String prefix = jobDir.getPath().endsWith("/") ? jobDir.getPath() : jobDir.getPath() + "/";
        if (!db.getPath().startsWith(prefix)) {
            return;
        }
        String first = db.getPath().substring(prefix.length()).split("/", 2)[0];
        if (first.equals("shared") || first.startsWith("chk-")) {
            throw new IllegalConfigurationException(
                    "The ForSt-RS working directory "
                            + dbUri
                            + " lies inside the checkpoint directory's '"
                            + first
                            + "', whose files Flink deletes; set"
                            + " 'state.backend.forst.primary-dir' elsewhere (e.g. outside "
                            + fs.getCheckpointsDirectory()
                            + ", or under its 'taskowned' directory)");
        }
    }

    private static boolean sameScheme(URI a, URI b) {
        String sa = a.getScheme() == null ? "file" : a.getScheme();
        String sb = b.getScheme() == null ? "file" : b.getScheme();
        return sa.equals(sb);
    }
}
