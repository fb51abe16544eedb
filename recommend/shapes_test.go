package recommend

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// notShape are the Offer fields the recommender may not read when judging an offer
// (it ranks by the price and breaks ties by the key, which it reads from the offer it
// reports): everything else is in pricing.Shape.
// GPUMemReportedGiB is not read either, and is a function of the shape anyway (the
// provider's figure that WithUsableMemory moved aside for the GPU model's usable one).
// Available (the provider's stock word) is per place and time, like the price: it orders
// the ranking, never the fit.
// Host (a marketplace host's facts) is read per offer, not per shape: the shape read is
// not used while any current offer states host facts (cmd/picker hostfacts.go), so no
// shape ever stands for offers whose hosts differ.
var notShape = []string{"Region", "Zone", "PriceUSDHr", "Currency", "ObservedAt", "Source", "GPUMemReportedGiB", "Available", "Host"}

// TestEvaluationDependsOnlyOnShape guards recommend's per-shape read: an offer's
// evaluation (fits or not, need, spare, GPUs used, job hours) must be a function of its
// pricing.Shape. Every Offer field must be classified: a new field that fit reads
// belongs in pricing.Shape (and the store's shapes table); one it doesn't, in notShape.
func TestEvaluationDependsOnlyOnShape(t *testing.T) {
	shapeFields := map[string]bool{}
	for f := range reflect.TypeFor[pricing.Shape]().Fields() {
		shapeFields[f.Name] = true
	}
	for f := range reflect.TypeFor[pricing.Offer]().Fields() {
		if shapeFields[f.Name] == slices.Contains(notShape, f.Name) {
			t.Errorf("pricing.Offer.%s: classify it: in pricing.Shape when the recommender reads it, else in notShape", f.Name)
		}
	}
	for name := range shapeFields {
		if _, ok := reflect.TypeFor[pricing.Offer]().FieldByName(name); !ok {
			t.Errorf("pricing.Shape.%s is not an Offer field", name)
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	offers := randomOffers(r, 400, 40)
	// Each offer's twin: the same shape, everything else different.
	twins := slices.Clone(offers)
	for i := range twins {
		o := &twins[i]
		o.Region, o.Zone, o.Currency, o.Source = "elsewhere", "elsewhere-b", "EUR", pricing.SourceFile
		o.ObservedAt = o.ObservedAt.Add(-1000 * time.Hour)
		o.PriceUSDHr *= 1.7
		o.GPUMemReportedGiB = 1
		if o.Shape() != offers[i].Shape() {
			t.Fatal("twin changed shape")
		}
	}
	for _, in := range randomInputs(t, r, 30) {
		in.Offers = append(slices.Clone(offers), twins...)
		_, ev, err := prepare(in)
		if err != nil {
			continue
		}
		for i := range offers {
			a, okA := ev.evaluate(i)
			b, okB := ev.evaluate(len(offers) + i)
			if okA != okB || (okA && (a.vk != b.vk || a.need != b.need || a.spare != b.spare || a.hours != b.hours)) {
				t.Fatalf("%s: offer %s and its twin %s (same shape) judged differently: %v %+v / %v %+v",
					describe(in), offers[i].Key(), twins[i].Key(), okA, a, okB, b)
			}
		}
	}
}

// randomOffers makes n offers over about shapes shapes, with price ties, fractional
// slices, unknown GPUs and spot/on-demand pairs, as the store would list them.
func randomOffers(r *rand.Rand, n, shapes int) []pricing.Offer {
	gpus := pricing.GPUs()
	var protos []pricing.Offer
	for i := range shapes {
		g := gpus[r.IntN(len(gpus))]
		count := []float64{0.125, 0.5, 1, 1, 2, 4, 8}[r.IntN(7)]
		o := pricing.Offer{Provider: []string{"aws", "gcp", "lambda"}[r.IntN(3)], InstanceType: fmt.Sprintf("t%d", i),
			GPUModel: g.Model, GPUCount: count, GPUMemGiB: g.MemGB, VCPUs: float64(4 + r.IntN(64)), RAMGiB: float64(8 + r.IntN(2048)),
			Purchase: []pricing.Purchase{pricing.OnDemand, pricing.Spot}[r.IntN(2)], Currency: "USD", Source: pricing.SourceAPI}
		if r.IntN(15) == 0 {
			o.GPUModel, o.GPUMemGiB = "Mystery-GPU", 48
		}
		protos = append(protos, o)
	}
	seen := map[pricing.Key]bool{}
	var out []pricing.Offer
	n = min(n, shapes*12*3/2) // keys are shape x 12 regions x 3 zones
	for len(out) < n {
		o := protos[r.IntN(len(protos))]
		o.Region = fmt.Sprintf("r%d", r.IntN(12))
		o.Zone = o.Region + string(rune('a'+r.IntN(3)))
		o.PriceUSDHr = float64(1+r.IntN(60)) / 4 * max(o.GPUCount, 0.25) // coarse: many ties
		o.ObservedAt = time.Date(2026, 11, 1+r.IntN(20), 0, 0, 0, 0, time.UTC)
		if !seen[o.Key()] {
			seen[o.Key()] = true
			out = append(out, o)
		}
	}
	return out
}

// randomInputs draws jobs across tasks, models, pinned GPU counts, offload, ranking and
// top counts.
func randomInputs(t *testing.T, r *rand.Rand, n int) []RecommendInput {
	models := []string{"llama-2-7b", "llama-2-13b", "llama-2-70b", "mistral-7b", "phi-2", "gpt2"}
	var out []RecommendInput
	for range n {
		m := mustModel(t, models[r.IntN(len(models))])
		j := fit.Job{Task: fit.Tasks[r.IntN(4)], Batch: 1 + r.IntN(8), SeqLen: []int{512, 2048, 4096}[r.IntN(3)]}
		if r.IntN(3) == 0 {
			j.Precision = "fp32"
		}
		if j.IsTraining() && r.IntN(3) == 0 {
			j.Shard, j.Offload = "zero2", "optimizer"
		}
		in := RecommendInput{Model: m, Job: j, HeadroomPct: -1, Top: []int{1, 3, 10}[r.IntN(3)]}
		if r.IntN(4) == 0 {
			in.PinGPUs, in.Job.GPUs = true, 1+r.IntN(4)
		}
		if r.IntN(4) == 0 {
			in.Job.Quant = "fp8" // GPUs without fp8 are excluded, and counted
		}
		in.ByRegion = r.IntN(2) == 0
		if r.IntN(5) == 0 {
			in.Job.NodesAuto = true // multi-node: clusters of the cheapest instance types
		}
		if r.IntN(4) == 0 {
			in.Deadline = time.Duration(1+r.IntN(48)) * time.Hour
			in.Tokens = 1e8
		}
		if r.IntN(2) == 0 {
			in.Tokens = 1e8 // sized: the job's dollars; else the dollars per unit of work
		}
		in.Rank = []Rank{"", RankJob, RankHourly}[r.IntN(3)]
		if r.IntN(3) == 0 {
			addRegionalExtras(r, &in) // spot bands and disk prices per region (allin.go)
		}
		out = append(out, in)
	}
	return out
}

// addRegionalExtras gives in fetched spot bands and block-storage prices that differ by
// region (randomOffers' r0..r11 and instance types t0..t59), a dataset and an upload, so
// offers of one shape differ in more than their price.
func addRegionalExtras(r *rand.Rand, in *RecommendInput) {
	for reg := range 12 {
		region := fmt.Sprintf("r%d", reg)
		for _, p := range []string{"aws", "gcp", "lambda"} {
			if r.IntN(3) > 0 {
				in.StoragePrices = append(in.StoragePrices, pricing.StoragePrice{Provider: p, Region: region, Product: "disk",
					USDPerGiBMonth: float64(1+r.IntN(30)) / 100, Source: "test"})
			}
			for typ := range 60 {
				if r.IntN(3) == 0 {
					lo := float64(r.IntN(40))
					in.SpotBands = append(in.SpotBands, pricing.SpotBand{Provider: p, Region: region, InstanceType: fmt.Sprintf("t%d", typ),
						LowPct: lo, HighPct: lo + float64(1+r.IntN(20)), PeriodHours: 24, Source: "test"})
				}
			}
		}
	}
	in.DatasetGB = float64(r.IntN(3) * 200)
	if r.IntN(2) == 0 {
		in.UploadGB = ptr(float64(r.IntN(500)))
	}
}

func describe(in RecommendInput) string {
	return fmt.Sprintf("%s %+v pin=%v rank=%s tokens=%g top=%d", in.Model.Name, in.Job, in.PinGPUs, in.Rank, in.Tokens, in.Top)
}

// storeOrder sorts as the store returns offers: price, then key.
func storeOrder(offers []pricing.Offer) {
	slices.SortFunc(offers, func(a, b pricing.Offer) int {
		switch {
		case a.PriceUSDHr < b.PriceUSDHr:
			return -1
		case a.PriceUSDHr > b.PriceUSDHr:
			return 1
		case keyLess(&a, &b):
			return -1
		case keyLess(&b, &a):
			return 1
		}
		return 0
	})
}

// readInRounds reads as store.ReadShapes does: ShapePlan.Needs over the cheapest offers, then
// again with the further offers it asked for, until it asks no more; a shape with fewer
// offers within the bound than asked is not asked again.
// groups holds every offer of each group (shape or fit-fact set) in store order, group
// names an offer's.
func readInRounds(in RecommendInput, cheapest []pricing.Offer, groups map[string][]pricing.Offer, group func(pricing.Offer) string) ([]pricing.Offer, error) {
	more := make([][]pricing.Offer, len(cheapest))
	done := make([]bool, len(cheapest))
	plan := NewShapePlan(in)
	for first := true; ; first = false {
		arg, ex := more, done
		if first {
			arg, ex = nil, nil
		}
		needs, err := plan.Needs(cheapest, arg, ex)
		if err != nil {
			return nil, err
		}
		asked := false
		for i, n := range needs {
			if done[i] || n.Limit <= 1+len(more[i]) {
				continue
			}
			asked = true
			var got []pricing.Offer
			for k, o := range groups[group(cheapest[i])] {
				if k > 0 && k < n.Limit && o.PriceUSDHr <= n.MaxPriceUSDHr {
					got = append(got, o)
				}
			}
			done[i] = 1+len(got) < n.Limit
			more[i] = got
		}
		if !asked {
			break
		}
	}
	sub := slices.Clone(cheapest)
	for _, m := range more {
		sub = append(sub, m...)
	}
	return sub, nil
}

// TestShapePlanAnswersAsFullScan: Recommend over the offers ShapePlan asks for (each
// shape's cheapest, plus the next ones it names) answers byte for byte as over every
// offer, on randomized catalogues and jobs; and it asks for far fewer offers.
func TestShapePlanAnswersAsFullScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	planAnswersAsFullScan(t, r, 60, func() []pricing.Offer { return randomOffers(r, 50+r.IntN(600), 3+r.IntN(60)) },
		func(o pricing.Offer) string { return fmt.Sprint(o.Shape()) })
}

// planAnswersAsFullScan checks ShapePlan over rounds catalogues from gen, its groups
// named by group (an offer's shape, or its fit-fact set).
//
// decorate, when given, adds to each input what is not in the offers (quota_test.go: the
// account's quotas and sold-out words); the no-quota exclusions are then left out of the
// comparison: over the shape read they count and name the offers read that the quota
// left out, a subset of the full scan's.
func planAnswersAsFullScan(t *testing.T, r *rand.Rand, rounds int, gen func() []pricing.Offer, group func(pricing.Offer) string, decorate ...func(*RecommendInput, []pricing.Offer)) {
	t.Helper()
	var read, total int
	for round := range rounds {
		offers := gen()
		storeOrder(offers)
		groups := map[string][]pricing.Offer{}
		var cheapest []pricing.Offer
		for _, o := range offers {
			g := group(o)
			if len(groups[g]) == 0 {
				cheapest = append(cheapest, o)
			}
			groups[g] = append(groups[g], o)
		}
		for _, in := range randomInputs(t, r, 8) {
			for _, d := range decorate {
				d(&in, offers)
			}
			in.Offers = offers
			want, werr := Recommend(in)
			in.Offers = cheapest
			sub, err := readInRounds(in, cheapest, groups, group)
			if (err == nil) != (werr == nil) {
				t.Fatalf("round %d %s: ShapePlan error %v, Recommend error %v", round, describe(in), err, werr)
			}
			if err != nil {
				continue
			}
			storeOrder(sub)
			in.Offers = sub
			got, err := Recommend(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Offers) == 0 {
				continue // nothing fits: the caller reads every offer for the nearest miss
			}
			if len(got.Excluded) > 0 {
				counts := GPUCounts{} // what the caller counts in the store (store.CountByGPUCUDA)
				for _, o := range offers {
					counts.Add(o.GPUModel, o.Host.MaxCUDA, 1)
				}
				RecountExclusionsByHost(got, counts)
			}
			if len(decorate) > 0 {
				for _, rec := range []*Recommendation{got, want} {
					rec.Excluded = slices.DeleteFunc(slices.Clone(rec.Excluded), func(x Exclusion) bool { return x.Code == ExclNoQuota })
				}
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if string(gj) != string(wj) {
				t.Fatalf("round %d %s: over the %d offers ShapePlan asks for:\n%s\nover all %d:\n%s", round, describe(in), len(sub), gj, len(offers), wj)
			}
			read += len(sub)
			total += len(offers)
		}
	}
	t.Logf("read %d of %d offers (%.1f %%)", read, total, 100*float64(read)/float64(total))
	if read*2 > total {
		t.Errorf("the shape read took %d of %d offers: not reading only what can win", read, total)
	}
}
