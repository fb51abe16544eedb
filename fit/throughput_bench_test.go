package fit

import (
	"fmt"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// BenchmarkRecommend100kRankJob is BenchmarkRecommend100k with --rank job: every one of
// the 100k offers is timed (issue 15: the time model must keep recommend within its
// time; the model itself is BenchmarkTimeModelPerOffer).
func BenchmarkRecommend100kRankJob(b *testing.B) {
	m, _, err := CatalogModel("llama-2-7b")
	if err != nil {
		b.Fatal(err)
	}
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
	in := RecommendInput{Model: m, Job: Job{Task: TaskLoRA, Batch: 4, SeqLen: 2048}, Offers: offers, HeadroomPct: 5, Tokens: 1e9, Rank: "job"}
	for b.Loop() {
		if _, err := Recommend(in); err != nil {
			b.Fatal(err)
		}
	}
}
