package store

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// The daemon's first and further reads from each group's offers in memory (setoffers.go)
// give exactly the offers SQLite's reads do, round after round, for random asks
// (limits, price bounds, some groups asked again after the offers read), with and
// without offer filters (regions under NOCASE, a price cap, a reliability floor), by fit-fact set and by shape, with groups small enough to keep
// and too large (groupMemoryMax lowered: the SQL read answers them).
func TestFurtherReadsFromMemory(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	s.UseImage(false) // the tables, as past imageMaxOffers
	offers := marketOffers(6000)
	for i := range offers {
		offers[i].PriceUSDHr = float64(int(offers[i].PriceUSDHr*20)) / 20 // price ties: the key orders them
		offers[i].Host.Reliability = []float64{0, 0.9, 0.97, 0.99}[i%4]   // 0: unstated
	}
	if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: offers, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { groupMemoryMax = n }(groupMemoryMax)
	asked := 0
	for _, max := range []int{4096, 40} {
		groupMemoryMax = max
		for _, q := range []Query{{}, {Purchase: pricing.Spot}, {Regions: []string{"loc-03", " LOC-17 "}, MaxPriceUSDHr: 3}, {MinVRAMGiB: 40}, {MinReliability: 0.95, Purchase: pricing.OnDemand}} {
			read := func(cache bool, seed uint64) [][]pricing.Offer {
				s.CacheOffers(0)
				if cache {
					s.CacheOffers(1 << 20)
				}
				r := rand.New(rand.NewPCG(seed, 7))
				var rounds [][]pricing.Offer
				_, err := s.ReadShapes(ctx, q, func(cheapest []pricing.Offer, more [][]pricing.Offer, exhausted []bool) ([]ShapeNeed, error) {
					if len(rounds) == 4 {
						return nil, nil
					}
					var got []pricing.Offer
					if more == nil { // the first read: each set's cheapest offer passing the filters
						got = slices.Clone(cheapest)
					}
					for _, m := range more {
						got = append(got, m...)
					}
					rounds = append(rounds, got)
					needs := make([]ShapeNeed, len(cheapest))
					for i := range needs {
						have := 1
						if i < len(more) {
							have += len(more[i])
						}
						needs[i] = ShapeNeed{Limit: 1}
						if r.IntN(3) == 0 && (i >= len(exhausted) || !exhausted[i]) {
							needs[i] = ShapeNeed{Limit: have + 1 + r.IntN(12), MaxPrice: cheapest[i].PriceUSDHr * (1 + r.Float64()*3)}
							asked++
						}
					}
					return needs, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return rounds
			}
			for seed := range uint64(3) {
				sqlRounds, memRounds := read(false, seed), read(true, seed)
				if len(sqlRounds) < 2 || len(sqlRounds[1]) == 0 {
					t.Fatalf("max %d, %+v: %d rounds: the asks read nothing to compare", max, q, len(sqlRounds))
				}
				if !reflect.DeepEqual(memRounds, sqlRounds) {
					t.Errorf("max %d, %+v, seed %d: further reads from memory differ from SQLite's", max, q, seed)
				}
			}
		}
	}
	if asked == 0 {
		t.Fatal("no further read asked")
	}
}
