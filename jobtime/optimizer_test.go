package jobtime

import (
	"math"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// The optimizer step streams the states, masters, gradients and weights once: the bytes
// per trainable parameter follow from each precision's dtypes (AdamW's m and v in fp32
// under mixed precision, the dtype itself in pure 16-bit; 8-bit blockwise states for
// adamw-8bit), and the step adds exactly those bytes over the sustained bandwidth.
func TestOptimizerStep(t *testing.T) {
	for _, c := range []struct {
		name      string
		model     string
		gpus      float64
		job       fit.Job
		perParam  float64 // bytes per trainable parameter and GPU
		minShare  float64 // the step's share of the micro-batch without it
		maxShare  float64
		framework fit.Framework
	}{
		// AMP: m, v (8 B) and the fp32 masters (4 B) read and written, fp32 gradients read.
		{"8B AdamW bf16-mixed, one H100", "llama-3.1-8b", 1, fit.Job{Task: fit.TaskFullFT, SeqLen: 2048}, 2*8 + 2*4 + 4, 0.25, 0.40, ""},
		// 8-bit states: 1 B each of m and v.
		{"8B adamw-8bit", "llama-3.1-8b", 1, fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, Optimizer: "adamw-8bit"}, 2*2 + 2*4 + 4, 0.1, 0.25, ""},
		// ZeRO/FSDP mixed precision: states and fp32 masters in the shard (12 B read and
		// written), 16-bit gradients read and the 16-bit copy written, all over 8 GPUs.
		{"8B FSDP 8 GPUs", "llama-3.1-8b", 8, fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, GPUs: 8, Shard: "fsdp"}, (2*12 + 2 + 2) / 8.0, 0.02, 0.08, ""},
		// bf16-true (LitGPT): m, v and weights in bf16, updated in place; one micro-batch
		// per step (--grad-accum 1).
		{"1B bf16-true", "llama-3.2-1b", 1, fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, Precision: "bf16", GradAccum: 1}, 2*4 + 2*2 + 2, 0.05, 0.30, fit.FrameworkLitGPT},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := c.job
			job.Framework = c.framework
			tim, tm := timeFor(t, c.model, "H100", c.gpus, job, nil)
			T := tm.TrainableParams
			if got := tm.OptStepBytes / T; !near(got, c.perParam, 0.01) {
				t.Errorf("optimizer step moves %.2f B per parameter; want %.2f", got, c.perParam)
			}
			without, _ := timeFor(t, c.model, "H100", c.gpus, job, func(m *TimeModel) { m.OptStepBytes = 0 })
			tokens := math.Max(float64(job.Batch), 1) * float64(job.SeqLen)
			stepWith, stepWithout := tokens*c.gpus/tim.TokensPerSec, tokens*c.gpus/without.TokensPerSec
			if want := tm.OptStepBytes / (3350e9 * bwEfficiency); !near(stepWith-stepWithout, want, 1e-6) {
				t.Errorf("the step adds %.4f s; want its bytes over the bandwidth, %.4f s", stepWith-stepWithout, want)
			}
			if share := stepWith/stepWithout - 1; share < c.minShare || share > c.maxShare {
				t.Errorf("the optimizer step adds %.1f %% to the micro-batch; want %.0f-%.0f %%", 100*share, 100*c.minShare, 100*c.maxShare)
			}
		})
	}

	// LoRA trains adapters only: its step moves a few MB.
	lora, tm := timeFor(t, "llama-3.1-8b", "H100", 1, fit.Job{Task: fit.TaskLoRA, SeqLen: 2048}, nil)
	bare, _ := timeFor(t, "llama-3.1-8b", "H100", 1, fit.Job{Task: fit.TaskLoRA, SeqLen: 2048}, func(m *TimeModel) { m.OptStepBytes = 0 })
	if r := bare.TokensPerSec/lora.TokensPerSec - 1; r > 0.005 || tm.OptStepBytes > 1e9 {
		t.Errorf("LoRA optimizer step: %.3g B, +%.2f %%; want under 1 GB and 0.5 %%", tm.OptStepBytes, 100*r)
	}

	// Gradient accumulation (--grad-accum, or the framework's: LitGPT accumulates to its
	// recipes' global batch of 16) spreads the step over the micro-batches.
	for _, c := range []struct {
		name  string
		job   fit.Job
		accum float64
	}{
		{"--grad-accum 4", fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, GradAccum: 4}, 4},
		{"litgpt batch 2", fit.Job{Task: fit.TaskFullFT, SeqLen: 1024, Batch: 2, Framework: fit.FrameworkLitGPT}, 8},
	} {
		acc, tm := timeFor(t, "llama-3.2-1b", "H100", 1, c.job, nil)
		noOpt, _ := timeFor(t, "llama-3.2-1b", "H100", 1, c.job, func(m *TimeModel) { m.OptStepBytes = 0 })
		tokens := float64(max(c.job.Batch, 1) * c.job.SeqLen)
		opt := tm.OptStepBytes / (3350e9 * bwEfficiency)
		if got := tokens/acc.TokensPerSec - tokens/noOpt.TokensPerSec; tm.GradAccum != c.accum || !near(got, opt/c.accum, 1e-6) {
			t.Errorf("%s: %v micro-batches per step, the step adds %.5f s per micro-batch; want %v and %.5f s", c.name, tm.GradAccum, got, c.accum, opt/c.accum)
		}
	}
}

// With the optimizer offloaded the GPU streams nothing: the host's CPU Adam updates this
// GPU's partition at cpuAdamSecPerParam, after the gradients have crossed PCIe.
func TestOffloadedOptimizerStep(t *testing.T) {
	for _, c := range []struct {
		gpus  float64
		shard fit.Shard
	}{{1, "zero2"}, {4, "zero2"}} {
		job := fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, Offload: "optimizer", Shard: c.shard, GPUs: int(c.gpus)}
		tim, tm := timeFor(t, "llama-3.2-1b", "L4", c.gpus, job, nil)
		if tm.OptStepBytes != 0 {
			t.Errorf("%v GPUs: offloaded optimizer streams %.3g B on the GPU; want 0", c.gpus, tm.OptStepBytes)
		}
		if want := tm.TrainableParams / c.gpus; !near(tm.OptCPUParams, want, 1e-9) {
			t.Errorf("%v GPUs: the host steps %.4g parameters per GPU; want %.4g", c.gpus, tm.OptCPUParams, want)
		}
		gpuOnly, _ := timeFor(t, "llama-3.2-1b", "L4", c.gpus, job, func(m *TimeModel) { m.OptCPUParams = 0 })
		got := 2048*c.gpus/tim.TokensPerSec - 2048*c.gpus/gpuOnly.TokensPerSec
		if want := tm.TrainableParams / c.gpus * cpuAdamSecPerParam; !near(got, want, 1e-6) {
			t.Errorf("%v GPUs: CPU Adam adds %.3f s; want %.3f s", c.gpus, got, want)
		}
	}
}

// DDP's last bucket (the embedding's gradient at least) is all-reduced after the
// backward, and ZeRO-3's first gather and last reduce-scatter likewise; a single GPU has
// neither.
func TestExposedCollectives(t *testing.T) {
	job := fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, GPUs: 8}
	tim, tm := timeFor(t, "gpt2", "A100-80GB", 8, job, nil)
	// GPT-2's embeddings, token (tied with the head) and position: (50257 + 1024) x 768
	// fp32 gradients (AMP), over the 25 MiB cap.
	if want := (50257.0 + 1024) * 768 * 4; !near(tm.LastBucketBytes, want, 0.01) {
		t.Errorf("last bucket %.4g B; want the embedding's gradient %.4g B", tm.LastBucketBytes, want)
	}
	hidden, _ := timeFor(t, "gpt2", "A100-80GB", 8, job, func(m *TimeModel) { m.LastBucketBytes = 0 })
	spec, _ := pricing.LookupGPU("A100-80GB")
	g, _ := TimeGPUFor(spec, "bf16-mixed", 8, -1)
	want := 2 * 7.0 / 8 * tm.LastBucketBytes / (linkGBs(&g) * 1e9)
	if got := 2048/tim.TokensPerSec*8 - 2048/hidden.TokensPerSec*8; !near(got, want, 1e-6) {
		t.Errorf("exposed all-reduce %.5f s; want %.5f s", got, want)
	}
	if e := tm.exposedComm(1, 1e9); e != 0 {
		t.Errorf("one GPU exposes %.3g s of collectives; want none", e)
	}
	small := lastBucketBytes(0, 1e6, 4) // a LoRA's adapters: smaller than one bucket
	if small != 4e6 {
		t.Errorf("last bucket of 4 MB of gradients = %.3g B; want all of them", small)
	}
}

// Eager PyTorch cannot run a forward faster than Python dispatches it, and the backward
// follows: a small model at a short sequence is dispatch-bound, its step the forward's
// dispatch (hfLayerDispatchSec per layer) plus a backward no shorter than its kernels'
// launch floors (stepfixed.go).
func TestTrainingDispatchFloor(t *testing.T) {
	job := fit.Job{Task: fit.TaskLoRA, SeqLen: 64}
	tim, tm := timeFor(t, "gpt2", "H100", 1, job, nil)
	if tim.Bound != "dispatch" {
		t.Fatalf("gpt2 LoRA at 64 tokens on an H100 is %s-bound; want dispatch", tim.Bound)
	}
	// At 64 tokens every kernel runs at its floor: per layer a forward and a backward GEMM
	// per frozen weight and (1+smallBwdPerFwd)·layerSmallFwd others, eagerKernelSec each.
	// The backward is the step's share past the forward's 2 of LoRA's 4 FLOPs per
	// parameter and token: half.
	bwd := tm.Layers * (2*tm.LayerGEMMs + (1+smallBwdPerFwd)*layerSmallFwd) * eagerKernelSec / 2
	if got, want := 64/tim.TokensPerSec, tm.Layers*hfLayerDispatchSec+bwd; got < want || got > want*1.05 {
		t.Errorf("step %.5f s; want the dispatch floor and the backward's launch floor %.5f s (plus the adapters' tiny optimizer step)", got, want)
	}
	if tm.LayerGEMMs != 4 {
		t.Errorf("gpt2 has %.1f GEMMs per layer; want 4 (c_attn, c_proj, c_fc, the MLP's c_proj)", tm.LayerGEMMs)
	}
	long, _ := timeFor(t, "gpt2", "H100", 1, fit.Job{Task: fit.TaskLoRA, SeqLen: 4096, Batch: 8}, nil)
	if long.Bound == "dispatch" {
		t.Errorf("gpt2 at 8x4096 tokens is dispatch-bound; want the math to outlast the dispatch")
	}
}
