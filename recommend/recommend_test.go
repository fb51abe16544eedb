package recommend

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// The recommender tests build small offer catalogues around needs computed by Estimate,
// so each case asserts the ranking logic (which offer wins and why), not the estimator's
// numbers, which the calibration tests judge.

func mustModel(t *testing.T, name string) *model.Model {
	t.Helper()
	m, ok, err := model.CatalogModel(name)
	if err != nil || !ok {
		t.Fatalf("catalog model %q: ok=%v err=%v", name, ok, err)
	}
	return m
}

// need returns device_total × 1.05 for the job at g GPUs.
func need(t *testing.T, m *model.Model, j fit.Job, g int) float64 {
	t.Helper()
	j.GPUs = g
	r, err := fit.Estimate(m, j)
	if err != nil {
		t.Fatalf("Estimate: %v", err)
	}
	return r.DeviceTotalGiB * 1.05
}

var obs = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

func offer(provider, typ, gpu string, count, mem, price float64) pricing.Offer {
	return pricing.Offer{Provider: provider, Region: "r1", InstanceType: typ, GPUModel: gpu, GPUCount: count, GPUMemGiB: mem,
		VCPUs: 8 * count, RAMGiB: 64 * count, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD", ObservedAt: obs, Source: "api"}
}

func recommend(t *testing.T, in RecommendInput) *Recommendation {
	t.Helper()
	if in.HeadroomPct == 0 {
		in.HeadroomPct = 5
	}
	rec, err := Recommend(in)
	if err != nil {
		t.Fatalf("Recommend: %v", err)
	}
	return rec
}

func TestRecommendCheapestFitAndTieBreak(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	job := fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 1024}
	n := need(t, m, job, 1)
	offers := []pricing.Offer{
		// A GPU model the catalog lacks: its offers' reported memory is what counts (a
		// catalogued one would be judged on its usable_gib, whatever the offer says).
		offer("p", "too-small-cheap", "X100", 1, n-0.5, 0.50), // cheapest, but 0.5 GiB short
		offer("p", "roomy", "X100", 1, n+20, 1.00),            // fits, same price as snug
		offer("p", "snug", "X100", 1, n+1, 1.00),              // fits with least spare: wins the tie
		offer("p", "pricey", "X100", 1, n+1, 2.00),
	}
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers})
	if len(rec.Offers) != 3 {
		t.Fatalf("got %d fits; want 3 (too-small-cheap excluded)", len(rec.Offers))
	}
	got := []string{rec.Offers[0].InstanceType, rec.Offers[1].InstanceType, rec.Offers[2].InstanceType}
	if strings.Join(got, ",") != "snug,roomy,pricey" {
		t.Errorf("order = %v; want snug (tie on price, least spare), roomy, pricey", got)
	}
	if s := rec.Offers[0].SparePerGPUGiB; math.Abs(s-1) > 0.01 {
		t.Errorf("snug spare = %v; want 1 GiB", s)
	}
}

func TestRecommendZero3TwoGPUsBeatsOneBigGPU(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	job := fit.Job{Task: fit.TaskFullFT, Shard: "zero3", GradCkpt: true, Batch: 1, SeqLen: 1024}
	n1, n2 := need(t, m, job, 1), need(t, m, job, 2)
	if n2 >= n1 {
		t.Fatalf("zero3 need on 2 GPUs (%v) is not below 1 GPU (%v)", n2, n1)
	}
	// Two GPUs just big enough for the 2-way shard (and too small for one replica)
	// beat a single GPU big enough for the whole job because they cost less.
	offers := []pricing.Offer{
		offer("p", "1x-big", "X200", 1, n1+1, 5.0),
		offer("p", "2x-mid", "X60", 2, (n1+n2)/2, 4.0),
		offer("p", "1x-mid", "X60", 1, (n1+n2)/2, 2.0), // same GPUs, one of them: zero3 on 1 GPU does not fit
	}
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers})
	if len(rec.Offers) != 2 || rec.Offers[0].InstanceType != "2x-mid" || rec.Offers[0].GPUsUsed != 2 {
		t.Fatalf("fits = %+v; want 2x-mid (zero3 over 2 GPUs) first, then 1x-big", rec.Offers)
	}
	if math.Abs(rec.Offers[0].NeedPerGPUGiB-n2) > 0.01 {
		t.Errorf("2x-mid need = %v; want the 2-GPU need %v", rec.Offers[0].NeedPerGPUGiB, n2)
	}
	// With --shard none (DDP), more GPUs don't lower the need: 2x-mid no longer fits.
	ddp := job
	ddp.Shard = "none"
	rec = recommend(t, RecommendInput{Model: m, Job: ddp, Offers: []pricing.Offer{offer("p", "2x-mid", "A6000", 2, need(t, m, ddp, 1)-1, 4.0)}})
	if len(rec.Offers) != 0 {
		t.Errorf("DDP replica fitted on GPUs smaller than its need: %+v", rec.Offers)
	}
}

func TestRecommendOffloadNeedsHostRAM(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	job := fit.Job{Task: fit.TaskFullFT, Shard: "zero2", Offload: "optimizer", GradCkpt: true, Batch: 1, SeqLen: 512}
	r, err := fit.Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	n := r.DeviceTotalGiB * 1.05
	ramNeed := r.CPURAMGiB*1.1 + OffloadRAMMarginGiB
	short := offer("p", "short-ram", "H100", 1, n+5, 1.0)
	short.RAMGiB = ramNeed - 1
	ok := offer("p", "enough-ram", "H100", 1, n+5, 1.5)
	ok.RAMGiB = ramNeed + 1
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: []pricing.Offer{short, ok}})
	if len(rec.Offers) != 1 || rec.Offers[0].InstanceType != "enough-ram" {
		t.Fatalf("fits = %+v; want only enough-ram (short-ram lacks %v GiB host RAM)", rec.Offers, ramNeed)
	}
}

func TestRecommendBF16OnT4(t *testing.T) {
	m := mustModel(t, "llama-3.2-1b")
	job := fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 512}
	offers := []pricing.Offer{offer("p", "t4", "T4", 1, 16, 0.5), offer("p", "l4", "L4", 1, 24, 0.8)}
	// Per hour the T4 is the cheaper (by the cost of the work the faster L4 may win).
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers, Rank: RankHourly})
	if len(rec.Offers) == 0 || rec.Offers[0].InstanceType != "t4" {
		t.Fatalf("fits = %+v; want the T4 first, running fp16", rec.Offers)
	}
	if len(rec.Offers[0].Notes) == 0 || !strings.Contains(rec.Offers[0].Notes[0], "runs in fp16") {
		t.Errorf("T4 notes = %v; want it switched to fp16 (hf LoRA: fp16 base, fp32 adapters)", rec.Offers[0].Notes)
	}
	if !strings.Contains(strings.Join(rec.Warnings, "\n"), "T4 has no bf16") {
		t.Errorf("warnings %v do not mention the T4's missing bf16", rec.Warnings)
	}
	// Pure bf16 training ("true" bf16 weights and states, LitGPT's bf16-true) has no fp16
	// equivalent: the T4 is excluded, and counted.
	pure := job
	pure.Precision, pure.Framework = "bf16", fit.FrameworkLitGPT
	rec = recommend(t, RecommendInput{Model: m, Job: pure, Offers: offers})
	for _, f := range rec.Offers {
		if f.GPUModel == "T4" {
			t.Errorf("pure-bf16 training was placed on a T4: %+v", f)
		}
	}
}

func TestRecommendFractionalSlice(t *testing.T) {
	m := mustModel(t, "qwen2.5-0.5b")
	job := fit.Job{Task: fit.TaskInference, Batch: 1, SeqLen: 512, Engine: fit.EngineHF} // transformers' need: a slice this small serves no vLLM pool
	n := need(t, m, job, 1)
	// A 1/8 slice of a 24 GiB L4 holds 3 GiB; a half slice 12 GiB.
	eighth := offer("aws", "g6f.large", "L4", 0.125, 24, 0.2)
	half := offer("aws", "g6f.2xlarge", "L4", 0.5, 24, 0.6)
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: []pricing.Offer{eighth, half}, Rank: RankHourly})
	for _, f := range rec.Offers {
		if f.MemPerDeviceGiB() < n {
			t.Errorf("slice %s with %v GiB accepted for a need of %v GiB", f.InstanceType, f.MemPerDeviceGiB(), n)
		}
	}
	if n <= 3 && (len(rec.Offers) == 0 || rec.Offers[0].InstanceType != "g6f.large") {
		t.Errorf("need %v GiB fits a 3 GiB slice, but fits = %+v", n, rec.Offers)
	}
	if n > 3 && n <= 12 && (len(rec.Offers) != 1 || rec.Offers[0].InstanceType != "g6f.2xlarge") {
		t.Errorf("need %v GiB: want only the half slice, got %+v", n, rec.Offers)
	}
}

func TestRecommendLadderOrderAndSavings(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	job := fit.Job{Task: fit.TaskFullFT, Precision: "fp32", Batch: 4, SeqLen: 1024}
	// A price list where smaller needs buy cheaper GPUs: price rises with memory (each
	// GPU model's usable memory is the catalog's).
	var offers []pricing.Offer
	for i, g := range []struct {
		name string
		mem  float64
	}{{"T4", 16}, {"L4", 24}, {"A40", 48}, {"H100", 80}, {"H200", 141}, {"B200", 180}} {
		offers = append(offers, offer("p", "g"+string(rune('a'+i)), g.name, 1, g.mem, float64(i+1)))
		offers = append(offers, offer("p", "8x-g"+string(rune('a'+i)), g.name, 8, g.mem, 8*float64(i+1)))
	}
	// Per hour: the savings are the prices' (TestLadderNeverDearer judges the default).
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers, Rank: RankHourly})
	// The rungs shown keep the seeds' order of effort (trainingRungs), and the ones a
	// 7B fp32 full fine-tune on these prices must show are there.
	last := -1
	var order []string
	for _, s := range rec.Ladder {
		order = append(order, s.Flags)
		i := slices.IndexFunc(trainingRungs, func(r rung) bool { return r.name == s.Change })
		if i <= last {
			t.Errorf("ladder order %v breaks the rung order at %q", order, s.Change)
		}
		last = i
	}
	// Under hf's defaults (no gradient accumulation) the fp32 optimizer step sets this
	// job's peak, so the rungs that shrink states save and those that shrink activations
	// (micro-batch 1, checkpointing) do not.
	for _, want := range []string{"--optimizer-step fused", "--task lora", "--task qlora --precision bf16-mixed", "--optimizer adamw-8bit", "--precision bf16"} {
		if !slices.Contains(order, want) {
			t.Errorf("ladder %v lacks %s", order, want)
		}
	}
	base := 0.0
	if len(rec.Offers) > 0 {
		base = rec.Offers[0].PriceUSDHr
	}
	for _, s := range rec.Ladder {
		if s.Tradeoff == "" {
			t.Errorf("step %s has no trade-off", s.Change)
		}
		if s.Cheapest == nil {
			continue
		}
		if s.Cheapest.NeedPerGPUGiB > s.Cheapest.MemPerDeviceGiB() {
			t.Errorf("step %s: cheapest offer does not fit", s.Change)
		}
		if base > 0 {
			want := math.Round((base-s.Cheapest.PriceUSDHr)/base*1000) / 10
			if s.SavingPct == nil || *s.SavingPct != want {
				t.Errorf("step %s saving = %v; want %v (%v -> %v)", s.Change, s.SavingPct, want, base, s.Cheapest.PriceUSDHr)
			}
		}
	}
	// QLoRA needs less than LoRA, which needs less than the fp32 full fine-tune.
	byFlags := map[string]LadderStep{}
	for _, s := range rec.Ladder {
		byFlags[s.Flags] = s
	}
	if q := byFlags["--task qlora --precision bf16-mixed"]; !(q.DeviceTotalGiB < byFlags["--task lora"].DeviceTotalGiB) {
		t.Errorf("qlora need %v not below lora need %v", q.DeviceTotalGiB, byFlags["--task lora"].DeviceTotalGiB)
	}
	// Inference has no training rungs; its weight rungs are int8 then 4-bit.
	inf := recommend(t, RecommendInput{Model: m, Job: fit.Job{Task: fit.TaskInference}, Offers: offers, Rank: RankHourly})
	var infFlags []string
	for _, s := range inf.Ladder {
		infFlags = append(infFlags, s.Flags)
	}
	if i, k := slices.Index(infFlags, "--quant int8"), slices.Index(infFlags, "--quant int4"); i < 0 || k < i {
		t.Errorf("inference ladder = %v; want int8 then int4", infFlags)
	}
}

func TestRecommendJobCostPrefersFasterGPU(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	// 4096 tokens per micro-batch: the math outlasts Python's dispatch of the forward (at
	// 512 tokens eager dispatch sets both GPUs' pace: jobtime/stepfixed.go).
	job := fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 4096}
	n := need(t, m, job, 1)
	// H100: 989.5 bf16 TFLOPS at 4.00/h; A100-80GB: 312 TFLOPS at 2.00/h. Per hour the
	// A100 is cheaper; per job the H100 is: cost ∝ price / TFLOPS = 0.00404 vs 0.00641.
	h100 := offer("p", "h100", "H100", 1, math.Max(80, n+1), 4.0)
	a100 := offer("p", "a100", "A100-80GB", 1, math.Max(80, n+1), 2.0)
	tokens := 1e9
	in := RecommendInput{Model: m, Job: job, Offers: []pricing.Offer{h100, a100}, Tokens: tokens, Rank: RankHourly}
	hourly := recommend(t, in)
	if hourly.Offers[0].InstanceType != "a100" {
		t.Errorf("hourly ranking picked %s; want a100", hourly.Offers[0].InstanceType)
	}
	in.Rank = "job"
	byJob := recommend(t, in)
	if byJob.Offers[0].InstanceType != "h100" {
		t.Fatalf("job ranking picked %s; want h100", byJob.Offers[0].InstanceType)
	}
	// The hours are the time model's (fit/throughput.go) on one H100, the cost is
	// setup plus run billed per the provider's rule (default: per minute).
	res, err := fit.Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := pricing.LookupGPU("H100")
	g, _ := jobtime.TimeGPUFor(spec, res.Job.Precision, 1, -1)
	tm := jobtime.TimeModelFor(m, res)
	tim, _ := tm.Estimate(&g)
	wantH := tokens / tim.TokensPerSec / 3600
	if got := *byJob.Offers[0].EstHours; math.Abs(got-wantH) > 0.001 {
		t.Errorf("H100 hours = %v; want %v", got, wantH)
	}
	billed := jobtime.BillingFor("p").BilledHours(wantH + jobtime.SetupHours(2*float64(m.Params())))
	b := byJob.Offers[0].Bill
	if got, want := b.ComputeUSD, billed*4.0; math.Abs(got-want) > 0.01 {
		t.Errorf("H100 compute = %v; want %v (billed %.4f h)", got, want, billed)
	}
	// The all-in cost adds the disk and the egress to the instance-hours (allin.go).
	if got, want := *byJob.Offers[0].EstCostUSD, b.ComputeUSD+b.DiskUSD+b.EgressUSD; math.Abs(got-want) > 0.01 || b.DiskUSD <= 0 {
		t.Errorf("H100 cost = %v; want compute %v + disk %v + egress %v", got, b.ComputeUSD, b.DiskUSD, b.EgressUSD)
	}
	// A GPU the catalog does not know gets no time, and a warning says so.
	x := offer("p", "x999", "X999", 1, 200, 0.1)
	in.Offers = append(in.Offers, x)
	withX := recommend(t, in)
	if last := withX.Offers[len(withX.Offers)-1]; last.InstanceType != "x999" || last.EstHours != nil {
		t.Errorf("X999 fit = %+v; want it last with no time estimate", last)
	}
	if !strings.Contains(strings.Join(withX.Warnings, "\n"), "X999") {
		t.Errorf("warnings %v do not name the X999's missing figure", withX.Warnings)
	}
	// Without the job's size, the default ranks by the dollars per million trained tokens:
	// the same order, each offer's figure its price over its tokens per hour.
	perUnit := recommend(t, RecommendInput{Model: m, Job: job, Offers: in.Offers})
	if perUnit.RankedBy != RankedByMTokens || perUnit.Offers[0].InstanceType != "h100" || perUnit.Offers[len(perUnit.Offers)-1].InstanceType != "x999" {
		t.Fatalf("ranked by %s: %v; want usd_per_m_tokens with h100 first, x999 (untimed) last", perUnit.RankedBy, instanceTypes(perUnit.Offers))
	}
	for _, f := range perUnit.Offers[:2] {
		want := f.PriceUSDHr / (*f.TokensPerSec * 3600) * 1e6
		if f.USDPerMTokens == nil || math.Abs(*f.USDPerMTokens-want) > 1e-3 {
			t.Errorf("%s: $/M tokens %v; want %v", f.InstanceType, f.USDPerMTokens, want)
		}
	}
	if x := perUnit.Offers[2]; x.USDPerMTokens != nil || x.EstHours != nil {
		t.Errorf("x999 (no datasheet figure) has a cost of the work: %+v", x)
	}
}

func TestRecommendNothingFitsNearestMiss(t *testing.T) {
	m := mustModel(t, "llama-2-70b")
	job := fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 512}
	offers := []pricing.Offer{offer("p", "1x80", "A100-80GB", 1, 80, 2), offer("p", "8x80", "A100-80GB", 8, 80, 16)}
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers})
	if len(rec.Offers) != 0 {
		t.Fatalf("70B LoRA in bf16-mixed fitted 80 GiB: %+v", rec.Offers)
	}
	for _, want := range []string{"memory: needs", "GiB per GPU", "79.1 GiB usable per GPU", "--task qlora", "would fit"} {
		if !strings.Contains(rec.NearestMiss, want) {
			t.Errorf("nearest miss %q lacks %q", rec.NearestMiss, want)
		}
	}
}

func TestRecommendDeterministic(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	var offers []pricing.Offer
	for i := range 50 {
		offers = append(offers, offer("p"+string(rune('a'+i%5)), "t"+string(rune('a'+i)), "H100", 1, 80, float64(1+i%3)))
	}
	a := recommend(t, RecommendInput{Model: m, Job: fit.Job{}, Offers: offers})
	for range 3 {
		b := recommend(t, RecommendInput{Model: m, Job: fit.Job{}, Offers: offers})
		for i := range a.Offers {
			if a.Offers[i].Key() != b.Offers[i].Key() {
				t.Fatalf("run differs at %d: %v vs %v", i, a.Offers[i].Key(), b.Offers[i].Key())
			}
		}
	}
}

// TestMXFP4GptOssFitsOneH100: gpt-oss-120b's MXFP4 checkpoint fits one 80 GB GPU for
// inference, as its model card says.
func TestMXFP4GptOssFitsOneH100(t *testing.T) {
	m := mustModel(t, "gpt-oss-120b")
	h100 := pricing.Offer{Provider: "test", Region: "r", InstanceType: "h100x1", GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80, PriceUSDHr: 2}
	rec, err := Recommend(RecommendInput{Model: m, Job: fit.Job{}, Offers: []pricing.Offer{h100}, HeadroomPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Offers) != 1 {
		t.Fatalf("gpt-oss-120b does not fit one H100 80GB: %s (estimate %v GiB)", rec.NearestMiss, rec.Estimate.DeviceTotalGiB)
	}
}
