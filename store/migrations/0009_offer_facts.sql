-- Fit-fact sets: the facts recommend judges an offer by, fewer than its shape's (no
-- instance type, no vCPUs; recommend.FactsKey) plus the host's CUDA ceiling (an offer
-- column, 0006). A marketplace lists every host as its own instance type, so 100k offers
-- are 100k shapes but a few thousand fact sets; recommend reads each set's cheapest
-- current offer (copied into the c_ columns by every write of the set's provider, as
-- 0004 does for shapes: one pass over this table, no row lookup per set) and walks
-- offers_current_facts for the few sets that can still win (store/facts.go).
--
-- fact_classes are the distinct FactsKey values (computed in Go, opaque here), one per
-- shape (shapes.class_id); a set is a class and a host_max_cuda. The set's filter
-- columns are the shape's, so the shape read's filters apply to it as they are.
CREATE TABLE fact_classes (
    id  INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE
);
CREATE TABLE facts (
    id          INTEGER PRIMARY KEY,
    class_id    INTEGER NOT NULL REFERENCES fact_classes (id),
    max_cuda    REAL    NOT NULL,
    provider    TEXT    NOT NULL,
    purchase    TEXT    NOT NULL,
    gpu_model   TEXT    NOT NULL,
    gpu_count   REAL    NOT NULL,
    gpu_mem_gib REAL    NOT NULL,
    ram_gib     REAL    NOT NULL,
    -- the set's cheapest current offer (c_price NULL: none); c_last_seen is the
    -- offer's own, readers take the newer of it and its region's seen row
    c_price         REAL,
    c_region        TEXT,
    c_zone          TEXT,
    c_instance_type TEXT,
    c_vcpus         REAL,
    c_currency      TEXT,
    c_source        TEXT,
    c_last_seen     INTEGER,
    c_count         INTEGER, -- the set's current offers (recommend's exclusion counts)
    UNIQUE (class_id, max_cuda)
);
CREATE INDEX facts_provider ON facts (provider);
-- The rules the classes were made by (recommend.FactsVersion); NULL until a write
-- classifies every shape. Readers use the sets only while it is their own version.
CREATE TABLE facts_meta (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version TEXT
);
INSERT INTO facts_meta (id, version) VALUES (1, NULL);
ALTER TABLE shapes ADD COLUMN class_id INTEGER REFERENCES fact_classes (id);
ALTER TABLE offers ADD COLUMN facts_id INTEGER REFERENCES facts (id);
-- A set's current offers cheapest first, in the store's tie order (provider and purchase
-- are fixed within a set).
CREATE INDEX offers_current_facts ON offers (facts_id, price, region, zone, instance_type) WHERE price IS NOT NULL;
-- Current offers without a set: empty but during a write, so a reader tells in one
-- probe that every current offer is in one, and a write finds those it must place.
CREATE INDEX offers_facts_missing ON offers (id) WHERE price IS NOT NULL AND facts_id IS NULL;
CREATE INDEX shapes_class_missing ON shapes (id) WHERE class_id IS NULL;
-- An offer whose shape or CUDA ceiling changes leaves its set; the write places it
-- again at its end (store.classifyFacts).
CREATE TRIGGER offers_facts_moved AFTER UPDATE OF shape_id, host_max_cuda ON offers
    WHEN NEW.facts_id IS NOT NULL AND (NEW.shape_id IS NOT OLD.shape_id OR NEW.host_max_cuda IS NOT OLD.host_max_cuda)
BEGIN
    UPDATE offers SET facts_id = NULL WHERE id = NEW.id;
END;
-- The sets' cheapest offers in one row (the offers image's encoding, store/image.go),
-- rebuilt by every write: a cold recommend over a marketplace decodes one row instead of
-- stepping through a few thousand. version is as offers_image's.
CREATE TABLE facts_image (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,
    data    BLOB    NOT NULL
);
