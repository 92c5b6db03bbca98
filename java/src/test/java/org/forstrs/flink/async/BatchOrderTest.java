package org.forstrs.flink.async;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Which batches wait for which: only for unfinished earlier batches sharing a key. */
class BatchOrderTest {

    @Test
    void aBatchWaitsForEveryUnfinishedEarlierBatchSharingAKeyAndNoOther() {
        BatchOrder order = new BatchOrder();
        BatchOrder.Ticket first = order.register(new Object[] {"a", "b", "a"});
        BatchOrder.Ticket second = order.register(new Object[] {"c", "d"});
        BatchOrder.Ticket third = order.register(new Object[] {"d", "b", "b"});

        // A key repeated within a batch does not make the batch wait for itself.
        assertThat(first.predecessorsFinished).isDone();
        assertThat(second.predecessorsFinished).isDone();
        assertThat(third.predecessorsFinished).isNotDone();

        order.finish(first);
        assertThat(third.predecessorsFinished).as("still waits for 'd'").isNotDone();
        order.finish(second);
        assertThat(third.predecessorsFinished).isDone();
    }

    @Test
    void keysOfFinishedBatchesAreForgottenAndFinishIsIdempotent() {
        BatchOrder order = new BatchOrder();
        BatchOrder.Ticket first = order.register(new Object[] {"a"});
        order.finish(first);
        order.finish(first);
        assertThat(order.register(new Object[] {"a"}).predecessorsFinished).isDone();

        // A finished batch releases only its own claim: a later batch's stays.
        BatchOrder.Ticket second = order.register(new Object[] {"k"});
        BatchOrder.Ticket third = order.register(new Object[] {"k"});
        order.finish(second);
        order.finish(second);
        assertThat(third.predecessorsFinished).isDone();
        assertThat(order.register(new Object[] {"k"}).predecessorsFinished).isNotDone();
    }
}
