-- User sessions: bids per bidder and session (a gap of 10 s ends one).
-- State: a session window aggregate per bidder (merging windows).
SELECT
    B.bidder,
    COUNT(*) AS bid_count,
    SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) AS starttime,
    SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND)
