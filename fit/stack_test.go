package fit

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
)

func mustEstimate(t *testing.T, model string, j Job) *Result {
	t.Helper()
	r, err := Estimate(catModel(t, model), j)
	if err != nil {
		t.Fatalf("Estimate(%s, %+v): %v", model, j, err)
	}
	return r
}

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func hasNote(r *Result, sub string) bool {
	for _, a := range r.Assumptions {
		if strings.Contains(a, sub) {
			return true
		}
	}
	return false
}

// DeepSpeed's reduce bucket is allocated whole (reduce_bucket_size elements in 16 bits) as
// soon as there is a second GPU to reduce with; NCCL's buffers sit outside the allocator.
func TestDeepSpeedBucketAndNCCL(t *testing.T) {
	base := Job{Task: TaskFullFT, Precision: "bf16", Shard: "zero2", OptimizerStep: "fused", GradAccum: 2}
	one := base
	one.GPUs = 1
	two := base
	two.GPUs = 2
	r1, r2 := mustEstimate(t, "tinyllama-1.1b", one), mustEstimate(t, "tinyllama-1.1b", two)
	if got, want := r2.Breakdown.Workspace-r1.Breakdown.Workspace, dsReduceBucketElems*2/GiB; !approx(got, want, 0.002) {
		t.Errorf("zero2 workspace on 2 GPUs - on 1 = %.3f GiB, want the reduce bucket %.3f", got, want)
	}
	if r1.NCCLBuffersGiB != 0 {
		t.Errorf("1 GPU: nccl_buffers_gib %.3f, want 0", r1.NCCLBuffersGiB)
	}
	if want := Round3(ncclCommBytes / GiB); r2.NCCLBuffersGiB != want {
		t.Errorf("2 GPUs: nccl_buffers_gib %.3f, want %.3f", r2.NCCLBuffersGiB, want)
	}
	if got := r2.DeviceTotalGiB - r2.PeakReservedGiB - r2.CUDAContextGiB; !approx(got, r2.NCCLBuffersGiB, 0.002) {
		t.Errorf("device total - reserved - context = %.3f, want the NCCL buffers %.3f (outside the allocator)", got, r2.NCCLBuffersGiB)
	}
	if !hasNote(r2, "reduce_bucket_size") || !hasNote(r2, "NCCL ring buffers") {
		t.Errorf("assumptions do not name the bucket and NCCL terms: %q", r2.Assumptions)
	}
}

// FSDP under no_sync accumulation (hf Trainer/Accelerate, LitGPT) holds the full gradients;
// torchtune reduce-scatters every micro-batch and keeps them sharded.
func TestFSDPNoSyncGradients(t *testing.T) {
	j := Job{Task: TaskFullFT, Precision: "bf16", Shard: "fsdp", GPUs: 4, GradAccum: 4, Optimizer: "adamw", OptimizerStep: "fused"}
	hf := mustEstimate(t, "tinyllama-1.1b", j)
	j.Framework = FrameworkTorchtune
	tt := mustEstimate(t, "tinyllama-1.1b", j)
	if tt.Breakdown.Gradients <= 0 || !approx(hf.Breakdown.Gradients/tt.Breakdown.Gradients, 4, 0.01) {
		t.Errorf("gradients hf %.3f, torchtune %.3f GiB: want hf = 4 x torchtune (unsharded over 4 GPUs)", hf.Breakdown.Gradients, tt.Breakdown.Gradients)
	}
	if !hasNote(hf, "no_sync") || hasNote(tt, "no_sync") {
		t.Errorf("the no_sync note belongs to hf only")
	}
	j.Framework, j.GradAccum = "", 1 // one micro-batch per step: nothing accumulates
	if r := mustEstimate(t, "tinyllama-1.1b", j); hasNote(r, "no_sync") {
		t.Errorf("--grad-accum 1 noted no_sync")
	}
}

// HSDP shards within a node and replicates across nodes: a node's states are those of FSDP
// on that node alone.
func TestHSDPShardsWithinNode(t *testing.T) {
	h := mustEstimate(t, "llama-2-7b", Job{Task: TaskFullFT, Shard: "hsdp", GPUs: 8, Nodes: 2})
	f1 := mustEstimate(t, "llama-2-7b", Job{Task: TaskFullFT, Shard: "fsdp", GPUs: 8})
	f2 := mustEstimate(t, "llama-2-7b", Job{Task: TaskFullFT, Shard: "fsdp", GPUs: 8, Nodes: 2})
	if h.Breakdown.Optimizer != f1.Breakdown.Optimizer {
		t.Errorf("hsdp 2x8 optimizer %.3f, want fsdp on 8 GPUs' %.3f", h.Breakdown.Optimizer, f1.Breakdown.Optimizer)
	}
	if !approx(h.Breakdown.Optimizer/f2.Breakdown.Optimizer, 2, 0.01) {
		t.Errorf("hsdp 2x8 optimizer %.3f, want twice fsdp over 16 GPUs' %.3f", h.Breakdown.Optimizer, f2.Breakdown.Optimizer)
	}
	if !strings.Contains(h.Layout, "replicated across the 2 nodes") {
		t.Errorf("layout %q", h.Layout)
	}
	if h.NCCLBuffersGiB != 2*f2.NCCLBuffersGiB {
		t.Errorf("hsdp NCCL %.3f, want two communicators (2 x %.3f)", h.NCCLBuffersGiB, f2.NCCLBuffersGiB)
	}
	if _, err := Estimate(catModel(t, "llama-2-7b"), Job{Shard: "hsdp", GPUs: 2}); err == nil {
		t.Error("inference with --shard hsdp: no error")
	}
}

// DeepSpeed's bf16 mode keeps fp32 masters and fp32 states (12 bytes/param for AdamW)
// where FSDP's pure bf16 keeps bf16 m and v (4 bytes/param).
func TestDeepSpeedBF16Masters(t *testing.T) {
	ds := mustEstimate(t, "llama-2-7b", Job{Task: TaskFullFT, Precision: "bf16", Shard: "zero3", GPUs: 8})
	fs := mustEstimate(t, "llama-2-7b", Job{Task: TaskFullFT, Precision: "bf16", Shard: "fsdp", GPUs: 8})
	if !approx(ds.Breakdown.Optimizer/fs.Breakdown.Optimizer, 3, 0.01) {
		t.Errorf("optimizer zero3 bf16 %.3f, fsdp bf16 %.3f GiB: want 12/4 = 3", ds.Breakdown.Optimizer, fs.Breakdown.Optimizer)
	}
	if !hasNote(ds, "fp32 master") {
		t.Errorf("no DeepSpeed masters note: %q", ds.Assumptions)
	}
}

// An encoder–decoder's decoder runs over the target: short targets shrink the activations
// and the loss; the default target is --seq-len; a decoder-only model refuses the flag.
func TestTargetTokens(t *testing.T) {
	j := Job{Task: TaskLoRA, SeqLen: 512}
	def := mustEstimate(t, "t5-large", j)
	j.TargetTokens = 512
	same := mustEstimate(t, "t5-large", j)
	j.TargetTokens = 4
	short := mustEstimate(t, "t5-large", j)
	if def.Breakdown != same.Breakdown || def.Job.TargetTokens != 512 {
		t.Errorf("default target %d, breakdown %+v; want --seq-len's, as --target-tokens 512 %+v", def.Job.TargetTokens, def.Breakdown, same.Breakdown)
	}
	if !(short.Breakdown.Activations < def.Breakdown.Activations/1.5) || !(short.Breakdown.Workspace < def.Breakdown.Workspace) {
		t.Errorf("4-token targets: activations %.3f, workspace %.3f; want well below 512-token %.3f, %.3f",
			short.Breakdown.Activations, short.Breakdown.Workspace, def.Breakdown.Activations, def.Breakdown.Workspace)
	}
	if _, err := Estimate(catModel(t, "llama-2-7b"), Job{Task: TaskLoRA, TargetTokens: 4}); err == nil || !strings.Contains(err.Error(), "encoder–decoder") {
		t.Errorf("decoder-only with --target-tokens: err %v", err)
	}
}

// transformers keeps T5's wo in fp32 and out of bitsandbytes' quantization.
func TestKeepFP32Modules(t *testing.T) {
	m := catModel(t, "t5-large")
	r := mustEstimate(t, "t5-large", Job{Task: TaskQLoRA})
	var wo float64
	for _, mod := range m.Modules {
		if mod.Name == "wo" {
			wo += float64(mod.In * mod.Out * mod.Count)
		}
	}
	if wo == 0 {
		t.Fatal("t5-large has no wo module")
	}
	// The same job with every linear weight 4-bit would be wo x (4 - 4-bit bytes) lighter.
	all4 := (float64(m.EmbedParams+m.OtherParams+m.HeadParams)*2 + float64(m.LinearParams)*QuantBytes(m, "nf4", false)) / GiB
	if got, want := r.Breakdown.Weights-all4, wo*(4-QuantBytes(m, "nf4", false))/GiB; !approx(got, want, 0.01) {
		t.Errorf("t5 qlora weights exceed an all-4-bit model by %.3f GiB, want wo in fp32: %.3f", got, want)
	}
	if !hasNote(r, "_keep_in_fp32_modules") {
		t.Errorf("no keep-in-fp32 note: %q", r.Assumptions)
	}
}

// LitGPT's FSDP puts each Block's frozen weights and adapters in one flat parameter, so
// the frozen weights get gradients; hf's PEFT wrap policy keeps the adapters apart.
func TestLitGPTFlatParamGradients(t *testing.T) {
	m := catModel(t, "llama-2-7b")
	j := Job{Task: TaskLoRA, Precision: "bf16", Shard: "fsdp", GPUs: 4, GradAccum: 1, GradCkpt: true}
	hf := mustEstimate(t, "llama-2-7b", j)
	j.Framework = FrameworkLitGPT
	lit := mustEstimate(t, "llama-2-7b", j)
	blocks := float64(m.Dec.Layers*m.Dec.LayerParams) * 2 / 4 / GiB // bf16, sharded over 4 (no accumulation)
	if lit.Breakdown.Gradients < blocks || hf.Breakdown.Gradients > 0.1 {
		t.Errorf("gradients litgpt %.3f (want >= the blocks' %.3f), hf %.3f (want only the adapters')", lit.Breakdown.Gradients, blocks, hf.Breakdown.Gradients)
	}
}

// T5-3B (testdata/google-t5__t5-3b.json, the Hub's config.json fields for google-t5/t5-3b):
// 2851M parameters, as DeepSpeed's memory estimator prints for the live model
// (deepspeedai/DeepSpeed#965: "Model with 2851M total params"), and a LoRA over 4-token
// targets whose assumptions name the target length.
func TestT5ThreeBTargets(t *testing.T) {
	data, err := os.ReadFile("testdata/google-t5__t5-3b.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.ModelFromConfig("t5-3b.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if m.ParamCount/1_000_000 != 2851 {
		t.Errorf("t5-3b: %d parameters, want 2851M", m.ParamCount)
	}
	r, err := Estimate(m, Job{Task: TaskLoRA, TargetTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.Job.TargetTokens != 4 || !hasNote(r, "--target-tokens 4") {
		t.Errorf("target %d, assumptions %q", r.Job.TargetTokens, r.Assumptions)
	}
}
