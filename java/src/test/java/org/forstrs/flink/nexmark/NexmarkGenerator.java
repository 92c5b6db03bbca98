package org.forstrs.flink.nexmark;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;

import java.io.Serializable;
import java.util.SplittableRandom;

/**
 * The Nexmark event stream (persons, auctions and bids of an online auction house), written from
 * the Nexmark specification as the nexmark/nexmark project and Beam's Nexmark describe it: of every
 * 50 events 1 is a new person, 3 are new auctions and 46 are bids; persons and auctions get
 * consecutive ids from 1000; sellers and bidders are mostly "hot" (a few ids take most of the
 * traffic) and otherwise drawn among the recently active; bids go to hot or in-flight auctions;
 * prices are log-uniform between 1 and 1,000,000 (in cents: 100 to 10^8); an auction lasts until a
 * number of future events has happened; every event carries an {@code extra} string padding it to
 * its kind's average size (person 200 bytes, auction 500, bid 100).
 *
 * <p>Event {@code n} is a pure function of {@code (seed, n)}: any reader can produce any part of
 * the stream, in any order, and every run sees the same events. Event time advances by {@code
 * 1000 / eventsPerSecond} ms per event from a fixed base; at the default of 1,000 events per
 * second every event has its own millisecond, so no two events tie on {@code dateTime} and the
 * queries that order by it alone (deduplication, q9's ties) have one answer whatever the arrival
 * order.
 *
 * <p>Rows follow the nexmark/nexmark table: {@code event_type} (0 person, 1 auction, 2 bid), then
 * the person, auction and bid rows, of which only the event's own is set.
 */
public final class NexmarkGenerator implements Serializable {

    private static final long serialVersionUID = 1L;

    static final int PERSON = 0;
    static final int AUCTION = 1;
    static final int BID = 2;

    private static final int PERSON_PROPORTION = 1;
    private static final int AUCTION_PROPORTION = 3;
    private static final int BID_PROPORTION = 46;
    private static final int TOTAL_PROPORTION =
            PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;

    private static final long FIRST_PERSON_ID = 1000;
    private static final long FIRST_AUCTION_ID = 1000;
    private static final long FIRST_CATEGORY_ID = 10;
    private static final int CATEGORIES = 5;

    /** Ids of persons and auctions not yet created that may still be referred to. */
    private static final int PERSON_ID_LEAD = 10;

    private static final int AUCTION_ID_LEAD = 10;

    /** Of every this many sellers, bidders and auctions, one takes the hot traffic. */
    private static final int HOT_SELLER_STRIDE = 100;

    private static final int HOT_BIDDER_STRIDE = 100;
    private static final int HOT_AUCTION_STRIDE = 100;

    /**
     * A choice is hot unless a draw below these odds is 0: half of the bids go to a hot auction,
     * three quarters of the sellers and bidders are hot ones.
     */
    private static final int HOT_AUCTION_ODDS = 2;

    private static final int HOT_SELLER_ODDS = 4;
    private static final int HOT_BIDDER_ODDS = 4;

    /** Persons among whom non-hot sellers and bidders are drawn. */
    private static final int ACTIVE_PERSONS = 1000;

    /** Auctions open at a time, which sets how long an auction lasts in events. */
    private static final int IN_FLIGHT_AUCTIONS = 100;

    private static final int PERSON_BYTES = 200;
    private static final int AUCTION_BYTES = 500;
    private static final int BID_BYTES = 100;

    private static final int CHANNELS = 10_000;
    private static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};

    private static final String[] FIRST_NAMES = {
        "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter",
        "Walter"
    };
    private static final String[] LAST_NAMES = {
        "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"
    };
    private static final String[] STATES = {"AZ", "CA", "ID", "OR", "WA", "WY"};
    private static final String[] CITIES = {
        "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
        "Seattle", "Kent", "Cheyenne"
    };

    /** 2026-01-01T00:00:00Z: a fixed base, so that event times do not depend on the clock. */
    static final long BASE_TIME_MS = 1_767_225_600_000L;

    private final long seed;
    private final int eventsPerSecond;

    public NexmarkGenerator(long seed, int eventsPerSecond) {
        if (eventsPerSecond <= 0) {
            throw new IllegalArgumentException("events per second must be > 0: " + eventsPerSecond);
        }
        this.seed = seed;
        this.eventsPerSecond = eventsPerSecond;
    }

    /** The kind of event {@code n}: {@link #PERSON}, {@link #AUCTION} or {@link #BID}. */
    static int kindOf(long n) {
        long offset = n % TOTAL_PROPORTION;
        if (offset < PERSON_PROPORTION) {
            return PERSON;
        }
        return offset < PERSON_PROPORTION + AUCTION_PROPORTION ? AUCTION : BID;
    }

    /** Event time of event {@code n}, in epoch ms. */
    long timestampOf(long n) {
        return BASE_TIME_MS + n * 1000 / eventsPerSecond;
    }

    /** Event {@code n} as a row of the nexmark table. */
    public RowData event(long n) {
        SplittableRandom random = new SplittableRandom(mix(seed, n));
        long time = timestampOf(n);
        GenericRowData row = new GenericRowData(4);
        int kind = kindOf(n);
        row.setField(0, kind);
        switch (kind) {
            case PERSON -> row.setField(1, person(n, random, time));
            case AUCTION -> row.setField(2, auction(n, random, time));
            default -> row.setField(3, bid(n, random, time));
        }
        return row;
    }

    private static RowData person(long n, SplittableRandom random, long time) {
        long id = lastPersonId(n) + FIRST_PERSON_ID;
        String name = pick(random, FIRST_NAMES) + " " + pick(random, LAST_NAMES);
        String email = letters(random, 7) + "@" + letters(random, 5) + ".com";
        String card =
                String.format(
                        "%04d %04d %04d %04d",
                        random.nextInt(10_000),
                        random.nextInt(10_000),
                        random.nextInt(10_000),
                        random.nextInt(10_000));
        String city = pick(random, CITIES);
        String state = pick(random, STATES);
        int size = 8 + name.length() + email.length() + card.length() + city.length() + 2 + 8;
        return GenericRowData.of(
                id,
                StringData.fromString(name),
                StringData.fromString(email),
                StringData.fromString(card),
                StringData.fromString(city),
                StringData.fromString(state),
                TimestampData.fromEpochMillis(time),
                StringData.fromString(extra(random, size, PERSON_BYTES)));
    }

    private RowData auction(long n, SplittableRandom random, long time) {
        long id = lastAuctionId(n) + FIRST_AUCTION_ID;
        long seller =
                random.nextInt(HOT_SELLER_ODDS) > 0
                        ? lastPersonId(n) / HOT_SELLER_STRIDE * HOT_SELLER_STRIDE
                        : recentPersonId(n, random);
        long category = FIRST_CATEGORY_ID + random.nextInt(CATEGORIES);
        long initialBid = price(random);
        long reserve = initialBid + price(random);
        String item = letters(random, 20);
        String description = letters(random, 100);
        long expires = time + auctionLengthMs(n, random, time);
        int size = 8 + item.length() + description.length() + 8 + 8 + 8 + 8 + 8 + 8;
        return GenericRowData.of(
                id,
                StringData.fromString(item),
                StringData.fromString(description),
                initialBid,
                reserve,
                TimestampData.fromEpochMillis(time),
                TimestampData.fromEpochMillis(expires),
                seller + FIRST_PERSON_ID,
                category,
                StringData.fromString(extra(random, size, AUCTION_BYTES)));
    }

    private static RowData bid(long n, SplittableRandom random, long time) {
        long auction =
                random.nextInt(HOT_AUCTION_ODDS) > 0
                        ? lastAuctionId(n) / HOT_AUCTION_STRIDE * HOT_AUCTION_STRIDE
                        : openAuctionId(n, random);
        long bidder =
                random.nextInt(HOT_BIDDER_ODDS) > 0
                        ? lastPersonId(n) / HOT_BIDDER_STRIDE * HOT_BIDDER_STRIDE + 1
                        : recentPersonId(n, random);
        long price = price(random);
        String channel;
        String url;
        if (random.nextInt(2) > 0) {
            int hot = random.nextInt(HOT_CHANNELS.length);
            channel = HOT_CHANNELS[hot];
            url = "https://www.nexmark.com/item.htm?query=1&channel_id=" + hot;
        } else {
            int number = random.nextInt(CHANNELS);
            channel = "channel-" + number;
            url = "https://www.nexmark.com/" + number % 97 + "/item.htm?query=1";
        }
        int size = 8 + 8 + 8 + channel.length() + url.length() + 8;
        return GenericRowData.of(
                auction + FIRST_AUCTION_ID,
                bidder + FIRST_PERSON_ID,
                price,
                StringData.fromString(channel),
                StringData.fromString(url),
                TimestampData.fromEpochMillis(time),
                StringData.fromString(extra(random, size, BID_BYTES)));
    }

    /** The 0-based id of the last person created at or before event {@code n}. */
    static long lastPersonId(long n) {
        long epoch = n / TOTAL_PROPORTION;
        long offset = Math.min(n % TOTAL_PROPORTION, PERSON_PROPORTION - 1);
        return epoch * PERSON_PROPORTION + offset;
    }

    /**
     * The 0-based id of the last auction created at or before event {@code n} (-1 before the
     * first).
     */
    static long lastAuctionId(long n) {
        long epoch = n / TOTAL_PROPORTION;
        long offset = n % TOTAL_PROPORTION;
        if (offset < PERSON_PROPORTION) {
            epoch--;
            offset = AUCTION_PROPORTION - 1;
        } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
            offset = AUCTION_PROPORTION - 1;
        } else {
            offset -= PERSON_PROPORTION;
        }
        return epoch * AUCTION_PROPORTION + offset;
    }

    /** A person among the most recently created (or about to be), 0-based. */
    private static long recentPersonId(long n, SplittableRandom random) {
        long persons = lastPersonId(n) + 1;
        long active = Math.min(persons, ACTIVE_PERSONS);
        return persons - active + random.nextLong(active + PERSON_ID_LEAD);
    }

    /** An auction that is open (or about to be), 0-based. */
    private static long openAuctionId(long n, SplittableRandom random) {
        long last = Math.max(lastAuctionId(n), 0);
        long first = Math.max(last - IN_FLIGHT_AUCTIONS, 0);
        return first + random.nextLong(last - first + 1 + AUCTION_ID_LEAD);
    }

    /**
     * An auction lasts up to twice the time the stream takes to create {@code IN_FLIGHT_AUCTIONS}
     * auctions, so that about that many are open at a time.
     */
    private long auctionLengthMs(long n, SplittableRandom random, long time) {
        long eventsForAuctions = (long) IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION / AUCTION_PROPORTION;
        long horizonMs = timestampOf(n + eventsForAuctions) - time;
        return 1 + random.nextLong(Math.max(horizonMs * 2, 1));
    }

    /** Log-uniform between 100 and 10^8 cents. */
    private static long price(SplittableRandom random) {
        return Math.round(Math.pow(10.0, random.nextDouble() * 6.0) * 100.0);
    }

    private static String pick(SplittableRandom random, String[] choices) {
        return choices[random.nextInt(choices.length)];
    }

    private static String letters(SplittableRandom random, int maxLength) {
        int length = 3 + random.nextInt(Math.max(maxLength - 3, 1));
        char[] chars = new char[length];
        for (int i = 0; i < length; i++) {
            chars[i] = (char) ('a' + random.nextInt(26));
        }
        return new String(chars);
    }

    /** Padding that brings an event of {@code size} bytes to about {@code average} (+-20%). */
    private static String extra(SplittableRandom random, int size, int average) {
        int missing = average - size;
        if (missing <= 0) {
            return "";
        }
        int delta = Math.max(missing / 5, 1);
        int length = missing - delta + random.nextInt(2 * delta);
        char[] chars = new char[length];
        for (int i = 0; i < length; i++) {
            chars[i] = (char) ('a' + random.nextInt(26));
        }
        return new String(chars);
    }

    /** A 64-bit mix of (seed, n), so that neighbouring events get unrelated random streams. */
    private static long mix(long seed, long n) {
        long z = seed + (n + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
