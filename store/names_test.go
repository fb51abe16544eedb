package store

import (
	"context"
	"slices"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// TestOfferNames: the providers and regions OfferNames lists are those of the current
// offers (Offers' answer), each once; an offer a later refresh dropped (its price
// interval closed) no longer names its region.
func TestOfferNames(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	write := func(h int, provider string, offers ...pricing.Offer) {
		t.Helper()
		if _, err := s.WriteSnapshot(ctx, provider, WriteInput{Offers: observed(at(h), offers...), Finished: at(h)}); err != nil {
			t.Fatal(err)
		}
	}
	write(0, "aws", mk("aws", "us-east-1", "a", pricing.OnDemand, 1), mk("aws", "us-east-1", "b", pricing.Spot, 2), mk("aws", "eu-west-1", "a", pricing.OnDemand, 3))
	write(0, "lambda", mk("lambda", "us-south-1", "g", pricing.OnDemand, 4))
	write(1, "lambda", mk("lambda", "us-west-2", "g", pricing.OnDemand, 4)) // us-south-1's offer is gone
	all, err := s.Offers(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	var wantP, wantR []string
	for _, o := range all {
		wantP, wantR = append(wantP, o.Provider), append(wantR, o.Region)
	}
	provs, regions, err := s.OfferNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{{"providers", provs, wantP}, {"regions", regions, wantR}} {
		slices.Sort(c.want)
		c.want = slices.Compact(c.want)
		slices.Sort(c.got)
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s %v; want those of the current offers, %v", c.name, c.got, c.want)
		}
	}
	if slices.Contains(regions, "us-south-1") {
		t.Error("a region whose only offer is gone is still listed")
	}
}
