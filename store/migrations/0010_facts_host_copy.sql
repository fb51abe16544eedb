-- Host facts in each fit-fact set's cheapest copy (0009): the set read returns every
-- offer with its pricing.Host as the offers read does, so a marketplace whose hosts
-- state facts reads a few thousand sets, not every offer (issue 29). The CUDA ceiling
-- is the set's own max_cuda (every offer of a set has it); the other host facts are the
-- cheapest offer's, copied beside c_price by every write of the set's provider
-- (store.classifyFacts), NULL when c_price is.
ALTER TABLE facts ADD COLUMN c_host_reliability REAL;
ALTER TABLE facts ADD COLUMN c_host_driver TEXT;
ALTER TABLE facts ADD COLUMN c_host_net_up_mbps REAL;
ALTER TABLE facts ADD COLUMN c_host_net_down_mbps REAL;
ALTER TABLE facts ADD COLUMN c_host_disk_gb REAL;
ALTER TABLE facts ADD COLUMN c_host_verification TEXT;
UPDATE facts SET (c_host_reliability, c_host_driver, c_host_net_up_mbps, c_host_net_down_mbps, c_host_disk_gb, c_host_verification) = (
    SELECT host_reliability, host_driver, host_net_up_mbps, host_net_down_mbps, host_disk_gb, host_verification FROM offers WHERE id = (
        SELECT id FROM offers INDEXED BY offers_current_facts WHERE facts_id = facts.id AND price IS NOT NULL
        ORDER BY price, region, zone, instance_type LIMIT 1))
    WHERE c_price IS NOT NULL;
