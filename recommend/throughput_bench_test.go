package recommend

import (
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// BenchmarkRecommend100kRankJob is BenchmarkRecommend100k with --rank job: every one of
// the 100k offers is timed (issue 15: the time model must keep recommend within its
// time; the model itself is BenchmarkTimeModelPerOffer).
func BenchmarkRecommend100kRankJob(b *testing.B) {
	m, _, err := model.CatalogModel("llama-2-7b")
	if err != nil {
		b.Fatal(err)
	}
	offers := bench100kOffers()
	in := RecommendInput{Model: m, Job: fit.Job{Task: fit.TaskLoRA, Batch: 4, SeqLen: 2048}, Offers: offers, HeadroomPct: 5, Tokens: 1e9, Rank: "job"}
	for b.Loop() {
		if _, err := Recommend(in); err != nil {
			b.Fatal(err)
		}
	}
}
