-- Host facts (pricing.Host): what a marketplace states about the one machine behind an
-- offer (Vast.ai, TensorDock). They are fit facts of the offer, kept as plain columns of
-- its row and overwritten by each refresh that lists it, like the GPU facts. 0 and ''
-- mean "not stated" (every cloud offer): an unknown fact never excludes an offer.
--   host_reliability   0..1, the provider's score (Vast reliability2, TensorDock uptime)
--   host_max_cuda      newest CUDA the host's driver supports (Vast cuda_max_good)
--   host_driver        NVIDIA driver version, e.g. '535.183.01'
--   host_net_up_mbps, host_net_down_mbps   internet speed, Mb/s
--   host_disk_gb       disk the host can give the instance, GB
--   host_verification  'verified', 'unverified' or ''
ALTER TABLE offers ADD COLUMN host_reliability REAL NOT NULL DEFAULT 0;
ALTER TABLE offers ADD COLUMN host_max_cuda REAL NOT NULL DEFAULT 0;
ALTER TABLE offers ADD COLUMN host_driver TEXT NOT NULL DEFAULT '';
ALTER TABLE offers ADD COLUMN host_net_up_mbps REAL NOT NULL DEFAULT 0;
ALTER TABLE offers ADD COLUMN host_net_down_mbps REAL NOT NULL DEFAULT 0;
ALTER TABLE offers ADD COLUMN host_disk_gb REAL NOT NULL DEFAULT 0;
ALTER TABLE offers ADD COLUMN host_verification TEXT NOT NULL DEFAULT '';
-- The current offers that state a host fact recommend judges by (reliability, CUDA):
-- empty for a catalogue of clouds, so one probe tells a reader whether any host facts
-- need reading (store.HasHostFacts).
CREATE INDEX offers_current_host ON offers (provider) WHERE price IS NOT NULL AND (host_reliability > 0 OR host_max_cuda > 0);
