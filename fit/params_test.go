package fit

import (
	"math"
	"testing"

	"github.com/pickergpu/picker/model"
)

// TestParamsModelGenericActivations: a model known only by its parameter count keeps
// Korthikanti et al. 2022's per-layer activations (eq. 1, 34·s·b·h bytes in 16 bits) less
// the two dropout masks (no dropout) and less the 5·a·s² term (fused attention): 32·s·b·h;
// eager attention without dropout adds the 16-bit softmax output, 2·a·s²·b bytes.
func TestParamsModelGenericActivations(t *testing.T) {
	m, err := model.ModelFromParams("6.7b")
	if err != nil {
		t.Fatal(err)
	}
	h, a := float64(m.Hidden), float64(m.Dec.Heads)
	const B, S = 2, 1024
	tokens := float64(B * S)
	cases := []struct {
		name string
		job  Job
		want float64
	}{
		{"sdpa", Job{Task: TaskFullFT, Batch: B, SeqLen: S}, 32 * h * tokens},
		{"flash", Job{Task: TaskFullFT, Batch: B, SeqLen: S, Attention: "flash"}, 32 * h * tokens},
		{"eager", Job{Task: TaskFullFT, Batch: B, SeqLen: S, Attention: "eager"}, 32*h*tokens + 2*a*S*S*float64(B)},
		// LoRA on q_proj,v_proj only: the MLP's linear inputs (input 2, GELU output 8) are
		// not needed for a weight gradient; the GELU input (8) still is for its own backward.
		{"lora", Job{Task: TaskLoRA, Precision: "bf16", Batch: B, SeqLen: S}, (32 - 2 - 8) * h * tokens},
	}
	for _, c := range cases {
		r, err := resolve(m, c.job)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := r.layerBytes(m, &m.Dec, tokens, float64(S), float64(S)); math.Abs(got-c.want) > 1 {
			t.Errorf("%s: layer activations %.0f bytes, want %.0f (%.2f·s·b·h)", c.name, got, c.want, got/(h*tokens))
		}
	}
}

// TestParamsModelLossWorkspace: the logits workspace of a params-only model is the fp32
// logits the cross-entropy stores (Korthikanti et al. 2022 section 4.3: 4·s·b·v) plus their
// 16-bit gradient: 6 bytes per token and vocabulary entry in bf16, 4 in fp32; a catalog
// Llama keeps transformers' 14 (bf16 logits, fp32 upcast, fp32 log-softmax, fp32 gradient).
func TestParamsModelLossWorkspace(t *testing.T) {
	pm, err := model.ModelFromParams("1b")
	if err != nil {
		t.Fatal(err)
	}
	const B, S = 4, 512
	cases := []struct {
		name  string
		m     *model.Model
		prec  Precision
		bytes float64
	}{
		{"params bf16-mixed", pm, "bf16-mixed", 4 + 2},
		{"params fp32", pm, "fp32", 4},
		{"llama bf16-mixed", catModel(t, "tinyllama-1.1b"), "bf16-mixed", 2 + 4 + 4 + 4},
	}
	for _, c := range cases {
		r, err := resolve(c.m, Job{Task: TaskFullFT, Precision: c.prec, Batch: B, SeqLen: S})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var tm trainMem
		tm.activations(c.m, r)
		if want := float64(B*S) * float64(c.m.Vocab) * c.bytes; math.Abs(tm.ws-want) > 1 {
			t.Errorf("%s: loss workspace %.0f bytes, want %.0f (%g bytes per token and vocab entry)", c.name, tm.ws, want, c.bytes)
		}
	}
}

// TestShardedStepWithoutGatheredLayers: when the optimizer step sets a ZeRO-3/FSDP
// training peak (no gradient accumulation), the gathered layers are already resharded:
// the step holds 16-bit weight shards 2, 16-bit gradient shards 2, fp32 master + Adam m, v
// 12 and foreach AdamW's sqrt(v) 4 bytes per parameter, all divided by the world size.
func TestShardedStepWithoutGatheredLayers(t *testing.T) {
	m, err := model.ModelFromParams("30b")
	if err != nil {
		t.Fatal(err)
	}
	const g = 8
	res, err := Estimate(m, Job{Task: TaskFullFT, Shard: "fsdp", GPUs: g, GradCkpt: true, Batch: 1, SeqLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	P := float64(m.ParamCount)
	if want := P * 2 / g / GiB; math.Abs(res.Breakdown.Weights-want) > 0.002 {
		t.Errorf("weights at the step %.3f GiB, want the shard alone %.3f", res.Breakdown.Weights, want)
	}
	if want := P * (2 + 2 + 12 + 4) / g / GiB; math.Abs(res.PeakAllocatedGiB-want) > 0.005 {
		t.Errorf("peak allocated %.3f GiB, want the step's %.3f", res.PeakAllocatedGiB, want)
	}
}

// TestParamsModelPrefillWorkspace: a generic layer's prefill holds, at its widest, the MLP
// input, the up projection's output and the GELU's output (h + 4h + 4h per token), wider
// than the attention block (normed input, q, k, v, output: 5h); plus the last position's
// logits in bf16 and their fp32 upcast.
func TestParamsModelPrefillWorkspace(t *testing.T) {
	m, err := model.ModelFromParams("7b")
	if err != nil {
		t.Fatal(err)
	}
	const B, S = 8, 2048
	res, err := Estimate(m, Job{Batch: B, SeqLen: S})
	if err != nil {
		t.Fatal(err)
	}
	h := float64(m.Hidden)
	want := (float64(B*S)*9*h*2 + B*float64(m.Vocab)*(2+4)) / GiB
	if math.Abs(res.Breakdown.Workspace-want) > 0.002 {
		t.Errorf("prefill workspace %.3f GiB, want %.3f", res.Breakdown.Workspace, want)
	}
}
