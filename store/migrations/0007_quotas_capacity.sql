-- Launchability (issue 24): the account's GPU quotas and the providers' word on
-- capacity, beside the prices. Times are unix seconds, as everywhere.

-- The newest good read of each quota (pricing.Quota), per provider, account and region.
-- A region whose read failed keeps its rows; quota_reads says how old they are.
-- usage is NULL where the provider does not report it (AWS keeps it in CloudWatch).
CREATE TABLE quotas (
    provider    TEXT    NOT NULL,
    account     TEXT    NOT NULL,
    region      TEXT    NOT NULL,
    code        TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    family      TEXT    NOT NULL,
    purchase    TEXT    NOT NULL CHECK (purchase IN ('on-demand', 'spot')),
    unit        TEXT    NOT NULL CHECK (unit IN ('vCPU', 'GPU')),
    quota_limit REAL    NOT NULL CHECK (quota_limit >= 0),
    usage       REAL    CHECK (usage IS NULL OR usage >= 0),
    observed    INTEGER NOT NULL,
    PRIMARY KEY (provider, account, region, code)
) WITHOUT ROWID;

-- One row per provider: its newest quota read, good or not. account is the account
-- that read answered for (recommend uses that account's quotas only); last_ok the
-- newest read that landed any region; error what the newest read's failed regions
-- said (NULL when none failed).
CREATE TABLE quota_reads (
    provider       TEXT    PRIMARY KEY,
    account        TEXT    NOT NULL DEFAULT '',
    attempted      INTEGER NOT NULL,
    last_ok        INTEGER,
    error          TEXT,
    regions_ok     INTEGER NOT NULL DEFAULT 0,
    regions_failed INTEGER NOT NULL DEFAULT 0,
    requests       INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Offer capacity (pricing.Availability): what the newest refresh of a provider said of
-- each offer it listed (Lambda's regions with capacity, RunPod's stock status, ...), in
-- the regions that refresh covered. Offers without a row are unknown, ranked as
-- launchable.
CREATE TABLE capacity (
    provider      TEXT    NOT NULL,
    region        TEXT    NOT NULL,
    zone          TEXT    NOT NULL,
    instance_type TEXT    NOT NULL,
    purchase      TEXT    NOT NULL,
    available     INTEGER NOT NULL CHECK (available IN (0, 1)),
    observed      INTEGER NOT NULL,
    PRIMARY KEY (provider, region, zone, instance_type, purchase)
) WITHOUT ROWID;
