package store

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// matches is the Go statement of a query's filters that the tests check SQL against:
// every filter, the usable memory of both VRAM floors (and the provider's figure, which
// the shape reads also require), the search words.
func matches(o pricing.Offer, q Query) bool {
	reported := o.GPUMemReportedGiB
	if reported == 0 {
		reported = o.GPUMemGiB
	}
	perDevice := reported
	if o.Fractional() {
		perDevice *= o.GPUCount
	}
	if q.MinVRAMGiB > 0 && (o.MemPerDeviceGiB() < q.MinVRAMGiB || perDevice < q.MinVRAMGiB) {
		return false
	}
	if q.MinTotalVRAMGiB > 0 && (o.TotalGPUMemGiB() < q.MinTotalVRAMGiB || o.GPUCount*reported < q.MinTotalVRAMGiB) {
		return false
	}
	if q.Purchase != "" && o.Purchase != q.Purchase {
		return false
	}
	if len(q.Providers) > 0 && !slices.Contains(q.Providers, o.Provider) {
		return false
	}
	if q.MaxPriceUSDHr > 0 && o.PriceUSDHr > q.MaxPriceUSDHr {
		return false
	}
	hay := strings.ToLower(strings.Join([]string{o.Provider, o.InstanceType, o.GPUModel, o.Region, o.Zone}, "\x00"))
	for _, w := range strings.Fields(strings.ToLower(q.Search)) {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// sortedBy reports the first pair of offers out of k's order, or -1.
func sortedBy(offers []pricing.Offer, k *SortKey, desc bool) int {
	for i := 1; i < len(offers); i++ {
		if k.compare(k.keyOf(&offers[i-1]), k.keyOf(&offers[i]), desc) >= 0 {
			return i
		}
	}
	return -1
}

// TestOffersOrdersAndPages: on random offers in a real database (price ties, zones,
// fractional slices, three providers observed at different times), for every sort key in
// both directions, with filters, VRAM floors and searches, with the cache off and on:
// Offers returns exactly the offers the filters select, in the key's total order (SQL
// ordered keys agree with the Go comparator), and walking the pages by cursor (in one
// direction per key, drawn at random, at random page sizes) meets every one of them
// once, in that order, with Total right on every page.
func TestOffersOrdersAndPages(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(26, 4))
	s := imageStore(t, r)
	every, err := s.queryOffers(ctx, Query{})
	if err != nil || len(every) < 500 {
		t.Fatalf("%d offers, %v", len(every), err)
	}
	queries := []Query{
		{},
		{Purchase: pricing.Spot},
		{MinVRAMGiB: 24},
		{MinVRAMGiB: 260, Providers: []string{"gcp"}},
		{MinTotalVRAMGiB: 300, MaxPriceUSDHr: 60},
		{Search: "H100"},
		{Search: "r0 AWS"},
		{Search: "-a 8", Purchase: pricing.OnDemand},
		{Search: "no-such-thing"},
	}
	for _, cache := range []bool{false, true} {
		if cache {
			s.CacheOffers(100_000)
		}
		for qi, base := range queries {
			if cache && qi%2 == 1 {
				continue // the cache's path is the same code over a remembered read: half the queries do
			}
			var want []pricing.Offer
			for _, o := range every {
				if matches(o, base) {
					want = append(want, o)
				}
			}
			for _, k := range SortKeys() {
				for _, desc := range []bool{false, true} {
					q := base
					q.Sort, q.Desc = k.Name, desc
					got, err := s.Offers(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					if i := sortedBy(got, &k, desc); i >= 0 {
						t.Fatalf("cache %v %+v: offer %d (%v) out of order after %v", cache, q, i, got[i].Key(), got[i-1].Key())
					}
					sorted := slices.Clone(want)
					k.sortInPlace(sorted, desc)
					if !reflect.DeepEqual(got, sorted) && (len(got) > 0 || len(sorted) > 0) {
						t.Fatalf("cache %v %+v: %d offers, the filters in Go select %d (or another order)", cache, q, len(got), len(sorted))
					}
					if desc != (r.IntN(2) == 0) {
						continue // pages are walked in one direction, drawn at random, per key and query
					}
					size := len(got)/(2+r.IntN(4)) + 1 + r.IntN(3) // two to six pages
					var walked []pricing.Offer
					q.Limit = size
					for pages := 0; ; pages++ {
						p, err := s.OffersPage(ctx, q)
						if err != nil {
							t.Fatalf("%+v: %v", q, err)
						}
						if p.Total != len(got) || len(p.Offers) > size {
							t.Fatalf("cache %v %+v: page of %d with total %d; want at most %d of %d", cache, q, len(p.Offers), p.Total, size, len(got))
						}
						walked = append(walked, p.Offers...)
						if p.Next == "" {
							break
						}
						if pages > len(got) {
							t.Fatalf("%+v: more pages than offers", q)
						}
						q.After = p.Next
					}
					if !reflect.DeepEqual(walked, got) && len(got) > 0 {
						t.Errorf("cache %v sort %s desc %v %+v: walking pages of %d met %d offers, want the %d in order", cache, k.Name, desc, base, size, len(walked), len(got))
					}
				}
			}
		}
	}
}

// TestOffersSearch: each word must be part of the provider, instance type, GPU model,
// region or zone, ignoring case; LIKE's wildcards are literal.
func TestOffersSearch(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	l1 := mk("lambda", "us-east-1", "gpu_1x_h100_pcie", pricing.OnDemand, 2.49)
	l1.GPUModel, l1.GPUCount, l1.GPUMemGiB = "H100-PCIE", 1, 80
	l2 := mk("lambda", "us-west-2", "gpu_8x_a100", pricing.OnDemand, 10)
	a := mk("aws", "us-west-2", "p5.48xlarge", pricing.Spot, 30)
	a.GPUModel, a.Zone = "H100", "us-west-2a"
	if _, err := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: []pricing.Offer{l1, l2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: []pricing.Offer{a}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ search, want string }{
		{"", "gpu_1x_h100_pcie gpu_8x_a100 p5.48xlarge"},
		{"lambda h100", "gpu_1x_h100_pcie"},
		{"H100", "gpu_1x_h100_pcie p5.48xlarge"},
		{"US-WEST", "gpu_8x_a100 p5.48xlarge"},
		{"west-2a", "p5.48xlarge"}, // the zone
		{"1x_", "gpu_1x_h100_pcie"},
		{"_", "gpu_1x_h100_pcie gpu_8x_a100"}, // literal, not any character
		{"%", ""},
		{"aws  lambda", ""},
	} {
		got, err := s.Offers(ctx, Query{Search: tc.search})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range got {
			names = append(names, o.InstanceType)
		}
		if strings.Join(names, " ") != tc.want {
			t.Errorf("search %q: %v, want %s", tc.search, names, tc.want)
		}
	}
	if _, err := s.Offers(ctx, Query{Search: "a b c d e f g h i"}); pricing.ErrorParam(err) != "search" || pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("nine words: %v; want an invalid search", err)
	}
}

// TestSortKeysAndCursors: names, aliases and errors; a cursor is refused for another
// order or when it is not one.
func TestSortKeysAndCursors(t *testing.T) {
	for in, want := range map[string]Sort{"": SortPrice, "PRICE": SortPrice, "per-gpu": SortPricePerGPU, "price-per-gib": SortPricePerGiB, " gpu ": SortGPU} {
		if got, err := ParseSort(in); err != nil || got != want {
			t.Errorf("ParseSort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseSort("speed")
	if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), strings.Join(SortNames(), ", ")) {
		t.Errorf("bad key: %v; want the valid keys named", err)
	}
	ctx := context.Background()
	s := openTest(t)
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: []pricing.Offer{mk("aws", "a", "x", pricing.OnDemand, 1), mk("aws", "b", "x", pricing.OnDemand, 1), mk("aws", "c", "y", pricing.OnDemand, 2)}}); err != nil {
		t.Fatal(err)
	}
	p, err := s.OffersPage(ctx, Query{Sort: SortGPU, Limit: 1})
	if err != nil || p.Next == "" || p.Total != 3 {
		t.Fatalf("first page %+v, %v", p, err)
	}
	for _, q := range []Query{
		{Sort: SortGPU, Desc: true, After: p.Next},
		{Sort: SortPrice, After: p.Next},
		{After: "not-a-cursor"},
		{After: "WzFd"}, // [1]
	} {
		if _, err := s.Offers(ctx, q); pricing.ErrorParam(err) != "after" || pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%+v: %v; want an invalid after", q, err)
		}
	}
	// A cursor fits the API's 256 bytes a value for names as long as the embedded
	// snapshot's longest (provider, region, zone, instance type, GPU model, source), in
	// every order, and reads back as the position it was made at.
	long := pricing.Offer{Provider: "digitalocean", Region: "northamerica-northeast1", Zone: "northamerica-northeast1-c",
		InstanceType: "Standard_ND96isr_MI300X_v5-extended", GPUModel: "A100-80GB-PCIE", GPUCount: 0.125, GPUMemGiB: 79.14, VCPUs: 223.5,
		RAMGiB: 1843.25, Purchase: pricing.OnDemand, PriceUSDHr: 123.456789012345, Source: pricing.SourceSnapshot, ObservedAt: t0}
	for _, k := range SortKeys() {
		for _, desc := range []bool{false, true} {
			c := k.encodeCursor(&long, desc)
			if len(c) > 256 {
				t.Errorf("sort %s: a cursor of %d bytes", k.Name, len(c))
			}
			back, err := k.decodeCursor(c, desc)
			if err != nil || k.compare(k.keyOf(&long), back.at, desc) != 0 {
				t.Errorf("sort %s: cursor %s read back as %+v, %v", k.Name, c, back, err)
			}
		}
	}
	// Past the last offer: an empty last page.
	p, _ = s.OffersPage(ctx, Query{Limit: 3})
	last, _ := s.OffersPage(ctx, Query{Limit: 2, After: (&sortKeys[slices.IndexFunc(sortKeys, func(k SortKey) bool { return k.Name == SortPrice })]).encodeCursor(&p.Offers[2], false)})
	if len(last.Offers) != 0 || last.Next != "" || last.Total != 3 || last.Offers == nil {
		t.Errorf("after the last offer: %+v", last)
	}
}
