package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;

import org.forstrs.flink.state.DbDirectory;
import org.forstrs.flink.state.HandedOverFiles;

import javax.annotation.Nullable;

/**
 * A file of the DB handed over to a checkpoint where it lies. On the JobManager (the ledger is
 * transient and gone) it is deleted as any checkpoint file: the SharedStateRegistry discards it
 * when no retained checkpoint references it. On the task manager Flink discards a snapshot result
 * only when it never reported it; whether that deletes the file is the {@link HandedOverFiles}
 * ledger's decision: only once no checkpoint that handed it over may have reached the JobManager,
 * and only if the DB that handed it over is closed (an open one takes the file back). A DB
 * directory whose DB is gone holds only handed-over files (see {@link DbDirectory}): the deletion
 * that empties it removes it too.
 */
public final class HandedOverFileHandle extends FileStateHandle {

    private static final long serialVersionUID = 2L;

    @Nullable private final transient HandedOverFiles owners;
    private final long checkpointId;
    private final String name;

    /**
     * @param owners the ledger of the DB that handed the file over
     * @param checkpointId the checkpoint this handle is part of
     * @param name the file's name relative to the database's directory
     */
    public HandedOverFileHandle(
            Path path, long size, @Nullable HandedOverFiles owners, long checkpointId, String name) {
        super(path, size);
        this.owners = owners;
        this.checkpointId = checkpointId;
        this.name = name;
    }

    @Override
    public void discardState() throws Exception {
        if (owners != null && owners.discarded(checkpointId, name) == HandedOverFiles.Discard.KEEP) {
            return;
        }
        super.discardState();
        Path dbDir = getFilePath().getParent();
        if (dbDir != null) {
            DbDirectory.removeIfEmpty(dbDir);
        }
    }
}
