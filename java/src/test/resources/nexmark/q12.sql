-- Bids per bidder in 10 s tumbling windows of processing time.
-- State: a processing-time window aggregate per bidder. Its result depends on the machine's
-- clock, so the correctness check runs q12_event_time instead.
SELECT
    B.bidder,
    COUNT(*) AS bid_count,
    TUMBLE_START(B.p_time, INTERVAL '10' SECOND) AS starttime,
    TUMBLE_END(B.p_time, INTERVAL '10' SECOND) AS endtime
FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
GROUP BY B.bidder, TUMBLE(B.p_time, INTERVAL '10' SECOND)
