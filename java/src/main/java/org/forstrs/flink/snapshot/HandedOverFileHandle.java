package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;

import org.forstrs.flink.state.DbDirectory;
import org.forstrs.flink.state.NativeDb;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

/**
 * A file of the DB handed over to a checkpoint where it lies. Flink discards a snapshot result on
 * the task manager when the checkpoint is aborted after the asynchronous phase finished but
 * before it was reported ({@code AsyncCheckpointRunnable#close}); the DB still reads such a file
 * and will hand it over again, so while the DB that handed it over holds it, discarding it here
 * deletes nothing. On the JobManager (the DB reference is transient and gone) and once the DB
 * has let go of the file, it is deleted as any checkpoint file: the JobManager discards a shared
 * file only when no retained checkpoint references it, and every file the DB holds is referenced
 * by its latest checkpoint. A DB directory whose DB is gone holds only handed-over files (see
 * {@link DbDirectory}): the deletion that empties it removes it too.
 */
public final class HandedOverFileHandle extends FileStateHandle {

    private static final long serialVersionUID = 1L;

    private static final Logger LOG = LoggerFactory.getLogger(HandedOverFileHandle.class);

    @Nullable private final transient NativeDb db;
    private final String name;

    /**
     * @param db the database that handed the file over
     * @param name the file's name relative to the database's directory
     */
    public HandedOverFileHandle(Path path, long size, @Nullable NativeDb db, String name) {
        super(path, size);
        this.db = db;
        this.name = name;
    }

    @Override
    public void discardState() throws Exception {
        if (db != null && db.holdsFile(name)) {
            LOG.debug("Not deleting {}: the ForSt-RS database still reads it", getFilePath());
            return;
        }
        super.discardState();
        Path dbDir = getFilePath().getParent();
        if (dbDir != null) {
            DbDirectory.removeIfEmpty(dbDir);
        }
    }
}
