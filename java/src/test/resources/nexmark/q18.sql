-- The last bid of each bidder on each auction.
-- State: deduplication keeping the last row per (bidder, auction) by event time (growing).
SELECT auction, bidder, price, channel, url, `dateTime`, extra
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` DESC) AS rank_number
    FROM bid
)
WHERE rank_number <= 1
