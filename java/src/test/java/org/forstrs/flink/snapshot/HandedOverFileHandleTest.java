package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;

import org.forstrs.flink.state.NativeCheckpoint;
import org.forstrs.flink.state.NativeDb;
import org.forstrs.flink.state.StringEntries;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A handed-over file discarded by Flink on the task manager (an aborted checkpoint whose
 * asynchronous phase had finished) stays while its database reads it, and goes once the database
 * no longer holds it.
 */
class HandedOverFileHandleTest {

    @Test
    void aFileTheDatabaseStillReadsSurvivesItsDiscard(@TempDir java.nio.file.Path dir)
            throws Exception {
        NativeDb db = NativeDb.open(dir.toUri().toString(), new String[0]);
        try {
            int cf = db.createColumnFamily("state");
            StringEntries.put(db, cf, "key", "first");
            NativeCheckpoint checkpoint = db.prepareCheckpoint();
            String name;
            try {
                checkpoint.manifest();
                String[] names = checkpoint.fileNames();
                assertThat(names).hasSize(1);
                name = names[0];
                checkpoint.handOver(names);
            } finally {
                checkpoint.release();
            }
            java.nio.file.Path file = dir.resolve(name);
            HandedOverFileHandle handle =
                    new HandedOverFileHandle(
                            new Path(file.toUri()), Files.size(file), db, name);

            handle.discardState(); // the abort: the database still reads the file
            assertThat(file).exists();
            assertThat(StringEntries.get(db, cf, "key")).isEqualTo("first");

            StringEntries.put(db, cf, "key", "second");
            db.compact(); // rewrites the handed-over file into one of its own
            assertThat(db.holdsFile(name)).isFalse();
            assertThat(file).as("handed over: the database never deletes it").exists();
            handle.discardState();
            assertThat(file).doesNotExist();
            assertThat(StringEntries.get(db, cf, "key")).isEqualTo("second");
        } finally {
            db.close();
        }
        assertThat(db.holdsFile("anything")).isFalse();
    }
}
