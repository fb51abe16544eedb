package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

func testQuota(region, code string, limit float64, at time.Time) pricing.Quota {
	return pricing.Quota{Provider: "aws", Account: "000011112222", Region: region, Code: code, Name: "Running On-Demand P instances",
		Family: "P", Purchase: pricing.OnDemand, Unit: pricing.QuotaVCPU, Limit: limit, ObservedAt: at}
}

// TestQuotaReads: a read replaces the quotas of the regions it covered, keeps a failed
// region's last good ones with their own (older) time, records the failure and the
// read's time; a read that failed everywhere keeps every quota and the account; a new
// account's read hides the old account's rows; a bad quota writes nothing.
func TestQuotaReads(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(6 * time.Hour)
	if err := s.WriteQuotas(ctx, "aws", QuotaRead{Account: "000011112222", Regions: []string{"us-east-1", "us-west-2"}, Requests: 8, At: t0,
		Quotas: []pricing.Quota{testQuota("us-east-1", "L-417A185B", 96, t0), testQuota("us-west-2", "L-417A185B", 192, t0)}}); err != nil {
		t.Fatal(err)
	}
	// Six hours on: us-east-1 is read again (now 0), us-west-2 fails.
	q := testQuota("us-east-1", "L-417A185B", 0, t1)
	if err := s.WriteQuotas(ctx, "aws", QuotaRead{Account: "000011112222", Regions: []string{"us-east-1"}, Requests: 5, At: t1,
		Quotas: []pricing.Quota{q}, Failed: map[string]string{"us-west-2": "AccessDeniedException: not authorized"}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Quotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []pricing.Quota{q, testQuota("us-west-2", "L-417A185B", 192, t0)}
	if !slices.Equal(got, want) {
		t.Fatalf("quotas %+v\nwant %+v", got, want)
	}
	st, err := s.QuotaStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantSt := QuotaStatus{Provider: "aws", Account: "000011112222", Attempted: t1, LastOK: t1, Error: "us-west-2: AccessDeniedException: not authorized",
		RegionsOK: 1, RegionsFailed: 1, Requests: 5, Quotas: 2, Oldest: t0}
	if len(st) != 1 || st[0] != wantSt {
		t.Fatalf("status %+v\nwant %+v", st, wantSt)
	}

	// A read that failed everywhere (no account known) keeps every quota and the account.
	t2 := t1.Add(6 * time.Hour)
	if err := s.WriteQuotas(ctx, "aws", QuotaRead{At: t2, Requests: 2, Failed: map[string]string{"us-east-1": "throttled", "us-west-2": "throttled"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Quotas(ctx); !slices.Equal(got, want) {
		t.Errorf("after a failed read, quotas %+v; want the last good %+v", got, want)
	}
	if st, _ := s.QuotaStatuses(ctx); st[0].Account != "000011112222" || !st[0].LastOK.Equal(t1) || !st[0].Attempted.Equal(t2) || st[0].RegionsOK != 0 {
		t.Errorf("after a failed read, status %+v", st[0])
	}

	// Bad input: nothing written.
	bad := testQuota("us-east-1", "L-417A185B", -1, t2)
	if err := s.WriteQuotas(ctx, "aws", QuotaRead{Account: "000011112222", Regions: []string{"us-east-1"}, Quotas: []pricing.Quota{bad}, At: t2}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("a negative limit: %v; want an Invalid error", err)
	}
	if got, _ := s.Quotas(ctx); !slices.Equal(got, want) {
		t.Errorf("a refused write changed the quotas: %+v", got)
	}

	// Another account's read: only its quotas are current.
	other := testQuota("us-east-1", "L-417A185B", 8, t2)
	other.Account = "999988887777"
	if err := s.WriteQuotas(ctx, "aws", QuotaRead{Account: other.Account, Regions: []string{"us-east-1"}, Quotas: []pricing.Quota{other}, At: t2}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Quotas(ctx); !slices.Equal(got, []pricing.Quota{other}) {
		t.Errorf("after another account's read, quotas %+v; want only %+v", got, other)
	}
}

// TestCapacity: a refresh's capacity word replaces the provider's previous word in the
// regions it covered (an offer no longer reported on is unknown again), keeps other
// regions' and other providers', and offers of unknown availability are not stored.
func TestCapacity(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	offer := func(provider, region, typ string, a pricing.Availability) pricing.Offer {
		return pricing.Offer{Provider: provider, Region: region, InstanceType: typ, Purchase: pricing.OnDemand, ObservedAt: t0, Available: a}
	}
	sold := offer("lambda", "us-east-1", "gpu_8x_h100_sxm5", pricing.SoldOut)
	avail := offer("lambda", "us-west-1", "gpu_8x_h100_sxm5", pricing.AvailableNow)
	gone := offer("lambda", "us-east-1", "gpu_1x_a10", pricing.SoldOut)
	rp := offer("runpod", "US-TX-3", "1x H200", pricing.SoldOut)
	if err := s.WriteCapacity(ctx, "lambda", nil, []pricing.Offer{sold, avail, gone, offer("lambda", "us-east-1", "gpu_1x_h100", pricing.AvailabilityUnknown)}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteCapacity(ctx, "runpod", nil, []pricing.Offer{rp}, t0); err != nil {
		t.Fatal(err)
	}
	// A later refresh of us-east-1 only, no longer reporting on gpu_1x_a10.
	t1 := t0.Add(time.Hour)
	sold.ObservedAt = t1
	if err := s.WriteCapacity(ctx, "lambda", []string{"us-east-1"}, []pricing.Offer{sold}, t1); err != nil {
		t.Fatal(err)
	}
	c, err := s.ReadCapacity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Capacity{sold.Key(): {pricing.SoldOut, t1}, avail.Key(): {pricing.AvailableNow, t0}, rp.Key(): {pricing.SoldOut, t0}}
	if len(c) != len(want) {
		t.Errorf("capacity %+v\nwant %+v", c, want)
	}
	for k, w := range want {
		if c[k] != w {
			t.Errorf("%s: %+v; want %+v", k, c[k], w)
		}
	}
	offers := []pricing.Offer{gone, sold, avail}
	for i := range offers {
		offers[i].Available = pricing.AvailabilityUnknown
	}
	c.Apply(offers)
	if offers[0].Available != pricing.AvailabilityUnknown || offers[1].Available != pricing.SoldOut || offers[2].Available != pricing.AvailableNow {
		t.Errorf("applied: %v %v %v; want unknown, sold out, available", offers[0].Available, offers[1].Available, offers[2].Available)
	}
	st, err := s.CapacityStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantSt := []CapacityStatus{{"lambda", 1, 1, t1}, {"runpod", 0, 1, t0}}
	if !slices.Equal(st, wantSt) {
		t.Errorf("status %+v; want %+v", st, wantSt)
	}
}
