package org.forstrs.flink.config;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageAccess;

import java.net.URI;

/**
 * Keeps a DB's working directory out of the job's {@code chk-<n>} directories: Flink deletes each
 * whole, recursively, with its checkpoint. The job's {@code shared} directory is fine (it is where
 * {@code primary-dir: checkpoint-dir} puts DBs): the JobManager deletes there only the files that
 * checkpoints handed to it and no longer reference, and a DB hands a file over only once it never
 * deletes it again (the latest checkpoint references every handed-over file the DB still holds).
 * Anywhere else, {@code taskowned} included, is fine too.
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
        if (first.startsWith("chk-")) {
            throw new IllegalConfigurationException(
                    "The ForSt-RS working directory "
                            + dbUri
                            + " lies inside the checkpoint directory's '"
                            + first
                            + "', which Flink deletes with its checkpoint; set"
                            + " 'state.backend.forst.primary-dir' elsewhere (e.g. '"
                            + ForStOptions.PRIMARY_DIR_CHECKPOINT
                            + "', or outside "
                            + fs.getCheckpointsDirectory()
                            + ")");
        }
    }

    private static boolean sameScheme(URI a, URI b) {
        String sa = a.getScheme() == null ? "file" : a.getScheme();
        String sb = b.getScheme() == null ? "file" : b.getScheme();
        return sa.equals(sb);
    }
}
