package recommend

import (
	"math"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

func TestGPUCatalogFP8(t *testing.T) {
	for _, g := range pricing.GPUs() {
		want := map[string]bool{"Ada Lovelace": true, "Hopper": true, "Blackwell": true, "Blackwell Ultra": true, "CDNA 3": true, "CDNA 4": true}[g.Architecture]
		if g.FP8 != want {
			t.Errorf("%s (%s): fp8 %v, want %v", g.Model, g.Architecture, g.FP8, want)
		}
	}
}

// TestFP8Inference: --quant fp8 stores linear weights in one byte (the rest in bf16);
// --kv-cache-dtype fp8 halves the KV cache.
func TestFP8Inference(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-2-7b")
	base, err := fit.Estimate(m, fit.Job{Batch: 4, SeqLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	q, err := fit.Estimate(m, fit.Job{Batch: 4, SeqLen: 4096, Quant: "fp8", KVCacheDtype: "fp8"})
	if err != nil {
		t.Fatal(err)
	}
	wantW := (float64(m.LinearParams)*1 + float64(m.ParamCount-m.LinearParams)*2) / fit.GiB
	if math.Abs(q.Breakdown.Weights-wantW) > 0.001 {
		t.Errorf("fp8 weights %v GiB, want %v", q.Breakdown.Weights, wantW)
	}
	if math.Abs(q.Breakdown.KVCache-base.Breakdown.KVCache/2) > 0.001 || q.Job.KVCacheDtype != "fp8" || base.Job.KVCacheDtype != "auto" {
		t.Errorf("fp8 KV %v GiB vs %v (%s/%s)", q.Breakdown.KVCache, base.Breakdown.KVCache, q.Job.KVCacheDtype, base.Job.KVCacheDtype)
	}
	for _, j := range []fit.Job{{Precision: "fp8-mixed"}, {Task: fit.TaskFullFT, Quant: "fp8"}, {Task: fit.TaskLoRA, KVCacheDtype: "fp8"}} {
		if _, err := fit.Estimate(m, j); pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%+v: %v, want an input error", j, err)
		}
	}
}

// TestFP8MixedTraining: fp8-mixed keeps bf16-mixed's states and adds TransformerEngine's
// cached fp8 weight + transpose (2 B per linear weight), while the linear inputs saved for
// backward shrink from 2 bytes to 1.
func TestFP8MixedTraining(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-2-7b")
	j := fit.Job{Task: fit.TaskFullFT, Shard: "zero3", GPUs: 8, Batch: 2, SeqLen: 2048}
	bf, err := fit.Estimate(m, j)
	if err != nil {
		t.Fatal(err)
	}
	j.Precision = "fp8-mixed"
	f8, err := fit.Estimate(m, j)
	if err != nil {
		t.Fatal(err)
	}
	// ZeRO-3 over 8 GPUs: the cache of the gathered layers, at most 2 layers' linears x 2 B,
	// or 1/8 of all linear weights x 2 B, whichever is smaller.
	cache := math.Min(2*float64(m.LinearParams)/8, 4*float64(m.Dec.LayerParams)) / fit.GiB
	if d := f8.Breakdown.Weights - bf.Breakdown.Weights; math.Abs(d-cache) > 0.002 {
		t.Errorf("fp8 weight cache %v GiB, want %v", d, cache)
	}
	if f8.Breakdown.Activations >= bf.Breakdown.Activations || f8.Breakdown.Optimizer != bf.Breakdown.Optimizer {
		t.Errorf("fp8-mixed activations %v (bf16 %v), optimizer %v (bf16 %v)", f8.Breakdown.Activations, bf.Breakdown.Activations, f8.Breakdown.Optimizer, bf.Breakdown.Optimizer)
	}
}

// TestRecommendFP8Excludes: an fp8 job skips GPUs without fp8 and says why, per GPU model.
func TestRecommendFP8Excludes(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-2-7b")
	offers := []pricing.Offer{nodeOffer("x", "a100", "A100-80GB", 1, 80, 1), nodeOffer("x", "a100b", "A100-80GB", 1, 80, 1.1), nodeOffer("x", "h100", "H100", 1, 80, 3)}
	// TensorRT-LLM has no W8A16 kernels: fp8 weights need fp8 tensor cores (vLLM's
	// Marlin fallback is TestRecommendFP8W8A16).
	rec, err := Recommend(RecommendInput{Model: m, Job: fit.Job{Quant: "fp8", Engine: fit.EngineTRTLLM}, Offers: offers, HeadroomPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Offers) != 1 || rec.Offers[0].GPUModel != "H100" {
		t.Errorf("offers %+v", rec.Offers)
	}
	if len(rec.Excluded) != 1 || rec.Excluded[0].Offers != 2 || !strings.Contains(rec.Excluded[0].Reason, "Ampere") || !strings.Contains(rec.Excluded[0].Reason, "--quant fp8") {
		t.Errorf("excluded %+v", rec.Excluded)
	}
	if strings.Contains(strings.Join(rec.Warnings, "\n"), "A100-80GB") {
		t.Errorf("warnings %q repeat the exclusion (it is in Excluded)", rec.Warnings)
	}
}

// TestRecommendFP8W8A16: vLLM runs fp8 weights on Ampere with its Marlin W8A16 kernels
// (fit.KernelTable), so an A100 stays a pick and says how it runs them; on a V100 (no
// Marlin: compute capability 7.0) the offer is excluded with the kernel's code.
func TestRecommendFP8W8A16(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-2-7b")
	offers := []pricing.Offer{nodeOffer("x", "a100", "A100-80GB", 1, 80, 1), nodeOffer("x", "v100", "V100", 1, 32, 0.5), nodeOffer("x", "h100", "H100", 1, 80, 3)}
	rec, err := Recommend(RecommendInput{Model: m, Job: fit.Job{Quant: "fp8"}, Offers: offers, HeadroomPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Fit{}
	for _, f := range rec.Offers {
		got[f.GPUModel] = f
	}
	a, ok := got["A100-80GB"]
	if !ok || !strings.Contains(strings.Join(append(a.Notes, rec.Warnings...), "\n"), "W8A16") {
		t.Errorf("A100 under vLLM fp8: offers %+v, warnings %q", rec.Offers, rec.Warnings)
	}
	if _, ok := got["V100"]; ok {
		t.Errorf("V100 picked for fp8 weights under vLLM: %+v", rec.Offers)
	}
	if len(rec.Excluded) != 1 || rec.Excluded[0].GPUModel != "V100" || rec.Excluded[0].Code != ExclNoKernel || !strings.Contains(rec.Excluded[0].Reason, "Marlin") {
		t.Errorf("excluded %+v", rec.Excluded)
	}
}
