-- Pass-through: every bid, no state. The baseline of what the source and the plan cost.
SELECT auction, bidder, price, `dateTime`, extra FROM bid
