-- Local item suggestion: sellers in Oregon, Idaho or California of auctions in category 10.
-- State: a regular join, both sides kept (auctions by seller, persons by id), growing.
SELECT P.name, P.city, P.state, A.id
FROM auction AS A
INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')
