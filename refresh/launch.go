package refresh

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/store"
)

// LaunchStore is a Store that also keeps what says whether an offer can be launched
// (issue 24): the account's quotas and the providers' capacity word. store.Store is
// one; a Store that is not gets neither (tests' fakes).
type LaunchStore interface {
	QuotaStatuses(ctx context.Context) ([]store.QuotaStatus, error)
	WriteQuotas(ctx context.Context, provider string, r store.QuotaRead) error
	WriteCapacity(ctx context.Context, provider string, regions []string, offers []pricing.Offer, at time.Time) error
}

// quotaDue reports whether this refresh of job should read the account's quotas: the
// provider's newest quota read (good or failed) is older than job.QuotaEvery, the
// schedule period, or there was none. Quotas change by support ticket, so a refresh
// that runs more often than its schedule (`picker refresh` by hand) reuses them; the
// read is bounded to one call per region and family (the adapters') per period.
func quotaDue(ctx context.Context, ls LaunchStore, job Job, now time.Time) bool {
	sts, err := ls.QuotaStatuses(ctx)
	if err != nil {
		return true // the write will say what is wrong with the store
	}
	for _, st := range sts {
		if st.Provider == job.Name {
			// 5 % slack: a daemon refreshing every period must not skip every other read
			// because the previous one started a moment later in its run.
			return now.Sub(st.Attempted) >= job.QuotaEvery-job.QuotaEvery/20
		}
	}
	return true
}

// capacityTap collects, from the parts a fetch hands over, the offers whose provider
// said whether they can be launched now: a few hundred at most (the providers that say
// so are small catalogues), kept by key and availability only.
type capacityTap struct {
	mu     sync.Mutex
	offers []pricing.Offer
}

func (c *capacityTap) add(part []pricing.Offer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range part {
		if o.Available.Known() {
			c.offers = append(c.offers, pricing.Offer{Provider: o.Provider, Region: o.Region, Zone: o.Zone,
				InstanceType: o.InstanceType, Purchase: o.Purchase, ObservedAt: o.ObservedAt, Available: o.Available})
		}
	}
}

// writeLaunch stores, when st is a LaunchStore, the launch data of a fetch that
// succeeded, before its offers are written (the offers' write moves the data version
// readers cache by, so no reader keeps an answer made before this). A failure here is logged, never the refresh's failure:
// the prices are good whatever the quotas did.
func writeLaunch(ctx context.Context, st any, job Job, snap *providers.Snapshot, tap *capacityTap, at time.Time) {
	ls, ok := st.(LaunchStore)
	if !ok || snap == nil {
		return
	}
	if q := snap.Quotas; q != nil {
		r := store.QuotaRead{Account: q.Account, Quotas: q.Quotas, Regions: q.Regions, Requests: q.Requests, At: at}
		for region, err := range q.Failed {
			if r.Failed == nil {
				r.Failed = map[string]string{}
			}
			if job.Redact != nil {
				err = job.Redact(err)
			}
			r.Failed[region] = err.Error()
		}
		if err := ls.WriteQuotas(ctx, job.Name, r); err != nil {
			slog.Warn("quotas not stored; the last good ones stay", "provider", job.Name, "error", err)
		}
	}
	if tap != nil && len(tap.offers) > 0 {
		if err := ls.WriteCapacity(ctx, job.Name, snap.Regions, tap.offers, at); err != nil {
			slog.Warn("capacity not stored", "provider", job.Name, "error", err)
		}
	}
}
