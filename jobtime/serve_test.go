package jobtime

import (
	"math"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// The layer shape comes from the model's own modules: DeepSeek-R1 has latent attention
// and 58 MoE layers of 61 (first_k_dense_replace 3), each with a shared expert; a Llama
// layer is dense.
func TestLayerShapeOf(t *testing.T) {
	cases := []struct {
		name        string
		mla         bool
		moe, shared float64
	}{
		{"deepseek-r1", true, 58.0 / 61, 58.0 / 61},
		{"llama-2-7b", false, 0, 0},
		{"mixtral-8x7b", false, 1, 0},
	}
	for _, c := range cases {
		m, ok, err := model.CatalogModel(c.name)
		if err != nil || !ok {
			t.Fatalf("catalog model %q: ok=%v err=%v", c.name, ok, err)
		}
		got := LayerShapeOf(m)
		if got.MLA != c.mla || !near1(got.MoE, c.moe) || !near1(got.Shared, c.shared) {
			t.Errorf("%s: shape %+v; want MLA %v, MoE %.4f, Shared %.4f", c.name, got, c.mla, c.moe, c.shared)
		}
	}
}

func near1(got, want float64) bool { return math.Abs(got-want) < 1e-9 }

// A decode step runs its kernels one after another: the small kernels add to the
// weights' reads instead of hiding behind them. DeepSeek-R1 at batch 1 on 8x H200 is
// bound by them, a larger batch reads more experts (1-(1-k/E)^b of them) and so takes
// longer per step yet less per token, and a dense 7B at batch 1 on one H100 stays bound
// by its reads, the kernels adding a few per cent.
func TestServeKernelStep(t *testing.T) {
	job := fit.Job{Task: fit.TaskInference, GPUs: 8, Shard: "tp", Batch: 1}
	one, tm, g := timeOn(t, "deepseek-r1", "H200", 8, job, nil)
	if one.Bound != "latency" {
		t.Errorf("deepseek-r1 batch 1 on 8x H200: bound %q; want latency", one.Bound)
	}
	gemms, small, floor := tm.Layer.layerKernels(tm.FP8 && g.FP8TFLOPS > 0)
	if small <= denseSmall+mlaSmall+moeSmall*tm.Layer.MoE || gemms <= denseGEMMs+mlaGEMMs {
		t.Errorf("deepseek-r1 kernels per layer: %.1f GEMMs, %.1f small; want more than a dense layer's, MLA's, the MoE's and (fp8) the quantization kernels", gemms, small)
	}
	if !tm.Layer.BlockFP8 || floor <= gemms*graphKernelSec {
		t.Errorf("deepseek-r1's 128x128 fp8 checkpoint: BlockFP8 %v, GEMM floor %.1f µs per layer; want block-scaled GEMMs slower than %.1f µs of launches", tm.Layer.BlockFP8, floor*1e6, gemms*graphKernelSec*1e6)
	}
	reads := tm.DenseWeightBytes / 8 / (g.BandwidthGBs * 1e9 * decodeEffVLLM)
	kernels := tm.Layers * small * graphKernelSec
	if step := 1 / one.TokensPerSec; step < math.Max(reads, tm.Layers*floor)+kernels {
		t.Errorf("batch-1 step %.2f ms; want at least the reads %.2f ms or the GEMMs' floor %.2f ms, plus the small kernels %.2f ms", step*1e3, reads*1e3, tm.Layers*floor*1e3, kernels*1e3)
	}
	job.Batch = 32
	b32, _, _ := timeOn(t, "deepseek-r1", "H200", 8, job, nil)
	if s1, s32 := 1/one.TokensPerSec, 32/b32.TokensPerSec; s32 <= s1 || b32.TokensPerSec <= one.TokensPerSec {
		t.Errorf("batch 32 step %.2f ms at %.0f tok/s vs batch 1 %.2f ms at %.0f tok/s: want a longer step and more tokens/s", s32*1e3, b32.TokensPerSec, s1*1e3, one.TokensPerSec)
	}
	if got := expertsTouched(8.0/256, 32); !near(got, 1-math.Pow(248.0/256, 32), 1e-12) || got >= 1 || got <= 8.0/256 {
		t.Errorf("experts touched by 32 tokens: %v", got)
	}

	dense, dm, dg := timeOn(t, "llama-2-7b", "H100", 1, fit.Job{Task: fit.TaskInference, Precision: "fp16", Batch: 1}, nil)
	_, dsmall, _ := dm.Layer.layerKernels(false)
	read := dm.DenseWeightBytes / (dg.BandwidthGBs * 1e9 * decodeEffVLLM)
	if dense.Bound != "memory" || 1/dense.TokensPerSec > 1.1*read+dm.Layers*dsmall*graphKernelSec {
		t.Errorf("llama-2-7b batch 1 on H100: %s bound, %.2f ms per token; want memory bound near the reads %.2f ms", dense.Bound, 1e3/dense.TokensPerSec, read*1e3)
	}
}
