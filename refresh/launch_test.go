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

// TestRunStoresLaunchData: a refresh asks its fetch for quotas when the last read is
// older than the schedule period (and not otherwise), stores the quotas it got (a
// failed region's error redacted) and the capacity word of the offers that carry one,
// all in a real store.
func TestRunStoresLaunchData(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "picker.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	var asked []bool
	fetch := fetchFunc(func(ctx context.Context) (*providers.Snapshot, error) {
		asked = append(asked, providers.WantsQuotas(ctx))
		os := offers(3)
		os[0].Available, os[1].Available = pricing.SoldOut, pricing.AvailableNow
		snap := &providers.Snapshot{Offers: os}
		if providers.WantsQuotas(ctx) {
			snap.Quotas = &providers.QuotaReport{Account: "acct", Regions: []string{os[0].Region}, Requests: 4,
				Quotas: []pricing.Quota{{Provider: "p", Account: "acct", Region: os[0].Region, Code: "L-417A185B", Name: "Running On-Demand P instances",
					Family: "P", Purchase: pricing.OnDemand, Unit: pricing.QuotaVCPU, Limit: 0, ObservedAt: clock}},
				Failed: map[string]error{"eu-west-1": errors.New("denied for key SECRET")}}
		}
		return snap, nil
	})
	job := Job{Name: "p", Provider: fetch, QuotaEvery: 6 * time.Hour,
		Redact: func(err error) error { return errors.New(strings.ReplaceAll(err.Error(), "SECRET", "[redacted]")) }}
	for _, step := range []time.Duration{0, time.Hour, 5 * time.Hour} { // at 0, 1 h, 6 h
		clock = clock.Add(step)
		if r := Run(ctx, st, job, now); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if !slices.Equal(asked, []bool{true, false, true}) {
		t.Errorf("quotas asked %v; want at the first refresh and again once the 6 h period passed", asked)
	}
	qs, err := st.Quotas(ctx)
	if err != nil || len(qs) != 1 || qs[0].Code != "L-417A185B" || qs[0].Account != "acct" {
		t.Fatalf("stored quotas %+v, %v", qs, err)
	}
	sts, _ := st.QuotaStatuses(ctx)
	if len(sts) != 1 || sts[0].Error != "eu-west-1: denied for key [redacted]" || !sts[0].Attempted.Equal(clock) || sts[0].Requests != 4 {
		t.Errorf("quota status %+v", sts)
	}
	c, err := st.ReadCapacity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := offers(3)
	if len(c) != 2 || c[o[0].Key()].Available != pricing.SoldOut || c[o[1].Key()].Available != pricing.AvailableNow {
		t.Errorf("capacity %+v; want offer 0 sold out, offer 1 available, offer 2 unknown", c)
	}
}
