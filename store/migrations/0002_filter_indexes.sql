-- Current offers by region and by provider, cheapest first. A query filtered by region
-- or provider walks these (a handful of entries) instead of the whole price index: a
-- region that matches nothing costs one index probe, not a pass over every offer
-- (BenchmarkOffersQuery "region+no-match").
CREATE INDEX offers_current_region ON offers (region COLLATE NOCASE, price, purchase, gpu_count, gpu_mem_gib, provider)
    WHERE price IS NOT NULL;
CREATE INDEX offers_current_provider ON offers (provider, price, purchase, gpu_count, gpu_mem_gib, region)
    WHERE price IS NOT NULL;
