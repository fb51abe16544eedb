package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// hostMarket is a marketplace whose hosts state random host facts (reliability, CUDA
// ceilings below 12.0 and 12.8 among them, drivers, speeds, disks, verification; some
// state none), some listing one instance type in several places with other hosts, so a
// shape's offers differ in their hosts' CUDA, beside a cloud that states none.
func hostMarket(r *rand.Rand, n int) (market, cloud []pricing.Offer) {
	gpus := []struct {
		model string
		mem   float64
	}{{"RTX4090", 24}, {"H100", 80}, {"B200", 180}, {"RTXPRO6000", 96}, {"A100", 40}}
	seen := map[pricing.Key]bool{}
	for i := 0; len(market) < n; i++ {
		g := gpus[r.IntN(len(gpus))]
		o := mk("vast", fmt.Sprintf("loc-%d", r.IntN(5)), fmt.Sprintf("%s_m%d", g.model, i), []pricing.Purchase{pricing.OnDemand, pricing.Spot}[r.IntN(2)], float64(1+r.IntN(30))/8)
		if r.IntN(4) == 0 {
			o.InstanceType = g.model + "_shared" // one type, many hosts
		}
		o.GPUModel, o.GPUMemGiB, o.GPUCount, o.RAMGiB = g.model, g.mem, []float64{1, 1, 2, 4}[r.IntN(4)], []float64{64, 128}[r.IntN(2)]
		if r.IntN(5) > 0 {
			o.Host = pricing.Host{Reliability: []float64{0, 0.8, 0.9, 0.95, 0.99, 0.999}[r.IntN(6)],
				MaxCUDA: []float64{0, 11.8, 12.2, 12.4, 12.8, 13}[r.IntN(6)], Driver: []string{"", "535.183.01", "570.124.06"}[r.IntN(3)],
				NetUpMbps: float64(r.IntN(3) * 400), NetDownMbps: float64(r.IntN(3) * 900), DiskGB: float64(r.IntN(4) * 250),
				Verification: []string{"", pricing.HostVerified, pricing.HostUnverified}[r.IntN(3)]}
		}
		if !seen[o.Key()] {
			seen[o.Key()] = true
			market = append(market, o)
		}
	}
	for i := range 40 {
		o := mk("aws", fmt.Sprintf("us-%d", i%5), fmt.Sprintf("p%d", i/5), pricing.OnDemand, float64(4+i%9))
		o.GPUModel, o.GPUMemGiB, o.GPUCount = "H100", 80, 8
		cloud = append(cloud, o)
	}
	return market, cloud
}

// TestShapeReadCarriesHosts: with hosts stating facts, ReadShapes returns every offer
// with its host facts exactly as Offers does (asked everything, it is Offers' answer),
// groups only offers of one CUDA class, and CountByGPUCUDA counts as Offers' offers
// do, per GPU model and CUDA class, with and without --min-reliability: from the
// offers image, the fit-fact sets (table and facts image), and by shape when the sets
// are another picker's.
func TestShapeReadCarriesHosts(t *testing.T) {
	defer func(n int) { imageMaxOffers = n }(imageMaxOffers)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(29, 2))
	market, cloud := hostMarket(r, 900)
	queries := []Query{{}, {MinReliability: 0.9}, {MinReliability: 0.95, Purchase: pricing.Spot}, {GPUModels: []string{"b200", "rtxpro6000"}},
		{MinReliability: 0.99, Regions: []string{"loc-1", "loc-3"}}, {MaxPriceUSDHr: 2, MinReliability: 0.8}}
	for _, mode := range []string{"offers image", "facts table", "facts image", "by shape"} {
		imageMaxOffers = 25_000
		if mode == "facts image" || mode == "by shape" {
			imageMaxOffers = 0
		}
		s := openTest(t)
		s.UseImage(mode != "facts table")
		for _, w := range []struct {
			prov   string
			offers []pricing.Offer
		}{{"vast", market}, {"aws", cloud}} {
			if _, err := s.WriteSnapshot(ctx, w.prov, WriteInput{Offers: observed(at(1), w.offers...), Finished: at(1)}); err != nil {
				t.Fatal(err)
			}
		}
		checkFacts(t, s, mode)
		if mode == "by shape" {
			if _, err := s.db.ExecContext(ctx, "UPDATE facts_meta SET version = 'other rules'"); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range queries {
			want, err := s.queryOffers(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			stated := 0
			wantCounts := recommend.GPUCounts{}
			models := []string{"no-such-gpu"}
			for _, o := range want {
				if o.Host.Stated() {
					stated++
				}
				if wantCounts[o.GPUModel] == nil {
					models = append(models, o.GPUModel)
				}
				wantCounts.Add(o.GPUModel, recommend.CUDAClass(o.Host.MaxCUDA), 1)
			}
			if stated == 0 || stated == len(want) {
				t.Fatalf("%s %+v: %d of %d offers state host facts; want some and not all", mode, q, stated, len(want))
			}
			all, err := s.ReadShapes(ctx, q, func(cheapest []pricing.Offer, more [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
				for i, m := range more {
					for _, o := range m {
						if recommend.CUDAClass(o.Host.MaxCUDA) != recommend.CUDAClass(cheapest[i].Host.MaxCUDA) {
							t.Errorf("%s %+v: %s (CUDA %g) read with %s (CUDA %g): one group, two CUDA classes",
								mode, q, o.Key(), o.Host.MaxCUDA, cheapest[i].Key(), cheapest[i].Host.MaxCUDA)
						}
					}
				}
				return needEvery(len(cheapest), len(want)), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(all, want) {
				for i := range min(len(all), len(want)) {
					if !reflect.DeepEqual(all[i], want[i]) {
						t.Errorf("%s %+v: offer %d read as\n%+v\nOffers:\n%+v", mode, q, i, all[i], want[i])
						break
					}
				}
				t.Fatalf("%s %+v: ReadShapes asking everything gave %d offers, Offers %d", mode, q, len(all), len(want))
			}
			// Each group's cheapest alone, from the rows' copies or the images, as Offers has it.
			byKey := map[pricing.Key]pricing.Offer{}
			for _, o := range want {
				byKey[o.Key()] = o
			}
			cheapest, err := s.ReadShapes(ctx, q, func([]pricing.Offer, [][]pricing.Offer, []bool) ([]ShapeNeed, error) { return nil, nil })
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range cheapest {
				if w, ok := byKey[o.Key()]; !ok || !reflect.DeepEqual(o, w) {
					t.Fatalf("%s %+v: cheapest of its group read as\n%+v\nOffers:\n%+v", mode, q, o, w)
				}
			}
			counts, err := s.CountByGPUCUDA(ctx, q, models)
			if err != nil || !reflect.DeepEqual(counts, wantCounts) {
				t.Errorf("%s %+v: CountByGPUCUDA = %v, %v; want %v", mode, q, counts, err, wantCounts)
			}
		}
		s.Close()
	}
}

// TestCUDAClassSQL: the sets' SQL class of a CUDA ceiling is recommend.CUDAClass's.
func TestCUDAClassSQL(t *testing.T) {
	s := openTest(t)
	class, args := cudaClassSQL("v")
	for _, v := range []float64{-1, 0, 0.5, 1, 9.2, 11.8, 11.999999, 12, 12.000001, 12.4, 12.799999, 12.8, 12.9, 13, 99} {
		var got float64
		if err := s.db.QueryRow("SELECT "+class+" FROM (SELECT ? AS v)", append(slices.Clone(args), v)...).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := recommend.CUDAClass(v); got != want {
			t.Errorf("CUDA %g: class %g in SQL, %g in Go", v, got, want)
		}
	}
}
