package org.forstrs.flink.async;

import org.apache.flink.api.common.state.v2.StateFuture;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.asyncprocessing.InternalAsyncFuture;
import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.declare.DeclarationManager;
import org.apache.flink.runtime.mailbox.SyncMailboxExecutor;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;

import org.forstrs.flink.state.NativeDb;
import org.forstrs.fs.bench.SlowFileSystem;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link TaskThreadRequestHandler} through Flink's own controller, batches on the task thread.
 * Writes behind: which writes complete at once, that the next batch applies them before its own
 * requests, that a write issued while the record waits for a read takes its round trip, and that
 * writes which could not be applied fail every later request. Running at issue: a request of a
 * free key completes before its callbacks are registered, one of a held key waits for the record
 * holding it, and reads that wait for storage are batched again.
 */
class TaskThreadRequestHandlerTest {

    private static final int MAX_PARALLELISM = 128;

    @TempDir Path dir;

    private final List<Throwable> errors = new CopyOnWriteArrayList<>();
    private NativeDb db;
    private ForStStateExecutor executor;
    private StateExecutionController<String> controller;
    private ForStValueState<String, VoidNamespace, Long> value;
    private int records;

    @BeforeEach
    void openBatched() {
        open(dir.toUri().toString(), new String[0], false);
    }

    /** Opens the database at {@code uri} and the handler's state on it, closing the earlier. */
    private void open(String uri, String[] options, boolean runAtIssue) {
        close();
        db = NativeDb.open(uri, options);
        executor = new ForStStateExecutor(db, 0);
        controller =
                new StateExecutionController<>(
                        new SyncMailboxExecutor(),
                        (message, t) -> errors.add(t),
                        executor,
                        new DeclarationManager(),
                        EpochManager.ParallelMode.SERIAL_BETWEEN_EPOCH,
                        MAX_PARALLELISM,
                        1000,
                        0,
                        1000,
                        null,
                        null);
        KeySerde<String, VoidNamespace> keys =
                new KeySerde<>(
                        () ->
                                new SerializedCompositeKeyBuilder<>(
                                        StringSerializer.INSTANCE,
                                        CompositeKeySerializationUtils
                                                .computeRequiredBytesInKeyGroupPrefix(
                                                        MAX_PARALLELISM),
                                        32),
                        VoidNamespaceSerializer.INSTANCE,
                        VoidNamespace.INSTANCE);
        value =
                new ForStValueState<>(
                        new TaskThreadRequestHandler(controller, () -> executor, true, runAtIssue),
                        LongSerializer.INSTANCE,
                        db.createColumnFamily("value"),
                        keys);
    }

    @AfterEach
    void close() {
        if (executor != null) {
            executor.shutdown();
        }
        if (db != null && !db.isClosed()) {
            db.close();
        }
    }

    /** Starts a record of {@code key}: its requests are issued in its context until released. */
    private RecordContext<String> record(String key) {
        RecordContext<String> context = controller.buildContext("record-" + records++, key);
        context.retain();
        controller.setCurrentContext(context);
        return context;
    }

    /** Runs what the controller buffered as one batch (on this thread). */
    private void runBatch() {
        controller.triggerIfNeeded(true);
    }

    private static boolean isDone(StateFuture<?> future) {
        return ((InternalAsyncFuture<?>) future).isDone();
    }

    /** A record of {@code key} that reads it and, once answered, writes {@code written}. */
    private void readThenWrite(String key, long written) {
        RecordContext<String> context = record(key);
        value.asyncValue().thenAccept(v -> value.asyncUpdate(written));
        runBatch();
        context.release();
    }

    /** Reads the key in a record of its own and returns what it saw. */
    private Long read(String key) {
        RecordContext<String> context = record(key);
        AtomicReference<Long> seen = new AtomicReference<>(-1L);
        value.asyncValue().thenAccept(seen::set);
        runBatch();
        context.release();
        assertThat(errors).isEmpty();
        return seen.get();
    }

    @Test
    void aWriteAfterAnAnsweredReadCompletesAtOnceAndTheNextBatchAppliesItFirst() {
        RecordContext<String> context = record("alice");
        AtomicReference<StateFuture<Void>> update = new AtomicReference<>();
        value.asyncValue().thenAccept(v -> update.set(value.asyncUpdate(v == null ? 1L : v + 1)));
        runBatch();
        assertThat(update.get()).isNotNull();
        assertThat(isDone(update.get())).as("the write completed when issued").isTrue();
        assertThat(executor.pendingWritesBehind()).isEqualTo(1);
        context.release();

        // the next record of the key reads it: its batch carries the write ahead of the read
        assertThat(read("alice")).isEqualTo(1L);
        assertThat(executor.pendingWritesBehind()).isZero();
        assertThat(read("bob")).isNull();
    }

    @Test
    void aWriteWhileAReadOfTheRecordIsInFlightTakesItsRoundTrip() {
        readThenWrite("alice", 5L);

        RecordContext<String> context = record("alice");
        AtomicReference<Long> before = new AtomicReference<>(-1L);
        value.asyncValue().thenAccept(before::set);
        StateFuture<Void> update = value.asyncUpdate(6L);
        assertThat(isDone(update)).as("queued behind the unanswered read").isFalse();
        assertThat(executor.pendingWritesBehind())
                .as("the first record's write alone")
                .isEqualTo(1);
        runBatch();
        assertThat(isDone(update)).isTrue();
        assertThat(before.get()).as("the read issued first saw the old value").isEqualTo(5L);
        context.release();
        assertThat(read("alice")).isEqualTo(6L);
    }

    @Test
    void aRecordsFirstRequestGoesToTheController() {
        RecordContext<String> context = record("alice");
        StateFuture<Void> update = value.asyncUpdate(3L);
        assertThat(isDone(update)).as("the record does not hold its key yet").isFalse();
        runBatch();
        assertThat(isDone(update)).isTrue();
        context.release();
        assertThat(read("alice")).isEqualTo(3L);
    }

    @Test
    void flushingAppliesTheWritesBehindWithoutABatch() {
        readThenWrite("alice", 9L);
        assertThat(executor.pendingWritesBehind()).isEqualTo(1);
        executor.flushWritesBehind();
        assertThat(executor.pendingWritesBehind()).isZero();
        // the read's batch carries nothing: the store has the write
        assertThat(read("alice")).isEqualTo(9L);
    }

    @Test
    void writesThatCouldNotBeAppliedFailEveryLaterRequest() {
        readThenWrite("alice", 1L);
        assertThat(executor.pendingWritesBehind()).isEqualTo(1);
        db.close();

        assertThatThrownBy(() -> executor.flushWritesBehind())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("could not apply writes");
        RecordContext<String> next = record("bob");
        value.asyncValue();
        runBatch();
        next.release();
        assertThat(errors).isNotEmpty();
        assertThat(errors.get(0)).hasStackTraceContaining("could not apply writes");
    }

    @Test
    void aRequestOfAFreeKeyRunsAtIssueAndItsCallbacksRunAtOnce() {
        open(dir.toUri().toString(), new String[0], true);
        RecordContext<String> context = record("alice");
        AtomicReference<Long> seen = new AtomicReference<>(-1L);
        StateFuture<Long> get = value.asyncValue();
        assertThat(isDone(get)).as("answered before a callback is registered").isTrue();
        get.thenAccept(
                v -> {
                    seen.set(v);
                    value.asyncUpdate(4L);
                });
        assertThat(seen.get()).as("the callback ran at once, without a batch").isNull();
        assertThat(executor.pendingWritesBehind()).as("the write went behind").isEqualTo(1);
        context.release();

        RecordContext<String> next = record("alice");
        StateFuture<Long> again = value.asyncValue();
        assertThat(isDone(again)).isTrue();
        again.thenAccept(seen::set);
        next.release();
        assertThat(seen.get()).as("the read carried the write ahead of it").isEqualTo(4L);
        assertThat(executor.pendingWritesBehind()).isZero();
        assertThat(errors).isEmpty();
    }

    @Test
    void aRequestOfAHeldKeyRunsWhenTheRecordHoldingItIsDone() {
        open(dir.toUri().toString(), new String[0], true);
        RecordContext<String> holder = record("alice");
        value.asyncValue().thenAccept(v -> value.asyncUpdate(8L));

        RecordContext<String> waiter = record("alice");
        AtomicReference<Long> seen = new AtomicReference<>(-1L);
        StateFuture<Long> get = value.asyncValue();
        get.thenAccept(seen::set);
        assertThat(isDone(get)).as("the first record still holds the key").isFalse();
        holder.release();
        assertThat(isDone(get)).as("run once the key was free").isTrue();
        assertThat(seen.get()).as("after the holder's write").isEqualTo(8L);
        waiter.release();
        assertThat(errors).isEmpty();
    }

    @Test
    void readsThatWaitForStorageAreBatchedAgain(@TempDir Path remote) {
        // A Flink file system standing in for a DFS, and no block cache: a read of a flushed key
        // waits for storage, a read the memtable answers does not.
        String uri = SlowFileSystem.SCHEME + "://" + remote.toAbsolutePath();
        open(uri, new String[] {"block-cache-bytes", "0"}, true);
        readThenWrite("alice", 1L);
        executor.flushWritesBehind();
        db.flush();
        assertThat(read("alice")).isEqualTo(1L);

        RecordContext<String> context = record("bob");
        StateFuture<Long> get = value.asyncValue();
        assertThat(isDone(get)).as("batched: the last batch waited for storage").isFalse();
        runBatch();
        assertThat(isDone(get)).isTrue();
        context.release();

        // a batch the memtable answered: requests run at issue again
        readThenWrite("carol", 2L);
        RecordContext<String> last = record("carol");
        assertThat(isDone(value.asyncValue())).isTrue();
        last.release();
        assertThat(errors).isEmpty();
    }
}
