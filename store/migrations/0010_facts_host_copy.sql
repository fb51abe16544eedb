-- Host facts in each fit-fact set's cheapest copy (0009): the set read returns every
-- offer with its pricing.Host as the offers read does, so a marketplace whose hosts
-- state facts reads a few thousand sets, not every offer (issue 29). The copy is the
-- cheapest offer's own host facts, written beside c_price by every write of the set's
-- provider (store.classifyFacts), NULL when c_price is. A set's max_cuda is from now on
-- the class of its offers' CUDA ceilings (recommend.CUDAClass), no longer one ceiling:
-- the rules' version moved with it (recommend.FactsVersion), so the next write
-- reclassifies every shape and fills these columns; until then readers read by shape.
ALTER TABLE facts ADD COLUMN c_host_reliability REAL;
ALTER TABLE facts ADD COLUMN c_host_max_cuda REAL;
ALTER TABLE facts ADD COLUMN c_host_driver TEXT;
ALTER TABLE facts ADD COLUMN c_host_net_up_mbps REAL;
ALTER TABLE facts ADD COLUMN c_host_net_down_mbps REAL;
ALTER TABLE facts ADD COLUMN c_host_disk_gb REAL;
ALTER TABLE facts ADD COLUMN c_host_verification TEXT;
-- recommend's exclusion counts (store.CountByGPUCUDA) sum c_count per GPU model, count,
-- memory and CUDA class over every set of the excluded models: a marketplace with host
-- facts has thousands, and this narrow index, covering every shape filter's column
-- (purchase, provider, count, memory), costs a third of a scan of their wide rows.
CREATE INDEX facts_counts ON facts (gpu_model, purchase, provider, gpu_count, gpu_mem_gib, max_cuda, c_count);
