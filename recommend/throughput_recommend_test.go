package recommend

import (
	"math"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

// timedOffers: one LoRA job on hand-built offers, slow-and-cheap to fast-and-dear, plus
// one offer (h100-dear) that is as fast as h100 but dearer, so never on the frontier.
func timedOffers() []pricing.Offer {
	return []pricing.Offer{
		offer("aws", "l4", "L4", 1, 24, 0.80),
		offer("aws", "a10", "A10", 1, 24, 1.00),
		offer("aws", "a100", "A100-80GB", 1, 80, 1.80),
		offer("aws", "h100", "H100", 1, 80, 5.00),
		offer("aws", "h100-dear", "H100", 1, 80, 8.00),
	}
}

func TestRecommendDeadline(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	job := fit.Job{Task: fit.TaskQLoRA, Batch: 1, SeqLen: 1024}
	in := RecommendInput{Model: m, Job: job, Offers: timedOffers(), Tokens: 2e7}
	all := recommend(t, in)
	total := map[string]float64{}
	for _, f := range all.Offers {
		if f.EstHours == nil || f.SetupHours == nil {
			t.Fatalf("%s: no time", f.InstanceType)
		}
		total[f.InstanceType] = *f.EstHours + *f.SetupHours
	}
	if !(total["l4"] > total["a10"] && total["a10"] > total["a100"] && total["a100"] > total["h100"]) {
		t.Fatalf("times %v: want L4 > A10 > A100 > H100", total)
	}
	// A deadline between the A10's and the A100's time leaves the A100 and the H100s;
	// ranked per hour, the A100 is the cheapest that finishes in time.
	in.Deadline = time.Duration((total["a10"] + total["a100"]) / 2 * float64(time.Hour))
	got := recommend(t, in)
	if len(got.Offers) != 3 || got.Offers[0].InstanceType != "a100" {
		t.Errorf("deadline %s: offers %v; want a100 first of a100, h100, h100-dear", in.Deadline, instanceTypes(got.Offers))
	}
	in.Deadline = time.Duration(total["h100"] / 2 * float64(time.Hour))
	if none := recommend(t, in); len(none.Offers) != 0 {
		t.Errorf("a deadline nothing meets still lists %v", instanceTypes(none.Offers))
	}
	if _, err := Recommend(RecommendInput{Model: m, Job: job, Offers: timedOffers(), Deadline: time.Hour}); err == nil {
		t.Error("--deadline without --tokens succeeded")
	}
}

func TestRecommendFrontier(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	in := RecommendInput{Model: m, Job: fit.Job{Task: fit.TaskQLoRA, Batch: 1, SeqLen: 1024}, Offers: timedOffers(), Tokens: 2e7, Rank: "job"}
	rec := recommend(t, in)
	onFront := map[string]bool{}
	for _, f := range rec.Frontier {
		onFront[f.InstanceType] = true
	}
	if onFront["h100-dear"] || !onFront["h100"] || len(rec.Frontier) < 2 {
		t.Errorf("frontier %v: want h100 and not h100-dear (same speed, dearer), and at least two offers", instanceTypes(rec.Frontier))
	}
	cost := func(f Fit) float64 { return *f.EstCostUSD }
	hours := func(f Fit) float64 { return *f.EstHours + *f.SetupHours }
	for _, f := range rec.Offers {
		if f.Frontier != onFront[f.InstanceType] {
			t.Errorf("%s: frontier mark %v disagrees with the frontier list", f.InstanceType, f.Frontier)
		}
		dominated := false
		for _, g := range rec.Offers {
			if cost(g) <= cost(f) && hours(g) <= hours(f) && (cost(g) < cost(f) || hours(g) < hours(f)) {
				dominated = true
			}
		}
		if dominated == f.Frontier {
			t.Errorf("%s ($%.2f, %.2f h): dominated=%v but frontier=%v", f.InstanceType, cost(f), hours(f), dominated, f.Frontier)
		}
	}
	// Ranked by job cost: the first offer is the frontier's cheapest.
	if rec.Offers[0].InstanceType != rec.Frontier[0].InstanceType {
		t.Errorf("cheapest job %s is not the frontier's first %s", rec.Offers[0].InstanceType, rec.Frontier[0].InstanceType)
	}
}

func TestRecommendInferenceFields(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	in := RecommendInput{Model: m, Job: fit.Job{Task: fit.TaskInference, Batch: 8, SeqLen: 2048}, Offers: timedOffers(),
		PromptTokens: 1000, OutputTokens: 200, Requests: 5000, Engine: jobtime.EngineVLLM}
	rec := recommend(t, in)
	if len(rec.Offers) == 0 {
		t.Fatal("nothing fits")
	}
	for _, f := range rec.Offers {
		if f.TokensPerSec == nil || f.TTFTSec == nil || f.USDPerMOutTokens == nil || f.EstHours == nil {
			t.Fatalf("%s: tokens/s, TTFT, $/M or hours missing: %+v", f.InstanceType, f)
		}
		// $ per million output tokens, their prompts' prefill included: this job is exactly
		// a million output tokens (5000 requests x 200), so it is the job's run time paid
		// at the hourly price (the hours are rounded to 3 decimals).
		want := f.PriceUSDHr * *f.EstHours
		if math.Abs(*f.USDPerMOutTokens-want) > 0.0006*f.PriceUSDHr+1e-3 {
			t.Errorf("%s: $/M = %v; want %v", f.InstanceType, *f.USDPerMOutTokens, want)
		}
		// Tokens = requests x output tokens; under continuous batching the prompts ride in
		// the decode steps, so the run is at least the decoding (est_hours has 3 decimals).
		if (*f.EstHours+0.0005)*3600 < 5000*200 / *f.TokensPerSec {
			t.Errorf("%s: %.3f h is less than decoding 1e6 tokens at %.1f tok/s", f.InstanceType, *f.EstHours, *f.TokensPerSec)
		}
	}
	// Without --seq-len the memory estimate holds prompt + output per sequence.
	if got := rec.Estimate.Job.SeqLen; got != 2048 {
		t.Errorf("explicit seq-len 2048 became %d", got)
	}
	in.Job.SeqLen = 0
	if got := recommend(t, in).Estimate.Job.SeqLen; got != 1200 {
		t.Errorf("seq-len from 1000 prompt + 200 output tokens = %d; want 1200", got)
	}
	for _, bad := range []RecommendInput{{Engine: "tgi"}, {PromptTokens: -1}} {
		bad.Model, bad.Job, bad.Offers = m, in.Job, in.Offers
		if _, err := Recommend(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func instanceTypes(fs []Fit) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.InstanceType)
	}
	return out
}
