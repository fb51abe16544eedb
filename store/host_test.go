package store

import (
	"context"
	"slices"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// TestHostFacts: host facts land in the offer's row, come back from Offers, are
// rewritten when a refresh states others at the same price (and cleared when it states
// none), and hasHostFacts sees them only while a current offer states one.
func TestHostFacts(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	host := pricing.Host{Reliability: 0.97, MaxCUDA: 12.2, Driver: "535.183.01", NetUpMbps: 77.7, NetDownMbps: 105.9, DiskGB: 1607.9, Verification: pricing.HostVerified}
	market := mk("vast", "US", "1x_RTX-4090_m1", pricing.OnDemand, 0.25)
	market.GPUModel, market.GPUMemGiB = "RTX4090", 24
	market.Host = host
	cloud := mk("aws", "us-east-1", "g5.xlarge", pricing.OnDemand, 1.0)
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: []pricing.Offer{cloud}, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	if has, err := hasHostFacts(ctx, s.db); err != nil || has {
		t.Fatalf("hasHostFacts with clouds only = %v, %v; want false", has, err)
	}
	read := func() map[string]pricing.Host {
		t.Helper()
		offers, err := s.Offers(ctx, Query{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]pricing.Host{}
		for _, o := range offers {
			out[o.InstanceType] = o.Host
		}
		return out
	}
	write := func(h int, o pricing.Offer) WriteResult {
		t.Helper()
		r, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: []pricing.Offer{o}, Finished: at(h)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	write(1, market)
	got := read()
	equal(t, "vast host facts", got["1x_RTX-4090_m1"], host)
	equal(t, "aws host facts", got["g5.xlarge"], pricing.Host{})
	if has, err := hasHostFacts(ctx, s.db); err != nil || !has {
		t.Fatalf("hasHostFacts = %v, %v; want true", has, err)
	}

	// The host's driver was upgraded; the price did not move: no new price interval,
	// the facts rewritten.
	upgraded := market
	upgraded.Host.MaxCUDA, upgraded.Host.Driver = 12.8, "570.124.06"
	r := write(2, upgraded)
	equal(t, "prices changed", r.PricesChanged(), 0)
	equal(t, "upgraded host", read()["1x_RTX-4090_m1"], upgraded.Host)

	// A listing that states nothing clears the facts: unknown, not the old ones.
	plain := market
	plain.Host = pricing.Host{}
	write(3, plain)
	equal(t, "cleared host", read()["1x_RTX-4090_m1"], pricing.Host{})
	if has, _ := hasHostFacts(ctx, s.db); has {
		t.Error("hasHostFacts after the facts were cleared = true")
	}
}

// TestMinReliability: the floor leaves out hosts that state a lower score and keeps
// those at or above it and every offer that states none.
func TestMinReliability(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	var offers []pricing.Offer
	for i, rel := range []float64{0, 0.9, 0.98, 0.995} {
		o := mk("vast", "US", "host"+ftoa(float64(i)), pricing.OnDemand, 1+float64(i))
		o.Host.Reliability = rel
		offers = append(offers, o)
	}
	if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: offers, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		min  float64
		want []string
	}{
		{0, []string{"host0", "host1", "host2", "host3"}},
		{0.98, []string{"host0", "host2", "host3"}},
		{0.999, []string{"host0"}},
	} {
		got, err := s.Offers(ctx, Query{MinReliability: tt.min})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range got {
			names = append(names, o.InstanceType)
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("MinReliability %v: %v, want %v", tt.min, names, tt.want)
		}
	}
}
