-- picker's price store, first schema.
--
-- Times are INTEGER unix seconds, UTC, on purpose: they compare, sort and index as plain
-- integers, carry no time zone to misread, and are what every interval query needs.
-- Prices are REAL USD per hour for the whole instance.

-- One row per offer identity (provider, region, zone, instance type, purchase). The facts
-- are overwritten by each refresh that lists the offer. price/last_seen denormalise the
-- current state so current-offer queries read this one indexed table: price is the open
-- interval's price, NULL once the offer is closed (no longer listed); rows are never
-- deleted while they have history.
CREATE TABLE offers (
    id            INTEGER PRIMARY KEY,
    provider      TEXT    NOT NULL,
    region        TEXT    NOT NULL,
    zone          TEXT    NOT NULL DEFAULT '',
    instance_type TEXT    NOT NULL,
    purchase      TEXT    NOT NULL CHECK (purchase IN ('on-demand', 'spot')),
    -- Canonical name from the GPU catalog (or the provider's raw name when unknown);
    -- NOCASE so --gpu-model h100 finds H100 through the index.
    gpu_model     TEXT    NOT NULL COLLATE NOCASE,
    gpu_count     REAL    NOT NULL CHECK (gpu_count > 0),
    -- Memory of one whole GPU, as in the snapshot: a 1/8 slice of an L4 says 0.125 x 22.35.
    gpu_mem_gib   REAL    NOT NULL CHECK (gpu_mem_gib > 0),
    vcpus         REAL    NOT NULL DEFAULT 0,
    ram_gib       REAL    NOT NULL DEFAULT 0,
    currency      TEXT    NOT NULL,
    source        TEXT    NOT NULL DEFAULT '',
    -- Derived, so they can never disagree with the facts: a partitioned GPU (vGPU slice)
    -- sees gpu_count x gpu_mem_gib of memory, which is also the instance's total.
    fractional    INTEGER GENERATED ALWAYS AS (gpu_count < 1) VIRTUAL,
    vram_gib      REAL    GENERATED ALWAYS AS (CASE WHEN gpu_count < 1 THEN gpu_count * gpu_mem_gib ELSE gpu_mem_gib END) VIRTUAL,
    total_vram_gib REAL   GENERATED ALWAYS AS (gpu_count * gpu_mem_gib) VIRTUAL,
    price         REAL    CHECK (price IS NULL OR price > 0),
    last_seen     INTEGER NOT NULL,
    UNIQUE (provider, region, zone, instance_type, purchase)
);

-- Current offers only (price IS NOT NULL), one index per sort order of `offers` and
-- `recommend`, led by the sort key so a query with a LIMIT walks cheapest-first and
-- stops early. The trailing columns are the filter columns: SQLite evaluates the
-- filters from the index entry and visits the table only for rows that pass, which
-- keeps even a query that matches nothing to one pass over the index.
CREATE INDEX offers_current_price ON offers (price, purchase, gpu_count, gpu_mem_gib, provider, region)
    WHERE price IS NOT NULL;
CREATE INDEX offers_current_per_gpu ON offers (price / gpu_count, purchase, gpu_count, gpu_mem_gib, provider, region)
    WHERE price IS NOT NULL;
CREATE INDEX offers_current_per_gib ON offers (price / total_vram_gib, purchase, gpu_count, gpu_mem_gib, provider, region)
    WHERE price IS NOT NULL;
CREATE INDEX offers_current_gpu ON offers (gpu_model, price, purchase, gpu_count, gpu_mem_gib, provider, region)
    WHERE price IS NOT NULL;
-- `picker history --provider P --instance-type T`.
CREATE INDEX offers_instance ON offers (provider, instance_type COLLATE NOCASE);

-- Price history as intervals (a slowly changing dimension): a refresh that sees the same
-- price writes nothing, so the table grows with changes, not with refreshes.
-- valid_to is NULL while the price is current; at most one open interval per offer.
CREATE TABLE prices (
    id         INTEGER PRIMARY KEY,
    offer_id   INTEGER NOT NULL REFERENCES offers (id) ON DELETE CASCADE,
    price      REAL    NOT NULL CHECK (price > 0),
    valid_from INTEGER NOT NULL,
    valid_to   INTEGER CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
CREATE INDEX prices_offer ON prices (offer_id, valid_from);
CREATE UNIQUE INDEX prices_open ON prices (offer_id) WHERE valid_to IS NULL;
-- Pruning deletes closed intervals by end time.
CREATE INDEX prices_closed ON prices (valid_to) WHERE valid_to IS NOT NULL;

-- One row per refresh attempt of a provider (the seed from the embedded snapshot
-- included), successful or not: `picker providers` and the daemon read freshness,
-- the last error and consecutive failures from here.
CREATE TABLE refresh_runs (
    id             INTEGER PRIMARY KEY,
    provider       TEXT    NOT NULL,
    started        INTEGER NOT NULL,
    finished       INTEGER NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN ('ok', 'failed')),
    error          TEXT,
    offers_seen    INTEGER NOT NULL DEFAULT 0,
    prices_changed INTEGER NOT NULL DEFAULT 0,
    offers_closed  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX refresh_runs_provider ON refresh_runs (provider, started, id);
