-- Offer shapes (pricing.Shape): every fact recommend judges an offer by, all but price
-- and location. 100k offers hold a few hundred shapes, so recommend reads each shape's
-- cheapest offer through offers_current_shape (one index probe per shape) and then only
-- the few shapes that can still win, instead of every current offer. Columns are
-- pricing.Shape's fields; a fact added to the shape is a column added here.
-- gpu_model is BINARY (unlike offers.gpu_model): the recommender looks names up exactly.
CREATE TABLE shapes (
    id            INTEGER PRIMARY KEY,
    provider      TEXT NOT NULL,
    instance_type TEXT NOT NULL,
    purchase      TEXT NOT NULL,
    gpu_model     TEXT NOT NULL,
    gpu_count     REAL NOT NULL,
    gpu_mem_gib   REAL NOT NULL,
    vcpus         REAL NOT NULL,
    ram_gib       REAL NOT NULL,
    UNIQUE (provider, instance_type, purchase, gpu_model, gpu_count, gpu_mem_gib, vcpus, ram_gib)
);
ALTER TABLE offers ADD COLUMN shape_id INTEGER REFERENCES shapes (id);
INSERT INTO shapes (provider, instance_type, purchase, gpu_model, gpu_count, gpu_mem_gib, vcpus, ram_gib)
    SELECT DISTINCT provider, instance_type, purchase, gpu_model COLLATE BINARY, gpu_count, gpu_mem_gib, vcpus, ram_gib FROM offers;
UPDATE offers SET shape_id = (SELECT s.id FROM shapes s WHERE s.provider = offers.provider
    AND s.instance_type = offers.instance_type AND s.purchase = offers.purchase AND s.gpu_model = offers.gpu_model
    AND s.gpu_count = offers.gpu_count AND s.gpu_mem_gib = offers.gpu_mem_gib AND s.vcpus = offers.vcpus AND s.ram_gib = offers.ram_gib);
-- A shape's current offers cheapest first, in the store's tie order (provider and
-- instance type are fixed within a shape): the first entry is the shape's cheapest offer
-- and a LIMIT N walk reads N entries. Region is in it so a region filter is checked
-- from the index.
CREATE INDEX offers_current_shape ON offers (shape_id, price, region, zone) WHERE price IS NOT NULL;

-- When a refresh observes every offer it lists in a region at one time (an API
-- refresh stamps its fetch time), that time is stored once here instead of in each
-- unchanged offer's row: an unchanged offer costs no row rewrite. A current offer's
-- observed time is the newer of its last_seen and its region's row (offerColumns).
CREATE TABLE seen (
    provider  TEXT    NOT NULL,
    region    TEXT    NOT NULL,
    last_seen INTEGER NOT NULL,
    PRIMARY KEY (provider, region)
) WITHOUT ROWID;
