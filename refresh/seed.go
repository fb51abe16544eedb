package refresh

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/snapshot"
	"github.com/pickergpu/picker/store"
)

// SeedStore is what seeding needs of the store.
type SeedStore interface {
	Empty(ctx context.Context) (bool, error)
	WriteSnapshotsIfEmpty(ctx context.Context, writes []store.ProviderWrite) ([]store.WriteResult, bool, error)
}

// SeedResult says what seeding wrote.
type SeedResult struct {
	// Seeded is false when EnsureSeeded found the database already in use.
	Seeded    bool
	Offers    int
	Providers []ProviderSeed // by provider name
}

// ProviderSeed is one provider's part of the seed.
type ProviderSeed struct {
	Provider string
	Offers   int
	// Date is the provider's newest row date: the seed's refresh run is recorded
	// as started and finished then, so `picker providers` shows the snapshot's real
	// age rather than the moment the database was created.
	Date time.Time
}

// EnsureSeeded writes src's offers into st when st is empty (no offers and no refresh
// runs) and does nothing otherwise. The offers go through the step that writes a
// refresh (prepare), one refresh per provider named in the offers, dated by that
// provider's newest offer, all providers in one transaction: a crash during the first
// run leaves an empty database (seeded again next time), never a half-seeded one that
// looks complete. Emptiness is checked again inside that transaction, so two processes
// starting on a fresh database seed it once.
func EnsureSeeded(ctx context.Context, st SeedStore, src providers.Provider) (SeedResult, error) {
	// Every command calls this: a database in use answers one cheap query instead of
	// fetching (for the snapshot: parsing the embedded CSV). The transaction decides.
	if empty, err := st.Empty(ctx); err != nil || !empty {
		return SeedResult{}, err
	}
	snap, err := src.Fetch(ctx)
	if err != nil {
		return SeedResult{}, err
	}
	byProvider := map[string][]pricing.Offer{}
	for _, o := range snap.Offers {
		byProvider[o.Provider] = append(byProvider[o.Provider], o)
	}
	names := make([]string, 0, len(byProvider))
	for p := range byProvider {
		names = append(names, p)
	}
	slices.Sort(names)
	var writes []store.ProviderWrite
	res := SeedResult{Offers: len(snap.Offers)}
	for _, p := range names {
		var newest time.Time
		for _, o := range byProvider[p] {
			if o.ObservedAt.After(newest) {
				newest = o.ObservedAt
			}
		}
		in, err := prepare(p, &providers.Snapshot{Offers: byProvider[p]}, len(byProvider[p]), nil, &Result{}, nil)
		if err != nil {
			return SeedResult{}, err
		}
		in.Offers = byProvider[p]
		in.Started, in.Finished = newest, newest
		writes = append(writes, store.ProviderWrite{Provider: p, Input: in})
		res.Providers = append(res.Providers, ProviderSeed{Provider: p, Offers: len(byProvider[p]), Date: newest})
	}
	_, wrote, err := st.WriteSnapshotsIfEmpty(ctx, writes)
	if err != nil || !wrote {
		return SeedResult{}, err
	}
	res.Seeded = true
	return res, nil
}

// Snapshot is the provider of the embedded price snapshot (package snapshot): one
// on-demand offer per row with an on-demand price and one spot offer per row with a
// spot price, Source pricing.SourceSnapshot, ObservedAt the row's date
// (snapshot.UndatedObserved when it has none). Fractional rows (vGPU slices,
// gpu_count < 1) are included. The CSV is parsed once per process, on first Fetch.
var Snapshot providers.Provider = snapshotProvider{}

type snapshotProvider struct{}

var snapshotOffers = sync.OnceValues(func() ([]pricing.Offer, error) {
	offers, err := pricing.ParseOffersCSV(bytes.NewReader(snapshot.CSV()), snapshot.FileName, snapshot.UndatedObserved)
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "embedded snapshot: %w", err)
	}
	for i := range offers {
		offers[i].Source = pricing.SourceSnapshot
	}
	return offers, nil
})

// Fetch returns the snapshot's offers; the slice is the caller's to modify.
func (snapshotProvider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	offers, err := snapshotOffers()
	if err != nil {
		return nil, err
	}
	return &providers.Snapshot{Offers: slices.Clone(offers)}, nil
}
