package org.forstrs.flink.async;

import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Which batches wait for which: only for unfinished earlier batches sharing a record. */
class BatchOrderTest {

    @Test
    void aBatchWaitsForEveryUnfinishedEarlierBatchSharingARecordAndNoOther() {
        RecordContext<String> a = record("a");
        RecordContext<String> b = record("b");
        RecordContext<String> c = record("c");
        RecordContext<String> d = record("d");
        BatchOrder.Ticket first = BatchOrder.register(requests(a, b, a));
        BatchOrder.Ticket second = BatchOrder.register(requests(c, d));
        BatchOrder.Ticket third = BatchOrder.register(requests(d, b, b));

        // A record repeated within a batch does not make the batch wait for itself.
        assertThat(first.predecessorsFinished).isDone();
        assertThat(second.predecessorsFinished).isDone();
        assertThat(third.predecessorsFinished).isNotDone();

        first.finish();
        assertThat(third.predecessorsFinished).as("still waits for d's first batch").isNotDone();
        second.finish();
        assertThat(third.predecessorsFinished).isDone();
    }

    @Test
    void finishedBatchesHoldNothingBackAndFinishIsIdempotent() {
        RecordContext<String> a = record("a");
        BatchOrder.Ticket first = BatchOrder.register(requests(a));
        first.finish();
        first.finish();
        assertThat(BatchOrder.register(requests(a)).predecessorsFinished).isDone();

        // A finished batch releases only its own claim: a later batch's stays.
        RecordContext<String> k = record("k");
        BatchOrder.Ticket second = BatchOrder.register(requests(k));
        BatchOrder.Ticket third = BatchOrder.register(requests(k));
        second.finish();
        second.finish();
        assertThat(third.predecessorsFinished).isDone();
        assertThat(BatchOrder.register(requests(k)).predecessorsFinished).isNotDone();
    }

    /**
     * Claims are per record: the controller hands a key to its next record only once the last
     * one's requests completed, so a new record of the same key never waits for an old one.
     */
    @Test
    void aNewRecordOfTheSameKeyDoesNotWaitForTheOld() {
        BatchOrder.Ticket old = BatchOrder.register(requests(record("k")));
        assertThat(BatchOrder.register(requests(record("k"))).predecessorsFinished).isDone();
        assertThat(old.predecessorsFinished).isDone();
    }

    /** The slot the order keeps on a record also carries the key cache, which it must not lose. */
    @Test
    void theSlotIsKeptAcrossBatchesOfARecord() {
        RecordContext<String> a = record("a");
        BatchOrder.register(requests(a)).finish();
        RecordSlot slot = RecordSlot.find(a);
        assertThat(slot).isNotNull();
        slot.defaultNamespaceKey = new byte[] {1};
        BatchOrder.register(requests(a));
        assertThat(RecordSlot.find(a)).isSameAs(slot);
        assertThat(slot.defaultNamespaceKey).containsExactly(1);
    }

    private static RecordContext<String> record(String key) {
        return new RecordContext<>(key, key, c -> {}, 0, new EpochManager.Epoch(0), 0);
    }

    @SafeVarargs
    private static List<StateRequest<?, ?, ?, ?>> requests(RecordContext<String>... records) {
        List<StateRequest<?, ?, ?, ?>> requests = new ArrayList<>();
        for (RecordContext<String> record : records) {
            requests.add(
                    new StateRequest<String, Object, Object, Object>(
                            null, StateRequestType.VALUE_GET, false, null, null, record));
        }
        return requests;
    }
}
