-- Each shape's cheapest current offer, copied into its shapes row by the refresh
-- transaction that writes the shape's provider (store.refreshCheapest), so recommend's
-- first read, when it filters nothing per offer (no region, no price cap), is one pass
-- over this small table instead of a probe of offers_current_shape and a row lookup per
-- shape. c_price is NULL when the shape has no current offer. c_last_seen is the
-- offer's own last_seen; readers take the newer of it and the region's seen row.
ALTER TABLE shapes ADD COLUMN c_price REAL;
ALTER TABLE shapes ADD COLUMN c_region TEXT;
ALTER TABLE shapes ADD COLUMN c_zone TEXT;
ALTER TABLE shapes ADD COLUMN c_currency TEXT;
ALTER TABLE shapes ADD COLUMN c_source TEXT;
ALTER TABLE shapes ADD COLUMN c_last_seen INTEGER;
UPDATE shapes SET (c_price, c_region, c_zone, c_currency, c_source, c_last_seen) = (
    SELECT price, region, zone, currency, source, last_seen FROM offers WHERE id = (
        SELECT id FROM offers INDEXED BY offers_current_shape WHERE shape_id = shapes.id AND price IS NOT NULL
        ORDER BY price, region, zone LIMIT 1));
