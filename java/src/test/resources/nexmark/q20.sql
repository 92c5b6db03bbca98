-- Bids expanded with their auction, for auctions in category 10.
-- State: a regular join of bids and auctions (both sides kept, growing).
SELECT
    auction, bidder, price, channel, url, B.`dateTime`, B.extra,
    itemName, description, initialBid, reserve, A.`dateTime`, expires, seller, category, A.extra
FROM bid AS B
INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10
