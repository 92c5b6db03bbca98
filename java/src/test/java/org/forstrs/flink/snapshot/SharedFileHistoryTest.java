package org.forstrs.flink.snapshot;

import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Which shared SST copies a new checkpoint may reference instead of copying again. */
class SharedFileHistoryTest {

    private static HandleAndLocalPath copy(String sst, String dest) {
        return HandleAndLocalPath.of(new FileStateHandle(new Path("/cp/shared/" + dest), 10), sst);
    }

    private static HandleAndLocalPath placeholderOf(HandleAndLocalPath file) {
        StreamStateHandle h = file.getHandle();
        return HandleAndLocalPath.of(
                new PlaceholderStreamStateHandle(h.getStreamStateHandleID(), h.getStateSize(), false),
                file.getLocalPath());
    }

    @Test
    void nothingIsReusableBeforeAConfirmation() {
        SharedFileHistory history = new SharedFileHistory();
        history.record(1, List.of(copy("1.sst", "a")));
        assertThat(history.reusable()).isEmpty();
    }

    @Test
    void confirmedFilesAreReusableWithTheHandleOfTheirUpload() {
        SharedFileHistory history = new SharedFileHistory();
        HandleAndLocalPath a = copy("1.sst", "a");
        history.record(1, List.of(a, copy("2.sst", "b")));
        history.confirm(1);

        Map<String, StreamStateHandle> reusable = history.reusable();
        assertThat(reusable).containsOnlyKeys("1.sst", "2.sst");
        assertThat(reusable.get("1.sst")).isSameAs(a.getHandle());
    }

    @Test
    void aFileCopiedAgainByALaterCheckpointIsNotReused() {
        // 1 copies 1.sst as a; 2 ran before 1 was confirmed and copied it again as b; once 2
        // completes the JobManager drops a, so a must not be referenced any more.
        SharedFileHistory history = new SharedFileHistory();
        history.record(1, List.of(copy("1.sst", "a"), copy("2.sst", "c")));
        history.record(2, List.of(copy("1.sst", "b")));
        history.confirm(1);

        assertThat(history.reusable()).containsOnlyKeys("2.sst");
    }

    @Test
    void placeholdersOfLaterCheckpointsKeepTheFileReusable() {
        SharedFileHistory history = new SharedFileHistory();
        HandleAndLocalPath a = copy("1.sst", "a");
        history.record(1, List.of(a));
        history.confirm(1);
        history.record(2, List.of(placeholderOf(a)));

        assertThat(history.reusable()).containsOnlyKeys("1.sst");
    }

    @Test
    void confirmationDropsOlderRecordsAndIgnoresUnknownOrOlderIds() {
        SharedFileHistory history = new SharedFileHistory();
        history.record(1, List.of(copy("1.sst", "a")));
        history.record(2, List.of(copy("2.sst", "b")));
        history.record(3, List.of(copy("3.sst", "c")));
        history.confirm(2);
        assertThat(history.recordedCheckpoints()).containsExactly(2L, 3L);

        history.confirm(1); // late, older: ignored
        history.confirm(7); // a savepoint: never recorded, ignored
        assertThat(history.reusable()).containsOnlyKeys("2.sst");
    }

    @Test
    void anAbortedCheckpointIsForgotten() {
        SharedFileHistory history = new SharedFileHistory();
        history.record(1, List.of(copy("1.sst", "a")));
        history.confirm(1);
        history.record(2, List.of(copy("1.sst", "b")));
        assertThat(history.reusable()).isEmpty();

        history.abort(2);
        assertThat(history.recordedCheckpoints()).containsExactly(1L);
        assertThat(history.reusable()).containsOnlyKeys("1.sst");
    }

    /** Checkpoint {@code id} copied {@code sst}, read from a snapshot, to {@code dest}. */
    private static void recordCopyOfRestored(
            SharedFileHistory history, long id, String sst, String dest) {
        HandleAndLocalPath file = copy(sst, dest);
        history.record(id, List.of(file), Map.of(sst, "/cp/shared/" + dest));
    }

    @Test
    void restoredFilesMoveToTheCopiesOfTheFirstConfirmedCheckpointOnce() {
        SharedFileHistory history = new SharedFileHistory();
        recordCopyOfRestored(history, 5, "1.sst", "a");
        assertThat(history.relocations()).as("before the confirmation").isEmpty();

        history.confirm(5);
        assertThat(history.relocations()).containsExactly(Map.entry("1.sst", "/cp/shared/a"));
        assertThat(history.relocations()).as("handed out once").isEmpty();
    }

    @Test
    void aRestoredFileCopiedAgainByAPendingCheckpointMovesToTheCopyThatSurvives() {
        // 6 ran before 5 was confirmed and copied 1.sst again: when 6 completes the JobManager
        // drops 5's copy, so the DB waits for 6 (its copy) or for 6's abort (then 5's).
        SharedFileHistory completes = new SharedFileHistory();
        recordCopyOfRestored(completes, 5, "1.sst", "a");
        recordCopyOfRestored(completes, 6, "1.sst", "b");
        completes.confirm(5);
        assertThat(completes.relocations()).isEmpty();
        completes.confirm(6);
        assertThat(completes.relocations()).containsExactly(Map.entry("1.sst", "/cp/shared/b"));

        SharedFileHistory aborted = new SharedFileHistory();
        recordCopyOfRestored(aborted, 5, "1.sst", "a");
        recordCopyOfRestored(aborted, 6, "1.sst", "b");
        aborted.confirm(5);
        aborted.abort(6);
        assertThat(aborted.relocations()).containsExactly(Map.entry("1.sst", "/cp/shared/a"));
    }

    @Test
    void relocationsThatFailedAreHandedOutAgain() {
        SharedFileHistory history = new SharedFileHistory();
        recordCopyOfRestored(history, 5, "1.sst", "a");
        history.confirm(5);
        Map<String, String> due = history.relocations();
        history.relocationsFailed(due);
        assertThat(history.relocations()).isEqualTo(due);
    }
}
