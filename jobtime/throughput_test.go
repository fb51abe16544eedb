package jobtime

import (
	"math"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// timeFor resolves a catalog model, estimates the job and times it on count GPUs of gpu.
func timeFor(t testing.TB, name, gpu string, count float64, job fit.Job, tweak func(*TimeModel)) (Timing, *TimeModel) {
	t.Helper()
	tim, tm, _ := timeOn(t, name, gpu, count, job, tweak)
	return tim, tm
}

// timeOn is timeFor that also returns the GPU's time-model figures.
func timeOn(t testing.TB, name, gpu string, count float64, job fit.Job, tweak func(*TimeModel)) (Timing, *TimeModel, TimeGPU) {
	t.Helper()
	m, ok, err := model.CatalogModel(name)
	if err != nil || !ok {
		t.Fatalf("catalog model %q: ok=%v err=%v", name, ok, err)
	}
	res, err := fit.Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	tm := TimeModelFor(m, res)
	if tweak != nil {
		tweak(tm)
	}
	spec, ok := pricing.LookupGPU(gpu)
	if !ok {
		t.Fatalf("no GPU %s", gpu)
	}
	g, ok := TimeGPUFor(spec, res.Job.Precision, count, -1)
	if !ok {
		t.Fatalf("%s lacks figures", gpu)
	}
	tim, ok := tm.Estimate(&g)
	if !ok {
		t.Fatal("no timing")
	}
	return tim, tm, g
}

func near(got, want, tol float64) bool { return math.Abs(got/want-1) <= tol }

// Decode at batch 1 is the bandwidth roof times the engine's share: every weight and the
// KV cache (half of seq-len on average) read once per token, plus the floors of the
// layers' kernels that stream no weights (serve.go).
func TestDecodeBandwidthRoof(t *testing.T) {
	job := fit.Job{Task: fit.TaskInference, Precision: "fp16", SeqLen: 1024}
	tim, tm := timeFor(t, "llama-2-7b", "A100-80GB", 1, job, nil)
	bytes := tm.DenseWeightBytes + 512*tm.KVPerToken*2
	small := tm.Layers * denseSmall * graphKernelSec
	want := 1 / (bytes/(2039e9*decodeEffVLLM) + small)
	if !near(tim.TokensPerSec, want, 1e-9) || tim.Bound != "memory" {
		t.Errorf("tokens/s = %.2f (%s); want %.2f memory-bound", tim.TokensPerSec, tim.Bound, want)
	}
	// Llama-2-7B holds 6.74e9 parameters in fp16: the weights read are 13.0-13.6 GB.
	if tm.DenseWeightBytes < 13.0e9 || tm.DenseWeightBytes > 13.6e9 {
		t.Errorf("weights read per step = %.3g bytes; want ~2 x 6.74e9", tm.DenseWeightBytes)
	}
	lc, _ := timeFor(t, "llama-2-7b", "A100-80GB", 1, job, func(m *TimeModel) { m.Engine = EngineLlamaCpp })
	if want := 1 / (bytes/(2039e9*decodeEffLlamaCpp) + small); !near(lc.TokensPerSec, want, 1e-9) {
		t.Errorf("llama.cpp tokens/s = %.2f; want %.2f", lc.TokensPerSec, want)
	}
	hf, _ := timeFor(t, "llama-2-7b", "A100-80GB", 1, job, func(m *TimeModel) { m.Engine = EngineHF })
	if want := 1 / (32 * hfLayerDispatchSec); !near(hf.TokensPerSec, want, 1e-9) || hf.Bound != "dispatch" {
		t.Errorf("hf tokens/s = %.1f (%s); want dispatch-bound %.1f", hf.TokensPerSec, hf.Bound, want)
	}
}

// A big batch turns decode compute-bound; a layer split gives no speed-up, tensor
// parallelism does.
func TestDecodeBatchAndSplit(t *testing.T) {
	big, _ := timeFor(t, "llama-2-7b", "A100-80GB", 1, fit.Job{Task: fit.TaskInference, Batch: 384, SeqLen: 256}, nil)
	if big.Bound != "compute" {
		t.Errorf("batch 384 decode bound = %s; want compute", big.Bound)
	}
	job := fit.Job{Task: fit.TaskInference, Quant: "int4", SeqLen: 1024, GPUs: 2, Shard: "tp"}
	one, _ := timeFor(t, "llama-2-70b", "RTX4090", 1, fit.Job{Task: fit.TaskInference, Quant: "int4", SeqLen: 1024}, nil)
	layer := job
	layer.Split = fit.SplitLayer // --split layer
	split, tm := timeFor(t, "llama-2-70b", "RTX4090", 2, layer, nil)
	if !tm.Pipeline {
		t.Fatal("--split layer did not reach the time model")
	}
	if !near(split.TokensPerSec, one.TokensPerSec, 1e-9) {
		t.Errorf("layer split on 2 GPUs %.2f tok/s; want the 1-GPU rate %.2f", split.TokensPerSec, one.TokensPerSec)
	}
	tp, _ := timeFor(t, "llama-2-70b", "RTX4090", 2, job, nil)
	if tp.TokensPerSec <= 1.3*one.TokensPerSec || tp.TokensPerSec >= 2*one.TokensPerSec {
		t.Errorf("tensor parallel on 2 GPUs %.2f tok/s; want between 1.3x and 2x of %.2f (all-reduce latency per layer)", tp.TokensPerSec, one.TokensPerSec)
	}
}

// Prefill is compute-bound: 2·N FLOPs per token plus causal attention at the GPU's
// GEMM efficiency; TTFT is the prompt's pass.
func TestPrefillAndTTFT(t *testing.T) {
	job := fit.Job{Task: fit.TaskInference, Precision: "fp16", SeqLen: 2048}
	tim, tm := timeFor(t, "llama-2-7b", "H100", 1, job, func(m *TimeModel) { m.PromptTokens, m.OutputTokens = 1000, 200 })
	flops := 1000 * (2*tm.ActiveParams + 2*tm.Layers*tm.Hidden*1000)
	want := flops/(989.5e12*effHopper) + tm.DenseWeightBytes/(3350e9*decodeEffVLLM)
	if !near(tim.TTFTSec, want, 1e-9) {
		t.Errorf("TTFT = %.4f s; want %.4f", tim.TTFTSec, want)
	}
	// 100 requests of 200 output tokens. transformers generate: decode time plus 100
	// prompt passes. vLLM (continuous batching, chunked prefill): the prompts' math rides
	// in the decode steps, so the job is shorter than that sum and no shorter than either
	// the decoding or the prompts' math alone.
	sequential := 20000/tim.TokensPerSec + 100*1000/tim.PrefillTokensPerSec
	secs := tm.JobSeconds(tim, 20000, 0)
	promptMath := 100 * 1000 * (2*tm.ActiveParams + 2*tm.Layers*tm.Hidden*1000) / (989.5e12 * effHopper)
	if !(secs < sequential && secs >= 20000/tim.TokensPerSec && secs >= promptMath) {
		t.Errorf("vLLM job seconds = %.2f; want below the sequential %.2f, at least decode %.2f and the prompts' math %.2f", secs, sequential, 20000/tim.TokensPerSec, promptMath)
	}
	htim, htm := timeFor(t, "llama-2-7b", "H100", 1, job, func(m *TimeModel) { m.PromptTokens, m.OutputTokens, m.Engine = 1000, 200, EngineHF })
	if got, want := htm.JobSeconds(htim, 20000, 0), 20000/htim.TokensPerSec+100*1000/htim.PrefillTokensPerSec; !near(got, want, 1e-9) {
		t.Errorf("hf job seconds = %.2f; want decode + prompts = %.2f", got, want)
	}
}

// Training: checkpointing costs one more forward; long sequences pay attention FLOPs;
// QLoRA's dequantization matters at short steps only.
func TestTrainingTechniques(t *testing.T) {
	base := fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, Batch: 4, GPUs: 8, Shard: "fsdp"}
	plain, tm := timeFor(t, "llama-2-7b", "H100", 8, base, nil)
	ck := base
	ck.GradCkpt = true
	withCk, _ := timeFor(t, "llama-2-7b", "H100", 8, ck, nil)
	L, d, N := tm.Layers, tm.Hidden, tm.ActiveParams
	// Compute dominates at 7B: the slow-down is close to the FLOP ratio.
	wantR := (8*N + 16*L*d*2048) / (6*N + 12*L*d*2048)
	if r := plain.TokensPerSec / withCk.TokensPerSec; !near(r, wantR, 0.05) {
		t.Errorf("checkpointing slow-down %.3f; want ~%.3f", r, wantR)
	}
	long := base
	long.SeqLen, long.Batch = 32768, 1
	// The optimizer step is a fixed cost per micro-batch (optimizer.go), which the
	// per-token comparison of attention FLOPs leaves out.
	noStep := func(m *TimeModel) { m.OptStepBytes = 0 }
	plain, _ = timeFor(t, "llama-2-7b", "H100", 8, base, noStep)
	l32, _ := timeFor(t, "llama-2-7b", "H100", 8, long, noStep)
	wantL := (6*N + 12*L*d*32768) / (6*N + 12*L*d*2048)
	if r := plain.TokensPerSec / l32.TokensPerSec; !near(r, wantL, 0.05) || r < 1.8 {
		t.Errorf("32k/2k per-token slow-down %.2f; want ~%.2f (attention FLOPs)", r, wantL)
	}

	// ratio is QLoRA's time over LoRA's; its extra seconds per micro-batch are checked.
	ratio := func(tokens int) float64 {
		j := fit.Job{Task: fit.TaskLoRA, SeqLen: tokens, GradCkpt: true}
		lora, _ := timeFor(t, "llama-2-7b", "A100-80GB", 1, j, nil)
		j.Task = fit.TaskQLoRA
		q, tm := timeFor(t, "llama-2-7b", "A100-80GB", 1, j, nil)
		// Three passes (forward, recomputed forward, backward), each the dequantize kernel's
		// bytes at its slowed share of the bandwidth and the matmul's read of the copy.
		want := tm.QuantParams * ((0.5+4.0/64+2)*dequantKernelSlowdown + 2) * 3 / (2039e9 * bwEfficiency)
		extra := float64(tokens) * (1/q.TokensPerSec - 1/lora.TokensPerSec)
		if float64(tokens)/lora.TokensPerSec < 3*tm.Layers*hfLayerDispatchSec {
			// A forward (a third of this step) shorter than Python's dispatch of it leaves
			// the GPU idle, and up to the dequantization's forward third hides there
			// (stepfixed.go).
			if extra < want*2/3*(1-1e-6) || extra > want*(1+1e-6) {
				t.Errorf("%d tokens, dispatch-limited: QLoRA's extra time %.4f s; want between 2/3 of the dequantization %.4f s and all of it", tokens, extra, want)
			}
		} else if !near(extra, want, 1e-6) {
			t.Errorf("%d tokens: QLoRA's extra time per micro-batch %.4f s is not the dequantization %.4f s", tokens, extra, want)
		}
		return lora.TokensPerSec / q.TokensPerSec
	}
	// Issue 15's measurements: 2.5x at 256 tokens, 1.05x at 8k. The dequantization time is
	// fixed per micro-batch (checked above), so it fades as steps grow.
	short, longR := ratio(256), ratio(8192)
	if short < 1.5 || longR > 1.1 {
		t.Errorf("QLoRA/LoRA time: %.2fx at 256 tokens, %.3fx at 8192; want > 1.5x and < 1.1x", short, longR)
	}
}

// Multi-GPU: DDP on NVLink keeps nearly the single-GPU rate; ZeRO-3 over PCIe is
// communication-bound; offload is PCIe-bound; --mfu overrides the efficiency.
func TestTrainingScaling(t *testing.T) {
	job := fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, Batch: 8}
	one, _ := timeFor(t, "gpt2-medium", "A100-80GB", 1, job, nil)
	job.GPUs = 8
	ddp, _ := timeFor(t, "gpt2-medium", "A100-80GB", 8, job, nil)
	if r := ddp.TokensPerSec / one.TokensPerSec; r < 7.9 || r > 8.001 {
		t.Errorf("8-GPU DDP on NVLink = %.2fx one GPU; want ~8x (all-reduce hidden behind the backward)", r)
	}
	z := fit.Job{Task: fit.TaskFullFT, SeqLen: 512, Batch: 1, GPUs: 8, Shard: "zero3"}
	nv, tm := timeFor(t, "llama-2-7b", "A100-80GB", 8, z, nil)
	spec, _ := pricing.LookupGPU("A100-80GB")
	g, _ := TimeGPUFor(spec, "bf16-mixed", 8, 0) // an instance without NVLink
	pc, _ := tm.Estimate(&g)
	if pc.Bound != "communication" || pc.TokensPerSec >= nv.TokensPerSec {
		t.Errorf("ZeRO-3 over PCIe %.0f tok/s (%s); want communication-bound and slower than NVLink %.0f", pc.TokensPerSec, pc.Bound, nv.TokensPerSec)
	}
	off := fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, Batch: 1, Offload: "optimizer", Shard: "zero2"}
	o, _ := timeFor(t, "llama-3.2-1b", "L4", 1, off, nil)
	off.Offload = "none"
	no, _ := timeFor(t, "llama-3.2-1b", "L4", 1, off, nil)
	if o.TokensPerSec >= no.TokensPerSec {
		t.Errorf("optimizer offload %.0f tok/s; want slower than %.0f", o.TokensPerSec, no.TokensPerSec)
	}
	a, _ := timeFor(t, "llama-2-7b", "H100", 1, fit.Job{Task: fit.TaskLoRA, SeqLen: 4096}, func(m *TimeModel) { m.MFU = 0.2 })
	b, _ := timeFor(t, "llama-2-7b", "H100", 1, fit.Job{Task: fit.TaskLoRA, SeqLen: 4096}, func(m *TimeModel) { m.MFU = 0.4 })
	if r := b.TokensPerSec / a.TokensPerSec; r < 1.8 || r > 2 {
		t.Errorf("--mfu 0.4 vs 0.2: %.2fx; want nearly 2x on a compute-bound job", r)
	}
}

func TestBilling(t *testing.T) {
	for _, c := range []struct {
		provider string
		hours    float64
		want     float64 // seconds billed
	}{
		{"aws", 90.0 / 3600, 90},     // per second
		{"aws", 10.0 / 3600, 60},     // 60 s minimum
		{"azure", 61.0 / 3600, 120},  // per minute
		{"lambda", 1.0, 3600},        // whole minutes already
		{"nowhere", 30.0 / 3600, 60}, // default per minute
	} {
		if got := BillingFor(c.provider).BilledHours(c.hours) * 3600; math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s %.0f s billed as %.1f s; want %.0f", c.provider, c.hours*3600, got, c.want)
		}
	}
	// 5 minutes boot plus 14 GB at 125 MB/s = 112 s.
	if got := SetupHours(14e9) * 3600; math.Abs(got-412) > 1e-6 {
		t.Errorf("setup = %.1f s; want 412", got)
	}
}

// BenchmarkTimeModelPerOffer is the per-offer cost of --rank job: reading the GPU's
// figures and evaluating the model (the TimeModel is built once per job variant).
func BenchmarkTimeModelPerOffer(b *testing.B) {
	_, tm := timeFor(b, "llama-3.1-8b", "H100", 1, fit.Job{Task: fit.TaskLoRA, SeqLen: 2048, GPUs: 8, Shard: "fsdp"}, nil)
	spec, _ := pricing.LookupGPU("H100")
	b.ReportAllocs()
	b.ResetTimer()
	var sink float64
	for i := 0; i < b.N; i++ {
		g, _ := TimeGPUFor(spec, "bf16-mixed", 8, -1)
		t, _ := tm.Estimate(&g)
		sink += tm.JobSeconds(t, 5e7, 0)
	}
	_ = sink
}

func TestInstanceGPULink(t *testing.T) {
	for _, c := range []struct {
		provider, it string
		want         float64
	}{
		{"azure", "Standard_NC96ads_A100_v4", 0},
		{"azure", "Standard_ND96amsr_A100_v4", -1},
		{"cudo", "epyc-genoa-a100-pcie_8x64v128gb", 0},
		{"cudo", "intel-ice-lake-a100-pci_8x64v128gb", 0},
		{"hyperstack", "n3-A100x8", 0},
		{"hyperstack", "n3-A100x8-NVLink", -1},
		{"aws", "p4de.24xlarge", -1},
		{"lambda", "gpu_1x_h100_PCIe", 0},
		{"azure", "Std_NC", -1},
		{"p", "", -1},
	} {
		if got := InstanceGPULink(c.provider, c.it); got != c.want {
			t.Errorf("%s %s: link %v; want %v", c.provider, c.it, got, c.want)
		}
	}
}

// fp8 training runs the linear layers at the fp8 peak (with fp8GEMMShare of the
// efficiency) and nothing else: a 1.2-1.5x speed-up on H100, none on a GPU without fp8.
func TestFP8Training(t *testing.T) {
	job := fit.Job{Task: fit.TaskFullFT, SeqLen: 4096, Batch: 2, GPUs: 8, Shard: "fsdp"}
	for _, c := range []struct {
		gpu      string
		min, max float64
	}{{"H100", 1.2, 1.5}, {"A100-80GB", 1, 1}} {
		bf, _ := timeFor(t, "llama-2-7b", c.gpu, 8, job, nil)
		fp8Job := job
		fp8Job.Precision = "fp8-mixed" // --precision fp8-mixed
		f8, _ := timeFor(t, "llama-2-7b", c.gpu, 8, fp8Job, nil)
		if r := f8.TokensPerSec / bf.TokensPerSec; r < c.min-1e-9 || r > c.max+1e-9 {
			t.Errorf("%s: fp8/bf16 = %.3f; want %.1f-%.1f", c.gpu, r, c.min, c.max)
		}
	}
}

// fp8 inference is timed by its bytes and the fp8 peak: decode (memory-bound) reads one
// byte per linear weight instead of two on any GPU (vLLM's Marlin kernels read fp8
// weights on Ampere too), prefill (compute-bound) runs its GEMMs at the fp8 peak only
// where the GPU has fp8 tensor cores, and an fp8 KV cache halves the cache's bytes.
func TestFP8InferenceTimedByBytes(t *testing.T) {
	bf16 := fit.Job{Task: fit.TaskInference, SeqLen: 2048}
	fp8 := bf16
	fp8.Quant = "fp8"
	for _, c := range []struct {
		gpu        string
		prefillMin float64 // fp8/bf16 prefill rate
		prefillMax float64
	}{{"H100", 1.2, 1.5}, {"A100-80GB", 1, 1.1}} { // A100: only the prefill's one read of the weights shrinks
		b, bt := timeFor(t, "llama-3.1-8b", c.gpu, 1, bf16, nil)
		f, ft := timeFor(t, "llama-3.1-8b", c.gpu, 1, fp8, nil)
		if !ft.FP8 || ft.DenseWeightBytes >= 0.6*bt.DenseWeightBytes {
			t.Errorf("%s: fp8 weights %.3g B (fp8 %v); want under 0.6x the bf16 %.3g B", c.gpu, ft.DenseWeightBytes, ft.FP8, bt.DenseWeightBytes)
		}
		if r := f.TokensPerSec / b.TokensPerSec; r < 1.5 || r > 2 {
			t.Errorf("%s: fp8/bf16 decode = %.2f; want 1.5-2 (half the weight bytes per step)", c.gpu, r)
		}
		if r := f.PrefillTokensPerSec / b.PrefillTokensPerSec; r < c.prefillMin || r > c.prefillMax {
			t.Errorf("%s: fp8/bf16 prefill = %.3f; want %.2f-%.2f", c.gpu, r, c.prefillMin, c.prefillMax)
		}
	}
	kv := fp8
	kv.KVCacheDtype = "fp8"
	kv.Batch, kv.SeqLen = 64, 4096
	_, tm := timeFor(t, "llama-3.1-8b", "H100", 1, kv, nil)
	if tm.KVBytes != 1 {
		t.Errorf("--kv-cache-dtype fp8: %v bytes per KV element; want 1", tm.KVBytes)
	}
}

// A pre-quantized checkpoint is read at the bytes it stores: the time model's weights
// per decode step are the memory model's weights less the embedding table (one row is
// read per token), for fp8 blocks (Qwen3-32B-FP8) and MXFP4 experts (gpt-oss-120b).
func TestCheckpointQuantTimedAsStored(t *testing.T) {
	for _, name := range []string{"qwen3-32b-fp8", "gpt-oss-120b"} {
		m, ok, err := model.CatalogModel(name)
		if err != nil || !ok {
			t.Fatalf("%s: %v", name, err)
		}
		res, err := fit.Estimate(m, fit.Job{})
		if err != nil {
			t.Fatal(err)
		}
		tm := TimeModelFor(m, res)
		read := tm.DenseWeightBytes + tm.RoutedWeightBytes
		want := res.Breakdown.Weights*fit.GiB - float64(m.EmbedParams)*2
		if m.HeadParams == 0 {
			want += float64(m.EmbedParams) * 2 // a tied head reads the embedding as the LM head
		}
		if !near(read, want, 0.01) {
			t.Errorf("%s: the time model reads %.4g B of weights; the memory model stores %.4g B (less the embedding)", name, read, want)
		}
	}
}
