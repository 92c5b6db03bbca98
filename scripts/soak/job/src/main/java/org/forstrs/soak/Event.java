package org.forstrs.soak;

/** One input record (a POJO, so that SQL sees its fields as columns). */
public class Event {
    public long id;
    public int userId;
    public long amount;
    public long ts;

    public Event() {}

    public Event(long id, int users) {
        this.id = id;
        this.userId = SoakInput.userOf(id, users);
        this.amount = SoakInput.amountOf(id);
        this.ts = SoakInput.timeOf(id);
    }
}
