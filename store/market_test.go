package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

func testBand(region, typ string, lo, hi float64, at time.Time) pricing.SpotBand {
	return pricing.SpotBand{Provider: "aws", Region: region, InstanceType: typ, LowPct: lo, HighPct: hi, PeriodHours: pricing.HoursPerMonth,
		Label: "5-10%", Score: 7, Source: "AWS Spot Instance Advisor", ObservedAt: at}
}

// TestMarketReads: a read replaces the bands and storage prices of the regions it read
// in full and keeps a failed region's last good rows with their older time; it records
// the read (time, requests, what failed) and keeps the last good time through a read
// that found nothing; a bad band or price writes nothing; the rows survive a reopen.
func TestMarketReads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "picker.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(24 * time.Hour)
	gp3 := func(region string, usd float64, at time.Time) pricing.StoragePrice {
		return pricing.StoragePrice{Provider: "aws", Region: region, Product: "gp3", USDPerGiBMonth: usd, Source: "GetProducts", ObservedAt: at}
	}
	if err := s.WriteMarket(ctx, "aws", MarketRead{Regions: []string{"us-east-1", "us-west-2"}, Requests: 5, At: t0,
		Spot:    []pricing.SpotBand{testBand("us-east-1", "g5.xlarge", 22, 100, t0), testBand("us-west-2", "g5.xlarge", 5, 11, t0)},
		Storage: []pricing.StoragePrice{gp3("us-east-1", 0.08, t0), gp3("us-west-2", 0.08, t0)}}); err != nil {
		t.Fatal(err)
	}
	// A day on: us-east-1 read again, us-west-2's EBS price failed.
	b := testBand("us-east-1", "g6.xlarge", 11, 16, t1)
	if err := s.WriteMarket(ctx, "aws", MarketRead{Regions: []string{"us-east-1"}, Requests: 4, At: t1, Spot: []pricing.SpotBand{b},
		Storage: []pricing.StoragePrice{gp3("us-east-1", 0.09, t1)}, Failed: map[string]string{"us-west-2 ebs": "no gp3 price"}}); err != nil {
		t.Fatal(err)
	}
	bands, err := s.SpotBands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []pricing.SpotBand{b, testBand("us-west-2", "g5.xlarge", 5, 11, t0)}; !slices.Equal(bands, want) {
		t.Errorf("bands %+v\nwant %+v (us-east-1's g5 replaced by the new read, us-west-2's kept)", bands, want)
	}
	prices, err := s.StoragePrices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []pricing.StoragePrice{gp3("us-east-1", 0.09, t1), gp3("us-west-2", 0.08, t0)}; !slices.Equal(prices, want) {
		t.Errorf("storage %+v\nwant %+v", prices, want)
	}
	// A read that found nothing: the failure and its time are recorded, the last good
	// time and the rows stay.
	if err := s.WriteMarket(ctx, "aws", MarketRead{At: t1.Add(time.Hour), Failed: map[string]string{"spot-advisor": "HTTP 403"}}); err != nil {
		t.Fatal(err)
	}
	sts, err := s.MarketStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || !sts[0].Attempted.Equal(t1.Add(time.Hour)) || !sts[0].LastOK.Equal(t1) || sts[0].Error != "spot-advisor: HTTP 403" || sts[0].Requests != 0 {
		t.Errorf("statuses %+v; want attempted t1+1h, last ok t1, the advisor's error", sts)
	}
	// Bad data writes nothing.
	bad := testBand("us-east-1", "p5.48xlarge", 30, 20, t1)
	if err := s.WriteMarket(ctx, "aws", MarketRead{Regions: []string{"us-east-1"}, At: t1, Spot: []pricing.SpotBand{bad}}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("band 30-20 %%: error %v; want Invalid", err)
	}
	if err := s.WriteMarket(ctx, "aws", MarketRead{Regions: []string{"us-east-1"}, At: t1, Storage: []pricing.StoragePrice{{Provider: "gcp", Region: "x", Product: "pd-ssd", USDPerGiBMonth: 1}}}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("another provider's price: error %v; want Invalid", err)
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	again, err := s.SpotBands(ctx)
	if err != nil || !slices.Equal(again, bands) {
		t.Errorf("after the failed writes and a reopen: %+v, %v; want %+v", again, err, bands)
	}
}
