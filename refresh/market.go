package refresh

import (
	"context"
	"log/slog"
	"time"

	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/store"
)

// MarketStore is a Store that also keeps spot interruption bands and block-storage prices
// (issue 24's all-in bill). store.Store is one; a Store that is not gets neither.
type MarketStore interface {
	MarketStatuses(ctx context.Context) ([]store.MarketStatus, error)
	WriteMarket(ctx context.Context, provider string, r store.MarketRead) error
}

// MarketEvery is how often a provider's spot bands and storage prices are read: daily.
// AWS's Spot Instance Advisor file is a trailing month's figure, refreshed daily at most
// (the reference README, section 23: "refresh daily at most"), and Spot Placement
// Scores are limited per account and day; list prices of disks change by announcement.
const MarketEvery = 24 * time.Hour

// marketDue reports whether this refresh of job should read spot bands and storage
// prices: the provider's newest read (good or failed) is older than MarketEvery, or
// there was none.
func marketDue(ctx context.Context, ms MarketStore, job Job, now time.Time) bool {
	sts, err := ms.MarketStatuses(ctx)
	if err != nil {
		return true // the write will say what is wrong with the store
	}
	for _, st := range sts {
		if st.Provider == job.Name {
			return now.Sub(st.Attempted) >= MarketEvery-MarketEvery/20
		}
	}
	return true
}

// withMarket asks the fetch for spot and storage data when st keeps them and a read is
// due.
func withMarket(ctx context.Context, st Store, job Job, now time.Time) context.Context {
	if ms, ok := st.(MarketStore); ok && marketDue(ctx, ms, job, now) {
		return providers.WithMarketRead(ctx)
	}
	return ctx
}

// writeMarket stores, when st is a MarketStore, the spot and storage read of a fetch
// that succeeded, before its offers are written (so no reader caches an answer made
// before it). A failure is logged, never the refresh's failure.
func writeMarket(ctx context.Context, st any, job Job, snap *providers.Snapshot, at time.Time) {
	ms, ok := st.(MarketStore)
	if !ok || snap == nil || snap.Market == nil {
		return
	}
	m := snap.Market
	r := store.MarketRead{Spot: m.Spot, Storage: m.Storage, Regions: m.Regions, Requests: m.Requests, At: at}
	for part, err := range m.Failed {
		if r.Failed == nil {
			r.Failed = map[string]string{}
		}
		if job.Redact != nil {
			err = job.Redact(err)
		}
		r.Failed[part] = err.Error()
	}
	if err := ms.WriteMarket(ctx, job.Name, r); err != nil {
		slog.Warn("spot bands and storage prices not stored; the last good ones stay", "provider", job.Name, "error", err)
	}
}
