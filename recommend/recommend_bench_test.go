package recommend

import (
	"fmt"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// BenchmarkRecommend100k runs the whole recommendation (ranking, the savings ladder and
// its plan) over 100k offers spread across the catalog's GPUs and 1-8 GPU counts, every
// one its own shape (the store's shape read does not apply: cmd/picker's cold figures at
// 100k offers are tools/bench-recommend.sh's), ranked by the job's dollars (the default
// with --tokens), by the dollars per million tokens (the default without) and by the hour.
// Every fitting offer is timed for the first two; the ladder is judged on each evaluation
// class's cheapest offers (classes.go), by the hour only on those cheaper than the top.
func BenchmarkRecommend100k(b *testing.B) {
	m, _, err := model.CatalogModel("llama-2-7b")
	if err != nil {
		b.Fatal(err)
	}
	offers := bench100kOffers()
	for _, tc := range []struct {
		name string
		job  fit.Job
	}{
		{"lora", fit.Job{Task: fit.TaskLoRA, Batch: 4, SeqLen: 2048}},
		{"fullft-fp32", fit.Job{Task: fit.TaskFullFT, Precision: "fp32", Batch: 2, SeqLen: 1024}},
		{"inference", fit.Job{Task: fit.TaskInference, Batch: 8, SeqLen: 4096}},
	} {
		for _, rk := range []struct {
			name   string
			rank   Rank
			tokens float64
		}{{"job", RankJob, 1e9}, {"per-unit", RankJob, 0}, {"hourly", RankHourly, 1e9}} {
			b.Run(tc.name+"/"+rk.name, func(b *testing.B) {
				in := RecommendInput{Model: m, Job: tc.job, Offers: offers, HeadroomPct: 5, Tokens: rk.tokens, Rank: rk.rank}
				for b.Loop() {
					if _, err := Recommend(in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// bench100kOffers is the benchmarks' catalogue: 100k on-demand offers spread across the
// GPU catalog's models and 1-8 GPU counts, over 15 providers and 40 regions.
func bench100kOffers() []pricing.Offer {
	gpus := pricing.GPUs()
	counts := []float64{1, 2, 4, 8}
	offers := make([]pricing.Offer, 0, 100_000)
	for i := range 100_000 {
		g := gpus[i%len(gpus)]
		c := counts[(i/len(gpus))%len(counts)]
		offers = append(offers, pricing.Offer{Provider: fmt.Sprintf("p%d", i%15), Region: fmt.Sprintf("r%d", i%40), InstanceType: fmt.Sprintf("t%d", i),
			GPUModel: g.Model, GPUCount: c, GPUMemGiB: g.MemGB, RAMGiB: 64 * c, Purchase: pricing.OnDemand,
			PriceUSDHr: c * (0.5 + float64(i%997)/100), Currency: "USD", Source: "api"})
	}
	return offers
}
