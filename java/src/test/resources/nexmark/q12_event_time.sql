-- q12 on event time: bids per bidder in 10 s tumbling windows of the bids' own time.
-- State: an event-time window aggregate per bidder.
SELECT
    B.bidder,
    COUNT(*) AS bid_count,
    TUMBLE_START(B.`dateTime`, INTERVAL '10' SECOND) AS starttime,
    TUMBLE_END(B.`dateTime`, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, TUMBLE(B.`dateTime`, INTERVAL '10' SECOND)
