package fit

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

func catModel(t testing.TB, ref string) *model.Model {
	t.Helper()
	m, ok, err := model.CatalogModel(ref)
	if !ok || err != nil {
		t.Fatalf("CatalogModel(%q): ok %v err %v", ref, ok, err)
	}
	return m
}

func TestImpossibleJobs(t *testing.T) {
	tests := []struct {
		model string
		job   Job
		why   string
		param string // the flag the error names as data (pricing.Error.Param)
	}{
		{"llama-2-7b", Job{Task: TaskInference, Shard: "zero3", GPUs: 2}, "ZeRO/FSDP shard training states", "shard"},
		{"llama-2-7b", Job{Task: TaskQLoRA, Precision: "fp32"}, "QLoRA computes in 16 bits", "precision"},
		{"llama-2-7b", Job{Task: TaskQLoRA, Quant: "none"}, "4-bit base", "quant"},
		{"llama-2-7b", Job{Task: TaskFullFT, Quant: "nf4"}, "cannot be fully fine-tuned", "quant"},
		{"llama-2-7b", Job{Resolution: Resolution{512, 512}}, "language model", "resolution"},
		{"llama-2-7b", Job{Task: TaskImageGen}, "not an image pipeline", "task"},
		{"sd-1.5", Job{Task: TaskFullFT}, "only --task image-gen", "task"},
		{"sd-1.5", Job{Task: TaskImageGen, SeqLen: 77}, "--seq-len", "seq-len"},
		{"llama-2-7b", Job{DoubleQuant: true, Quant: "int8"}, "--double-quant", "double-quant"},
		{"llama-2-7b", Job{Task: TaskFullFT, Precision: "fp32", Attention: "flash"}, "FlashAttention", "attention"},
		{"llama-2-7b", Job{Task: TaskFullFT, Shard: "tp", GPUs: 2}, "tensor parallelism", "shard"},
		{"llama-2-7b", Job{Task: TaskFullFT, Offload: "optimizer"}, "needs ZeRO or FSDP", "offload"},
		{"llama-2-7b", Job{Task: TaskFullFT, Shard: "zero2", Offload: "optimizer+params"}, "zero3 or fsdp", "offload"},
		{"llama-2-7b", Job{Task: TaskInference, Offload: "optimizer"}, "needs a training task", "offload"},
		{"llama-2-7b", Job{Task: TaskInference, GradCkpt: true}, "applies to training", "grad-ckpt"},
		{"llama-2-7b", Job{Task: TaskLoRA, LoRATargets: []string{"query_key_value"}}, `no linear layer named "query_key_value"`, "lora-targets"},
		{"llama-2-7b", Job{Task: TaskFullFT, Split: SplitLayer, GPUs: 2}, "training uses --shard", "split"},
		{"llama-2-7b", Job{Split: SplitLayer, GPUs: 2, Shard: "none"}, "drop --shard", "split"},
		{"llama-2-7b", Job{Split: SplitTensor, GPUs: 2, Shard: "none"}, "whole replica on each", "split"},
		{"llama-2-70b", Job{GPUs: 3}, "does not divide", "gpus"},
	}
	for _, tt := range tests {
		_, err := Estimate(catModel(t, tt.model), tt.job)
		if err == nil {
			t.Errorf("%s %+v: no error", tt.model, tt.job)
			continue
		}
		if pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%s %+v: code %s, want invalid", tt.model, tt.job, pricing.ErrorCode(err))
		}
		if got := pricing.ErrorParam(err); got != tt.param {
			t.Errorf("%s %+v: error names parameter %q, want %q", tt.model, tt.job, got, tt.param)
		}
		if !strings.Contains(err.Error(), tt.why) {
			t.Errorf("%s %+v: error %q lacks %q", tt.model, tt.job, err, tt.why)
		}
	}
}

// TestResultJSON pins the CONTRACT's field names.
func TestResultJSON(t *testing.T) {
	job, err := ParseJob(map[string]string{"task": "lora", "batch": "4"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Estimate(catModel(t, "llama-2-7b"), job)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"model", "job", "trainable_params", "breakdown_gib", "peak_allocated_gib", "device_total_gib", "cpu_ram_gib", "assumptions"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	model := got["model"].(map[string]any)
	if model["name"] != "llama-2-7b" || model["hf_id"] != "meta-llama/Llama-2-7b-hf" || model["architecture"] != "llama" || model["params"] != float64(6738415616) {
		t.Errorf("model = %v", model)
	}
	jobJ := got["job"].(map[string]any)
	for _, k := range []string{"task", "precision", "quant", "double_quant", "optimizer", "batch", "seq_len", "grad_ckpt", "attention",
		"lora_r", "lora_targets", "gpus", "shard", "offload", "resolution", "images", "framework", "lora_dropout"} {
		if _, ok := jobJ[k]; !ok {
			t.Errorf("job lacks %q", k)
		}
	}
	// hf LoRA: the base loads in bf16 (framework.go), PEFT's lora_dropout 0.
	if jobJ["task"] != "lora" || jobJ["precision"] != "bf16" || jobJ["framework"] != "hf" || jobJ["lora_dropout"] != float64(0) || jobJ["seq_len"] != float64(2048) || jobJ["lora_r"] != float64(8) || jobJ["batch"] != float64(4) {
		t.Errorf("job defaults not resolved: %v", jobJ)
	}
	if got["trainable_params"] != float64(4194304) {
		t.Errorf("trainable_params = %v", got["trainable_params"])
	}
	bd := got["breakdown_gib"].(map[string]any)
	for _, k := range []string{"weights", "gradients", "optimizer", "activations", "kv_cache", "workspace"} {
		if _, ok := bd[k]; !ok {
			t.Errorf("breakdown lacks %q", k)
		}
	}
	sum := res.Breakdown.Weights + res.Breakdown.Gradients + res.Breakdown.Optimizer + res.Breakdown.Activations + res.Breakdown.KVCache + res.Breakdown.Workspace
	if math.Abs(sum-res.PeakAllocatedGiB) > 0.01 {
		t.Errorf("breakdown sums to %.3f, peak %.3f", sum, res.PeakAllocatedGiB)
	}
	if res.DeviceTotalGiB <= res.PeakAllocatedGiB {
		t.Errorf("device_total %.2f <= peak %.2f", res.DeviceTotalGiB, res.PeakAllocatedGiB)
	}
	if len(res.Assumptions) == 0 {
		t.Error("no assumptions")
	}
}

// TestPhysics checks directions and magnitudes the memory model must respect.
func TestPhysics(t *testing.T) {
	est := func(ref string, j Job) *Result {
		t.Helper()
		r, err := Estimate(catModel(t, ref), j)
		if err != nil {
			t.Fatalf("%s %+v: %v", ref, j, err)
		}
		return r
	}
	gibOf := func(bytes float64) float64 { return bytes / (1 << 30) }

	// Inference weights are params x 2 bytes in bf16 (vLLM reports 12.55 GiB for Llama-2-7B).
	inf := est("llama-2-7b", Job{SeqLen: 1})
	if w := inf.Breakdown.Weights; math.Abs(w-gibOf(6738415616*2)) > 0.01 {
		t.Errorf("llama-2-7b bf16 weights = %.3f GiB", w)
	}
	// KV cache: 2 x 32 layers x 4096 x 4096 tokens x 2 B = 2 GiB for Llama-2-7B at 4096 tokens.
	kv := est("llama-2-7b", Job{SeqLen: 4096}).Breakdown.KVCache
	if math.Abs(kv-2.0) > 0.001 {
		t.Errorf("llama-2-7b KV cache at 4096 = %.3f GiB, want 2", kv)
	}
	// GQA: Llama-3-8B has 8 of 32 heads as KV heads -> a quarter of that.
	if kv8 := est("llama-3-8b", Job{SeqLen: 4096}).Breakdown.KVCache; math.Abs(kv8-0.5) > 0.001 {
		t.Errorf("llama-3-8b KV cache = %.3f GiB, want 0.5", kv8)
	}
	// MLA compresses the KV cache far below multi-head size.
	if mla := est("deepseek-v2-lite", Job{SeqLen: 4096}).Breakdown.KVCache; mla > 0.2 {
		t.Errorf("deepseek-v2-lite KV cache = %.3f GiB, want < 0.2 (MLA latent)", mla)
	}
	// Full fine-tuning with AdamW, mixed precision under ZeRO: 2+2+12 bytes per parameter.
	z := est("llama-2-7b", Job{Task: TaskFullFT, Shard: "zero1", GPUs: 1, SeqLen: 16})
	if s := z.Breakdown.Weights + z.Breakdown.Gradients + z.Breakdown.Optimizer; math.Abs(s-gibOf(6738415616*16)) > 0.1 {
		t.Errorf("mixed-precision AdamW states = %.2f GiB, want 16 B/param", s)
	}
	// True bf16 AdamW: 2+2+4 bytes; 8-bit AdamW: 2 bytes of states.
	tb := est("llama-2-7b", Job{Task: TaskFullFT, Precision: "bf16", SeqLen: 16})
	if s := tb.Breakdown.Weights + tb.Breakdown.Gradients + tb.Breakdown.Optimizer; math.Abs(s-gibOf(6738415616*8)) > 0.1 {
		t.Errorf("bf16 AdamW = %.2f GiB, want 8 B/param", s)
	}
	if o := est("llama-2-7b", Job{Task: TaskFullFT, Precision: "bf16", Optimizer: "adamw-8bit", SeqLen: 16}).Breakdown.Optimizer; math.Abs(o-gibOf(6738415616*2)) > 0.1 {
		t.Errorf("8-bit AdamW states = %.2f GiB, want 2 B/param", o)
	}
	if o := est("llama-2-7b", Job{Task: TaskFullFT, Precision: "bf16", Optimizer: "sgd", SeqLen: 16}).Breakdown.Optimizer; o != 0 {
		t.Errorf("sgd states = %.2f GiB, want 0", o)
	}
	// ZeRO-3 on 8 GPUs divides weights, gradients and states by 8.
	one := est("llama-2-70b", Job{Task: TaskFullFT, Shard: "zero3", GPUs: 1, SeqLen: 512, GradCkpt: true})
	eight := est("llama-2-70b", Job{Task: TaskFullFT, Shard: "zero3", GPUs: 8, SeqLen: 512, GradCkpt: true})
	if r := one.Breakdown.Optimizer / eight.Breakdown.Optimizer; math.Abs(r-8) > 0.01 {
		t.Errorf("zero3 optimizer ratio 1/8 GPUs = %.2f, want 8", r)
	}
	// Gradient checkpointing and flash attention reduce activations; eager grows with s^2.
	base := est("llama-2-7b", Job{Task: TaskLoRA, Batch: 4})
	ckpt := est("llama-2-7b", Job{Task: TaskLoRA, Batch: 4, GradCkpt: true})
	eager := est("llama-2-7b", Job{Task: TaskLoRA, Batch: 4, Attention: "eager"})
	if !(ckpt.Breakdown.Activations < base.Breakdown.Activations/4) {
		t.Errorf("grad-ckpt activations %.2f not << %.2f", ckpt.Breakdown.Activations, base.Breakdown.Activations)
	}
	if !(eager.Breakdown.Activations > base.Breakdown.Activations*1.5) {
		t.Errorf("eager activations %.2f not >> sdpa %.2f", eager.Breakdown.Activations, base.Breakdown.Activations)
	}
	// QLoRA nf4 with double quant is smaller than without, and both far below bf16.
	q := est("llama-2-13b", Job{Task: TaskQLoRA, SeqLen: 512})
	qdq := est("llama-2-13b", Job{Task: TaskQLoRA, SeqLen: 512, DoubleQuant: true})
	if !(qdq.Breakdown.Weights < q.Breakdown.Weights && q.Breakdown.Weights < gibOf(13e9*0.7)) {
		t.Errorf("qlora weights %.2f (dq %.2f)", q.Breakdown.Weights, qdq.Breakdown.Weights)
	}
	// Tensor-parallel inference divides weights.
	tp := est("llama-2-70b", Job{GPUs: 4, SeqLen: 1})
	if r := inf.Breakdown.Weights; tp.Job.Shard != "tp" || tp.Breakdown.Weights > gibOf(68976648192*2)/4+0.01 {
		t.Errorf("tp: shard %s weights %.2f (1-GPU 7B %.2f)", tp.Job.Shard, tp.Breakdown.Weights, r)
	}
	// Offload moves states to host memory.
	off := est("llama-2-7b", Job{Task: TaskFullFT, Shard: "zero3", GPUs: 2, Offload: "optimizer+params", SeqLen: 512})
	if off.Breakdown.Optimizer != 0 || off.CPURAMGiB < gibOf(6.7e9*12) {
		t.Errorf("offload: optimizer %.2f on GPU, cpu %.2f", off.Breakdown.Optimizer, off.CPURAMGiB)
	}
	// Image generation: SDXL at 1024x1024 needs more than at 512x512.
	big := est("sdxl-base", Job{Task: TaskImageGen})
	small := est("sdxl-base", Job{Task: TaskImageGen, Resolution: Resolution{512, 512}})
	if big.Job.Resolution.String() != "1024x1024" || !(big.PeakAllocatedGiB > small.PeakAllocatedGiB) {
		t.Errorf("sdxl: %s %.2f vs 512 %.2f", big.Job.Resolution, big.PeakAllocatedGiB, small.PeakAllocatedGiB)
	}
	// A raw parameter count estimates weights from the exact count.
	pm, err := model.ModelFromParams("7b")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Estimate(pm, Job{SeqLen: 1})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(pr.Breakdown.Weights-gibOf(7e9*2)) > 0.01 {
		t.Errorf("--params 7b weights = %.3f GiB", pr.Breakdown.Weights)
	}
}

// BenchmarkEstimate: recommend builds tens of estimates per request (issue 29), mostly
// of these kinds: a default inference, a served (vLLM) inference and LoRA fine-tunes.
func BenchmarkEstimate(b *testing.B) {
	cases := []struct {
		name, model string
		job         Job
	}{
		{"llama-2-7b-lora", "llama-2-7b", Job{Task: TaskLoRA, Batch: 4, SeqLen: 2048}},
		{"llama-2-70b-full-zero3-8gpu", "llama-2-70b", Job{Task: TaskFullFT, Shard: "zero3", GPUs: 8, GradCkpt: true}},
		{"llama-3.1-8b-inference", "llama-3.1-8b-instruct", Job{}},
		{"llama-3.1-8b-vllm-2gpu", "llama-3.1-8b-instruct", Job{Engine: EngineVLLM, GPUs: 2, Batch: 4, PromptTokens: 1000, OutputTokens: 500}},
		{"llama-3.1-8b-lora-fsdp-4gpu", "llama-3.1-8b-instruct", Job{Task: TaskLoRA, SeqLen: 2048, GPUs: 4, Shard: "fsdp"}},
	}
	for _, c := range cases {
		m := catModel(b, c.model)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Estimate(m, c.job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLayerSplit: --split layer (llama.cpp's --split-mode layer) keeps whole layers on
// each GPU, so any GPU count divides the model (70B's 64 heads on 3 GPUs), weights and KV
// cache divide by the count (all 8 KV heads' layers are spread, not at most 8 ways), and
// one layer's prefill workspace stays whole.
func TestLayerSplit(t *testing.T) {
	m := catModel(t, "llama-2-70b")
	one, err := Estimate(m, Job{Quant: "int4", SeqLen: 4096, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []int{2, 3} {
		r, err := Estimate(m, Job{Quant: "int4", SeqLen: 4096, Batch: 4, GPUs: g, Split: SplitLayer})
		if err != nil {
			t.Fatalf("%d GPUs: %v", g, err)
		}
		if r.Job.Split != SplitLayer || r.Job.Shard != "tp" {
			t.Errorf("%d GPUs: resolved split %q shard %q; want layer over tp", g, r.Job.Split, r.Job.Shard)
		}
		n := float64(g)
		if !near(r.Breakdown.Weights, one.Breakdown.Weights/n) || !near(r.Breakdown.KVCache, one.Breakdown.KVCache/n) {
			t.Errorf("%d GPUs: weights %.2f kv %.2f GiB; want 1/%d of %.2f and %.2f", g, r.Breakdown.Weights, r.Breakdown.KVCache, g, one.Breakdown.Weights, one.Breakdown.KVCache)
		}
		if r.Breakdown.Workspace < one.Breakdown.Workspace-1e-3 {
			t.Errorf("%d GPUs: workspace %.2f GiB; want the whole layer's %.2f", g, r.Breakdown.Workspace, one.Breakdown.Workspace)
		}
	}
	tp, err := Estimate(m, Job{GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if tp.Job.Split != SplitTensor {
		t.Errorf("inference on 2 GPUs resolves --split %q; want tensor", tp.Job.Split)
	}
	if r, _ := Estimate(m, Job{}); r.Job.Split != "" {
		t.Errorf("one GPU resolves --split %q; want none", r.Job.Split)
	}
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-3*math.Max(1, math.Abs(want)) }
