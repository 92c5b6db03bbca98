-- Average price per category of the winning bids of closed auctions.
-- State: a regular join of auctions and bids (growing), a GROUP BY per auction (MAX, with
-- retractions) and a GROUP BY per category (AVG over an updating input).
SELECT Q.category, AVG(Q.final)
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category
