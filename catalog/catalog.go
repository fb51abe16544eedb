// Package catalog is picker's embedded default price catalog: a snapshot of 2,482 GPU
// instance offers from 15 providers (shared/data/gpu_offers_snapshot.csv, dated per
// row; sources in shared/data/README.md). It is what lets every command work offline,
// with no config and no credentials: the first run seeds an empty database from it.
//
// catalog imports store (to seed it) and pricing; store does not import catalog, so
// the store stays a plain SQLite layer that knows nothing of where prices come from.
package catalog

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

//go:embed gpu_offers_snapshot.csv
var snapshotCSV []byte

// FileName is the embedded file's name, used in parse errors.
const FileName = "gpu_offers_snapshot.csv"

// Source is the pricing.Offer Source of every catalog offer, so answers can say a
// price came from the snapshot and not from a live refresh.
const Source = "snapshot"

// UndatedObserved is the observation time given to rows with an empty source_date:
// the skypilot-catalog rows, whose commit hashes are known but not their dates. The
// data README says to treat them as "no later than 2026-08", so they are dated
// 2026-08-01 rather than today, which would make old prices look fresh.
var UndatedObserved = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)

var parsed = sync.OnceValues(func() ([]pricing.Offer, error) {
	offers, err := pricing.ParseOffersCSV(bytes.NewReader(snapshotCSV), FileName, UndatedObserved)
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "embedded catalog: %w", err)
	}
	for i := range offers {
		offers[i].Source = Source
	}
	return offers, nil
})

// Offers returns the catalog's offers: one on-demand offer per row with an on-demand
// price and one spot offer per row with a spot price, Source "snapshot", ObservedAt
// the row's date (UndatedObserved when it has none). Fractional rows (vGPU slices,
// gpu_count < 1) are included; Offer.Fractional says which. The slice is the
// caller's to modify.
func Offers() ([]pricing.Offer, error) {
	offers, err := parsed()
	return slices.Clone(offers), err
}

// SnapshotDate is the newest source_date in the snapshot (rows without a date are
// not counted: their date is an assumption, see UndatedObserved).
func SnapshotDate() time.Time { return snapshotDate() }

var snapshotDate = sync.OnceValue(func() time.Time {
	r := csv.NewReader(bytes.NewReader(snapshotCSV))
	recs, err := r.ReadAll()
	if err != nil || len(recs) == 0 {
		return time.Time{}
	}
	col := slices.Index(recs[0], "source_date")
	var newest time.Time
	for _, rec := range recs[1:] {
		if col < 0 || col >= len(rec) {
			continue
		}
		if t, err := time.Parse(time.DateOnly, strings.TrimSpace(rec[col])); err == nil && t.After(newest) {
			newest = t
		}
	}
	return newest
})

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

// Seed writes the catalog into st, each provider as one refresh dated by its newest
// row, all providers in one transaction: a crash during the first run leaves an empty
// database (seeded again next time), never a half-seeded one that looks complete.
// On a database that already holds live prices it would replace them with the
// snapshot's (closing offers the snapshot lacks); use EnsureSeeded for the first-run
// path.
func Seed(ctx context.Context, st *store.Store) (SeedResult, error) {
	writes, res, err := plan()
	if err != nil {
		return res, err
	}
	if _, err := st.WriteSnapshots(ctx, writes); err != nil {
		return SeedResult{}, err
	}
	res.Seeded = true
	return res, nil
}

// EnsureSeeded seeds st when it is empty (no offers and no refresh runs) and does
// nothing otherwise. Emptiness is checked inside the seeding transaction, so two
// processes starting on a fresh database seed it once.
func EnsureSeeded(ctx context.Context, st *store.Store) (SeedResult, error) {
	// Every command calls this: a database in use answers one cheap query instead of
	// parsing the embedded CSV. The check inside the transaction still decides.
	if empty, err := st.Empty(ctx); err != nil || !empty {
		return SeedResult{}, err
	}
	writes, res, err := plan()
	if err != nil {
		return res, err
	}
	_, wrote, err := st.WriteSnapshotsIfEmpty(ctx, writes)
	if err != nil || !wrote {
		return SeedResult{}, err
	}
	res.Seeded = true
	return res, nil
}

// plan groups the catalog's offers by provider into store writes.
func plan() ([]store.ProviderWrite, SeedResult, error) {
	offers, err := Offers()
	if err != nil {
		return nil, SeedResult{}, err
	}
	byProvider := map[string][]pricing.Offer{}
	for _, o := range offers {
		byProvider[o.Provider] = append(byProvider[o.Provider], o)
	}
	names := make([]string, 0, len(byProvider))
	for p := range byProvider {
		names = append(names, p)
	}
	slices.Sort(names)
	var writes []store.ProviderWrite
	res := SeedResult{Offers: len(offers)}
	for _, p := range names {
		var newest time.Time
		for _, o := range byProvider[p] {
			if o.ObservedAt.After(newest) {
				newest = o.ObservedAt
			}
		}
		writes = append(writes, store.ProviderWrite{Provider: p, Input: store.WriteInput{
			Offers: byProvider[p], Started: newest, Finished: newest,
		}})
		res.Providers = append(res.Providers, ProviderSeed{Provider: p, Offers: len(byProvider[p]), Date: newest})
	}
	return writes, res, nil
}
