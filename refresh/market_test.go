package refresh

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/store"
)

// TestRunStoresMarketData: a refresh asks its fetch for spot bands and storage prices
// when the last read is a day old or more (not on every refresh), stores what it got in
// a real store with a failed part's error redacted, and a failed refresh stores none.
func TestRunStoresMarketData(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "picker.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	var asked []bool
	fail := false
	fetch := fetchFunc(func(ctx context.Context) (*providers.Snapshot, error) {
		asked = append(asked, providers.WantsMarket(ctx))
		if fail {
			return nil, errors.New("provider down")
		}
		os := offers(2)
		snap := &providers.Snapshot{Offers: os}
		if providers.WantsMarket(ctx) {
			snap.Market = &providers.MarketReport{Regions: []string{os[0].Region}, Requests: 3,
				Spot: []pricing.SpotBand{{Provider: "p", Region: os[0].Region, InstanceType: os[0].InstanceType, LowPct: 22, HighPct: 100,
					PeriodHours: pricing.HoursPerMonth, Label: ">20%", Source: "advisor", ObservedAt: clock}},
				Storage: []pricing.StoragePrice{{Provider: "p", Region: os[0].Region, Product: "gp3", USDPerGiBMonth: 0.08, Source: "api", ObservedAt: clock}},
				Failed:  map[string]error{"placement-scores": errors.New("denied for key SECRET")}}
		}
		return snap, nil
	})
	job := Job{Name: "p", Provider: fetch, Redact: func(err error) error { return errors.New(strings.ReplaceAll(err.Error(), "SECRET", "[redacted]")) }}
	for _, step := range []time.Duration{0, 6 * time.Hour, 18 * time.Hour} { // at 0, 6 h, 24 h
		clock = clock.Add(step)
		if r := Run(ctx, st, job, now); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if !slices.Equal(asked, []bool{true, false, true}) {
		t.Errorf("market data asked %v; want at the first refresh and again after a day", asked)
	}
	bands, err := st.SpotBands(ctx)
	if err != nil || len(bands) != 1 || bands[0].Label != ">20%" || !bands[0].ObservedAt.Equal(clock) {
		t.Errorf("bands %+v, %v", bands, err)
	}
	sts, _ := st.MarketStatuses(ctx)
	if len(sts) != 1 || sts[0].Error != "placement-scores: denied for key [redacted]" || sts[0].Requests != 3 || !sts[0].Attempted.Equal(clock) {
		t.Errorf("market status %+v", sts)
	}
	// A failed refresh a day later asks, gets nothing, and records no read.
	fail = true
	clock = clock.Add(24 * time.Hour)
	if r := Run(ctx, st, job, now); r.Err == nil {
		t.Fatal("a failing fetch succeeded")
	}
	if sts, _ := st.MarketStatuses(ctx); len(sts) != 1 || sts[0].Attempted.Equal(clock) {
		t.Errorf("after a failed refresh: %+v; want the last read's row unchanged", sts)
	}
	if p, _ := st.StoragePrices(ctx); len(p) != 1 || p[0].USDPerGiBMonth != 0.08 {
		t.Errorf("storage after a failed refresh: %+v", p)
	}
}
