package store

import (
	"context"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// BenchmarkReadMarketRounds: the store's part of one daemon answer over a 100k-offer
// marketplace (marketStore) with the daemon's cache on (CacheOffers): the data version
// (the daemon's memo key), ReadShapes with a planner of three further rounds over the
// 48 cheapest fit-fact sets, two distinct sizes a round (one statement each), and the
// exclusion counts. Every iteration bounds its asks by a price of its own, as every
// request of a distinct job asks its own, so the further reads miss the cache as the
// daemon's do under distinct queries; the first read and the counts are the cache's, as
// in the daemon. cpu-ns/op is the process's CPU time per iteration (processCPU): on a
// shared machine, steadier than the wall time.
func BenchmarkReadMarketRounds(b *testing.B) {
	ctx := context.Background()
	s := marketStore(b)
	s.CacheOffers(1 << 20)
	q := Query{Purchase: pricing.OnDemand}
	iter, read := 0, 0
	var cpu0 time.Duration
	for b.Loop() {
		if iter == 0 {
			cpu0, _ = processCPU() // b.Loop's timer starts at its first call
		}
		iter++
		bound := 1 + float64(iter)/1e7 // distinct per iteration; within a few offers' price steps
		call := 0
		plan := func(cheapest []pricing.Offer, more [][]pricing.Offer, exhausted []bool) ([]ShapeNeed, error) {
			call++
			needs := make([]ShapeNeed, len(cheapest))
			for i := range min(len(cheapest), 48) {
				n := 1
				if more != nil {
					n += len(more[i])
				}
				if call <= 3 {
					n += 3 + 2*(i%2)
				}
				needs[i] = ShapeNeed{Limit: n, MaxPrice: cheapest[i].PriceUSDHr * 3 * bound}
			}
			return needs, nil
		}
		if _, err := s.DataVersion(ctx); err != nil {
			b.Fatal(err)
		}
		out, err := s.ReadShapes(ctx, q, plan)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.CountByGPU(ctx, q, []string{out[0].GPUModel, out[len(out)-1].GPUModel}); err != nil {
			b.Fatal(err)
		}
		read = len(out)
	}
	if cpu1, ok := processCPU(); ok && iter > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(iter), "cpu-ns/op")
	}
	b.ReportMetric(float64(read), "offers")
}
