package fit

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

func catalog(t *testing.T, name string) *model.Model {
	t.Helper()
	m, _, err := model.CatalogModel(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// launchFlags reads a launch line's "--flag value" pairs.
func launchFlags(line string) map[string]string {
	f := strings.Fields(line)
	out := map[string]string{}
	for i := 0; i+1 < len(f); i++ {
		if strings.HasPrefix(f[i], "-") {
			out[f[i]] = f[i+1]
		}
	}
	return out
}

// TestServingBudget: each engine's device total is its own budget rule over the same
// pieces, and the launch line carries the numbers the estimate used.
func TestServingBudget(t *testing.T) {
	m := catalog(t, "llama-3.1-8b-instruct")
	for _, c := range []struct {
		engine          Engine
		gpus            int
		fracFlag, lFlag string
	}{
		{EngineVLLM, 1, "--gpu-memory-utilization", "--max-model-len"},
		{EngineVLLM, 2, "--gpu-memory-utilization", "--max-model-len"},
		{EngineSGLang, 2, "--mem-fraction-static", "--context-length"},
		{EngineTRTLLM, 1, "--kv_cache_free_gpu_memory_fraction", "--max_seq_len"},
		{EngineLlamaCpp, 2, "", "-c"},
	} {
		t.Run(string(c.engine)+"/"+strconv.Itoa(c.gpus), func(t *testing.T) {
			res, err := Estimate(m, Job{Engine: c.engine, GPUs: c.gpus, Batch: 4, PromptTokens: 1000, OutputTokens: 500})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Serving
			if s == nil || s.Launch == "" {
				t.Fatalf("no serving plan: %+v", res)
			}
			if res.Job.SeqLen != 1500 {
				t.Errorf("seq_len %d, want prompt + output = 1500", res.Job.SeqLen)
			}
			fl := launchFlags(s.Launch)
			if got := fl[c.lFlag]; got != strconv.Itoa(s.MaxModelLen) {
				t.Errorf("launch %q: %s %s, want max_model_len %d", s.Launch, c.lFlag, got, s.MaxModelLen)
			}
			if c.fracFlag != "" {
				if got, _ := strconv.ParseFloat(fl[c.fracFlag], 64); got != s.MemoryFraction {
					t.Errorf("launch %q: %s %v, want %v", s.Launch, c.fracFlag, got, s.MemoryFraction)
				}
			}
			// The total follows the engine's rule over its breakdown.
			b := res.Breakdown
			ctx := CUDAContextGiB
			switch c.engine {
			case EngineVLLM:
				want := (ctx + b.Weights + s.ActivationsGiB + s.NCCLGiB + b.KVCache) / s.MemoryFraction
				if math.Abs(res.DeviceTotalGiB-want) > 0.01 {
					t.Errorf("vLLM device total %v, want (context+weights+activations+nccl+kv)/%.2f = %v", res.DeviceTotalGiB, s.MemoryFraction, want)
				}
				if s.KVTokens != int(m.MaxPos) || s.MaxModelLen != int(m.MaxPos) {
					t.Errorf("vLLM KV pool %d tokens, max_model_len %d; want the model's context %d", s.KVTokens, s.MaxModelLen, m.MaxPos)
				}
			case EngineSGLang:
				if want := (b.Weights + b.KVCache) / s.MemoryFraction; res.DeviceTotalGiB < want-0.01 {
					t.Errorf("SGLang device total %v below (weights+kv)/%.2f = %v", res.DeviceTotalGiB, s.MemoryFraction, want)
				}
				if s.MemoryFraction != 0.87 {
					t.Errorf("SGLang tp 2 mem_fraction_static %v, want 0.87", s.MemoryFraction)
				}
			case EngineLlamaCpp:
				if s.Split != SplitLayer || fl["--split-mode"] != "layer" {
					t.Errorf("llama.cpp split %q, launch %q: want its default layer split", s.Split, s.Launch)
				}
				if s.MaxModelLen != 6000 {
					t.Errorf("llama.cpp -c %d, want 4 slots x 1500 = 6000 (above its 4096 default)", s.MaxModelLen)
				}
			}
			if c.gpus > 1 && c.engine != EngineLlamaCpp && fl["--tensor-parallel-size"]+fl["--tp"]+fl["--tp_size"] != strconv.Itoa(c.gpus) {
				t.Errorf("launch %q: tensor-parallel size, want %d", s.Launch, c.gpus)
			}
		})
	}
}

// TestServingShorterContext: vLLM's default max_model_len (the model's 131k) is the pool's
// floor; LongestFitting finds the context that fits a smaller card, which WithMaxModelLen
// puts in the launch line.
func TestServingShorterContext(t *testing.T) {
	m := catalog(t, "llama-3.1-8b-instruct")
	res, err := Estimate(m, Job{Engine: EngineVLLM})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Serving
	avail := res.DeviceTotalGiB - 5
	n, ok := s.LongestFitting(avail)
	if !ok || n >= s.MaxModelLen || n < res.Job.SeqLen || n%16 != 0 {
		t.Fatalf("LongestFitting(%v) = %d, %v; default %d", avail, n, ok, s.MaxModelLen)
	}
	if s.TotalAt(n) > avail+1e-9 || s.TotalAt(n+16) <= avail {
		t.Errorf("%d tokens: total %v, next block %v, for %v GiB", n, s.TotalAt(n), s.TotalAt(n+16), avail)
	}
	short := s.WithMaxModelLen(n)
	if got := launchFlags(short.Launch)["--max-model-len"]; got != strconv.Itoa(n) {
		t.Errorf("launch %q, want --max-model-len %d", short.Launch, n)
	}
	if _, ok := s.LongestFitting(1); ok {
		t.Error("1 GiB fits an 8B model")
	}
}

// TestWorkloadLengths: --seq-len below prompt + output is an input error naming both.
func TestWorkloadLengths(t *testing.T) {
	m := catalog(t, "llama-3.1-8b-instruct")
	_, err := Estimate(m, Job{SeqLen: 1250, PromptTokens: 2000, OutputTokens: 500})
	var pe *pricing.Error
	if !errors.As(err, &pe) || pe.Param != "seq-len" || !strings.Contains(err.Error(), "--prompt-tokens 2000") || !strings.Contains(err.Error(), "--output-tokens 500") {
		t.Errorf("err %v", err)
	}
	// llama.cpp shifts a sequence that outgrows its context, so a shorter --seq-len runs,
	// says so, and its launch line asks for the shift when -c is too short.
	r, err := Estimate(m, Job{Engine: EngineLlamaCpp, SeqLen: 1024, MaxModelLen: 1024, PromptTokens: 300, OutputTokens: 1024})
	if err != nil {
		t.Fatalf("llama.cpp with --seq-len below prompt + output: %v", err)
	}
	if !slices.ContainsFunc(r.Assumptions, func(a string) bool { return strings.Contains(a, "shifts") }) {
		t.Errorf("no context-shift assumption in %q", r.Assumptions)
	}
	if r.Serving == nil || !strings.Contains(r.Serving.Launch, "--context-shift") {
		t.Errorf("launch without --context-shift: %+v", r.Serving)
	}
	if r, err := Estimate(m, Job{Engine: EngineLlamaCpp, PromptTokens: 300, OutputTokens: 1024}); err != nil || strings.Contains(r.Serving.Launch, "--context-shift") {
		t.Errorf("a sequence within the default -c: launch %v, err %v", r, err)
	}
	if _, err := Estimate(m, Job{Engine: EngineVLLM, MaxModelLen: 1000, PromptTokens: 2000}); err == nil {
		t.Error("--max-model-len below the sequence accepted")
	}
	if _, err := Estimate(m, Job{Task: TaskLoRA, Engine: EngineVLLM}); err == nil {
		t.Error("--engine accepted for training")
	}
}

// TestKernelTable: the kernel support decides per engine and compute capability.
func TestKernelTable(t *testing.T) {
	for _, c := range []struct {
		job      Job
		vendor   string
		cc       string
		fp8      bool
		missing  Kernel
		fallback bool
	}{
		{Job{Engine: EngineVLLM, Quant: "fp8"}, "NVIDIA", "8.0", false, "", true},
		{Job{Engine: EngineVLLM, Quant: "fp8"}, "NVIDIA", "9.0", true, "", false},
		{Job{Engine: EngineVLLM, Quant: "fp8"}, "NVIDIA", "7.0", false, KernelFP8W8A16, false},
		{Job{Engine: EngineVLLM, Quant: "int4"}, "NVIDIA", "7.0", false, KernelInt4, false},
		{Job{Engine: EngineVLLM, Quant: "int4"}, "NVIDIA", "7.5", false, "", false},
		{Job{Engine: EngineHF, Attention: "flash"}, "NVIDIA", "7.0", false, KernelFlashAttn2, false},
		{Job{Engine: EngineTRTLLM}, "NVIDIA", "7.5", false, KernelRuntime, false},
		{Job{Engine: EngineTRTLLM}, "AMD", "gfx942", true, KernelRuntime, false},
		{Job{Engine: EngineLlamaCpp, Quant: "int4"}, "NVIDIA", "6.1", false, "", false},
	} {
		k, why, fb := KernelNeedsOf(c.job).Missing(c.vendor, c.cc, c.fp8)
		if k != c.missing || fb != c.fallback || (k != "" && !strings.Contains(why, "[")) {
			t.Errorf("%+v on %s %s: missing %q (%s), fallback %v; want %q, %v", c.job, c.vendor, c.cc, k, why, fb, c.missing, c.fallback)
		}
	}
}

// TestCheckpointBytes: start-up downloads the repository as stored.
func TestCheckpointBytes(t *testing.T) {
	dense := catalog(t, "llama-3.1-8b-instruct")
	if got, want := CheckpointBytes(dense), 2*float64(dense.Params()); got != want {
		t.Errorf("16-bit repo %v bytes, want %v", got, want)
	}
	fp8 := catalog(t, "qwen3-32b-fp8")
	if got := CheckpointBytes(fp8); got > 1.2*float64(fp8.Params()) || got < float64(fp8.Params())*0.9 {
		t.Errorf("fp8 repo %v bytes for %d params, want about 1 byte each", got, fp8.Params())
	}
}
