package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;

import org.forstrs.flink.state.NativeCheckpoint;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.StringEntries;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a discard on the task manager (Flink drops a result it never reported) does to a
 * handed-over file: nothing while another checkpoint that handed it over may have reached the
 * JobManager; otherwise the file returns to its open DB, which deletes it once it no longer reads
 * it, or is deleted at once when the DB is closed.
 */
class HandedOverFileHandleTest {

    @TempDir java.nio.file.Path dir;

    @Test
    void aFileOnlyDiscardedCheckpointsHandedOverReturnsToTheDbAndGoesWithCompaction()
            throws Exception {
        java.nio.file.Path file;
        try (NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0])) {
            int cf = db.createColumnFamily("state");
            StringEntries.put(db, cf, "key", "first");
            List<HandedOverFileHandle> first = checkpoint(db, 1);
            List<HandedOverFileHandle> second = checkpoint(db, 2); // the same file again
            file = path(first.get(0));

            discardAll(first);
            assertThat(file).as("checkpoint 2 may still reach the JobManager").exists();
            discardAll(second);
            assertThat(file).as("the DB reads it and owns it again").exists();
            assertThat(db.handedOverFiles().outstandingFiles()).isEmpty();
            assertThat(StringEntries.get(db, cf, "key")).isEqualTo("first");

            StringEntries.put(db, cf, "key", "second");
            db.compact(); // replaces the file: the DB deletes what it owns
            assertThat(db.holdsFile(file.getFileName().toString())).isFalse();
            assertThat(StringEntries.get(db, cf, "key")).isEqualTo("second");
        } // close waits for the deletions the DB issued
        assertThat(file).doesNotExist();
    }

    /**
     * Checkpoint 1 reached the JobManager (never discarded here); checkpoint 2 started before 1
     * was confirmed and handed the same file over again; the task is disposed, then Flink discards
     * 2's unreported result: the file checkpoint 1 references stays.
     */
    @Test
    void aDiscardAfterTheDbClosedKeepsAFileAnotherCheckpointMayHaveReported() throws Exception {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        List<HandedOverFileHandle> first;
        List<HandedOverFileHandle> second;
        try {
            int cf = db.createColumnFamily("state");
            StringEntries.put(db, cf, "key", "first");
            first = checkpoint(db, 1);
            second = checkpoint(db, 2);
        } finally {
            db.close();
        }
        discardAll(second);
        assertThat(path(first.get(0))).exists();
    }

    /** Once a checkpoint that handed a file over is confirmed, no discard deletes the file. */
    @Test
    void aFileOfAConfirmedCheckpointIsNeverDeletedByADiscard() throws Exception {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        List<HandedOverFileHandle> first;
        try {
            int cf = db.createColumnFamily("state");
            StringEntries.put(db, cf, "key", "first");
            first = checkpoint(db, 1);
            db.handedOverFiles().confirmed(1);
        } finally {
            db.close();
        }
        discardAll(first);
        assertThat(path(first.get(0))).exists();
        assertThat(db.handedOverFiles().outstandingFiles()).isEmpty();
    }

    @Test
    void afterTheDbClosedTheLastDiscardDeletesTheFile() throws Exception {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        List<HandedOverFileHandle> handles;
        try {
            int cf = db.createColumnFamily("state");
            StringEntries.put(db, cf, "key", "first");
            handles = checkpoint(db, 7);
        } finally {
            db.close();
        }
        java.nio.file.Path file = path(handles.get(0));
        assertThat(file).as("handed over: closing the DB keeps it").exists();
        discardAll(handles);
        assertThat(file).doesNotExist();
    }

    /** A checkpoint that hands every file over; its handles as the snapshot would build them. */
    static List<HandedOverFileHandle> checkpoint(NativeDb db, long checkpointId) throws Exception {
        NativeCheckpoint checkpoint = db.prepareCheckpoint();
        try {
            checkpoint.manifest();
            String[] names = checkpoint.fileNames();
            assertThat(names).isNotEmpty();
            db.handedOverFiles().handOver(checkpoint, checkpointId, names);
            List<HandedOverFileHandle> handles = new ArrayList<>();
            for (String name : names) {
                java.nio.file.Path file = java.nio.file.Paths.get(new Path(db.uri()).toUri().getPath(), name);
                handles.add(
                        new HandedOverFileHandle(
                                new Path(file.toUri()),
                                Files.size(file),
                                db.handedOverFiles(),
                                checkpointId,
                                name));
            }
            return handles;
        } finally {
            checkpoint.release();
        }
    }

    private static java.nio.file.Path path(HandedOverFileHandle handle) {
        return java.nio.file.Paths.get(handle.getFilePath().toUri());
    }

    private static void discardAll(List<HandedOverFileHandle> handles) throws Exception {
        for (HandedOverFileHandle handle : handles) {
            handle.discardState();
        }
    }
}
