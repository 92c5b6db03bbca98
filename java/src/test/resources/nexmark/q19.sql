-- The ten highest bids of each auction.
-- State: a top-10 rank per auction (the rank's rows in map state, updating).
SELECT *
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
    FROM bid
)
WHERE rank_number <= 10
