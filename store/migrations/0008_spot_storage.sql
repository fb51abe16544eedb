-- The all-in bill and spot risk (issue 24): spot interruption bands and block-storage
-- prices, beside the offers' prices, each with its time. Times are unix seconds.

-- The newest good read of each spot band (pricing.SpotBand): AWS Spot Instance Advisor's
-- band per region and instance type, with AWS's Spot Placement Score where credentials
-- let refresh ask (0: not asked). A region whose read failed keeps its rows.
CREATE TABLE spot_bands (
    provider      TEXT    NOT NULL,
    region        TEXT    NOT NULL,
    instance_type TEXT    NOT NULL,
    low_pct       REAL    NOT NULL CHECK (low_pct >= 0),
    high_pct      REAL    NOT NULL CHECK (high_pct >= low_pct AND high_pct <= 100),
    period_hours  REAL    NOT NULL CHECK (period_hours > 0),
    label         TEXT    NOT NULL,
    score         INTEGER NOT NULL DEFAULT 0 CHECK (score BETWEEN 0 AND 10),
    source        TEXT    NOT NULL,
    observed      INTEGER NOT NULL,
    PRIMARY KEY (provider, region, instance_type)
) WITHOUT ROWID;

-- The newest good read of each block-storage price (pricing.StoragePrice): per GiB-month
-- (EBS gp3, Persistent Disk) or per disk of size_gib a month (Azure managed-disk tiers).
CREATE TABLE storage_prices (
    provider          TEXT    NOT NULL,
    region            TEXT    NOT NULL,
    product           TEXT    NOT NULL,
    usd_per_gib_month REAL    NOT NULL DEFAULT 0 CHECK (usd_per_gib_month >= 0),
    size_gib          REAL    NOT NULL DEFAULT 0 CHECK (size_gib >= 0),
    usd_per_month     REAL    NOT NULL DEFAULT 0 CHECK (usd_per_month >= 0),
    source            TEXT    NOT NULL,
    observed          INTEGER NOT NULL,
    PRIMARY KEY (provider, region, product)
) WITHOUT ROWID;

-- One row per provider: its newest spot/storage read, good or not, and the calls it made.
CREATE TABLE market_reads (
    provider  TEXT    PRIMARY KEY,
    attempted INTEGER NOT NULL,
    last_ok   INTEGER,
    error     TEXT,
    requests  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
