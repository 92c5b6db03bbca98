-- q19 with equal prices ranked by time: prices tie (they are whole cents), and q19 ranks tied bids
-- in arrival order, which differs from run to run at parallelism > 1. The correctness check runs
-- this one, whose ranks have one answer (no two bids share a millisecond).
SELECT *
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, `dateTime` ASC) AS rank_number
    FROM bid
)
WHERE rank_number <= 10
