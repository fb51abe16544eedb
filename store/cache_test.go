package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// A cached store answers exactly as an uncached one, before and after writes by
// itself and by another handle (another process), and a caller cannot change what
// later callers get.
func TestOfferCache(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	other, err := Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	write := func(st *Store, h int, offers ...pricing.Offer) {
		t.Helper()
		if _, err := st.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(h), offers...), Finished: at(h)}); err != nil {
			t.Fatal(err)
		}
	}
	write(s, 0, mk("aws", "us-east-1", "p4d", pricing.OnDemand, 32), mk("aws", "us-west-2", "p4d", pricing.OnDemand, 33))
	s.CacheOffers(1000)
	queries := []Query{{}, {Regions: []string{"us-west-2"}}, {Limit: 1}, {MaxPriceUSDHr: 32.5}}
	check := func(when string) {
		t.Helper()
		for _, q := range queries {
			for range 2 { // a miss, then a hit
				got, err := s.Offers(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				want, err := s.queryOffers(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: cached Offers(%+v) = %v; want %v", when, q, got, want)
				}
			}
		}
	}
	check("first")
	got, _ := s.Offers(ctx, Query{})
	got[0].PriceUSDHr = 1e9
	check("after a caller changed its result")
	write(s, 1, mk("aws", "us-east-1", "p4d", pricing.OnDemand, 30))
	check("after a write")
	write(other, 2, mk("aws", "us-east-1", "p4d", pricing.OnDemand, 29), mk("aws", "eu-west-1", "p4d", pricing.Spot, 12))
	check("after another process's write")
	if o, _ := s.Offers(ctx, Query{}); len(o) != 2 || o[0].PriceUSDHr != 12 {
		t.Errorf("after another handle's write: %v; want its 2 offers", o)
	}
	// The bound holds: results larger than it are not kept.
	s.CacheOffers(1)
	check("with a bound of 1 offer")
	if s.cache.held > 1 {
		t.Errorf("cache holds %d offers; bound is 1", s.cache.held)
	}
}
