package fit

import (
	"strconv"
	"strings"
)

// Kernel is a family of GPU kernels a served job needs from its engine.
type Kernel string

// Kernel families (KernelTable).
const (
	KernelRuntime    Kernel = "runtime"            // the engine's CUDA/ROCm build runs on the GPU at all
	KernelFP8W8A8    Kernel = "fp8 W8A8"           // fp8 weights and activations on fp8 tensor cores
	KernelFP8W8A16   Kernel = "fp8 W8A16 (Marlin)" // fp8 weights dequantized in the GEMM, 16-bit math
	KernelInt4       Kernel = "AWQ/GPTQ int4"      // 4-bit integer weights (AWQ, GPTQ, their Marlin kernels)
	KernelMXFP4      Kernel = "MXFP4"              // OCP microscaling 4-bit weights (gpt-oss)
	KernelFlashAttn2 Kernel = "FlashAttention-2"
	KernelFlashAttn3 Kernel = "FlashAttention-3"
	KernelFlashInfer Kernel = "FlashInfer"
)

// KernelRow says from which NVIDIA compute capability an engine's kernel family runs
// (MaxCC > 0: up to that one only), whether its ROCm build has it, and where that is
// written down.
type KernelRow struct {
	Engine Engine
	Kernel Kernel
	MinCC  float64
	MaxCC  float64
	AMD    bool
	Source string
}

// KernelTable is the kernel support per engine and GPU generation: Volta 7.0, Turing 7.5,
// Ampere 8.0/8.6, Ada 8.9, Hopper 9.0, Blackwell 10.0/12.0. A family an engine lacks
// has no row.
var KernelTable = []KernelRow{
	{EngineVLLM, KernelRuntime, 7.0, 0, true, "vLLM 0.11 docs, Installation/GPU: compute capability 7.0 or higher; ROCm MI200/MI300"},
	{EngineVLLM, KernelFP8W8A8, 8.9, 0, true, "vLLM 0.11 docs, Quantization/FP8 W8A8: fp8 GEMMs on Ada, Hopper, Blackwell (and MI300)"},
	{EngineVLLM, KernelFP8W8A16, 8.0, 0, false, "vLLM 0.11 docs, Quantization/FP8 W8A8: \"Ampere GPUs are supported for W8A16 (weight-only FP8) utilizing Marlin kernels\""},
	{EngineVLLM, KernelInt4, 7.5, 0, true, "vllm/model_executor/layers/quantization/awq.py get_min_capability() = 75; awq_marlin/gptq_marlin need 80"},
	{EngineVLLM, KernelMXFP4, 8.0, 0, true, "vllm/model_executor/layers/quantization/mxfp4.py Mxfp4Config.get_min_capability() = 80: MXFP4 MoE on Hopper/Blackwell (triton, FlashInfer), Ampere via the Marlin MXFP4 backend (0.10.1, before Marlin: 90)"},
	{EngineVLLM, KernelFlashAttn2, 8.0, 0, false, "Dao-AILab/flash-attention README: FlashAttention-2 supports Ampere, Ada and Hopper"},
	{EngineVLLM, KernelFlashAttn3, 9.0, 9.0, false, "Dao-AILab/flash-attention hopper/README: FlashAttention-3 is for Hopper (H100/H800)"},
	{EngineVLLM, KernelFlashInfer, 7.5, 0, false, "flashinfer-ai/flashinfer README: sm75 and newer"},
	{EngineSGLang, KernelRuntime, 7.5, 0, true, "SGLang 0.4.6: FlashInfer is the default attention backend on NVIDIA (sm75+); ROCm on MI300"},
	{EngineSGLang, KernelFP8W8A8, 8.9, 0, true, "SGLang 0.4.6 docs, Quantization: fp8 on sm89+"},
	{EngineSGLang, KernelFP8W8A16, 8.0, 0, false, "SGLang 0.4.6 python/sglang/srt/layers/quantization/fp8.py: Marlin W8A16 fallback below sm89"},
	{EngineSGLang, KernelInt4, 8.0, 0, false, "SGLang 0.4.6 AWQ/GPTQ via awq_marlin/gptq_marlin (sm80+)"},
	{EngineSGLang, KernelMXFP4, 9.0, 0, false, "SGLang gpt-oss support (0.5.0): MXFP4 MoE on Hopper and Blackwell"},
	{EngineSGLang, KernelFlashAttn2, 8.0, 0, false, "Dao-AILab/flash-attention README"},
	{EngineSGLang, KernelFlashAttn3, 9.0, 9.0, false, "Dao-AILab/flash-attention hopper/README"},
	{EngineSGLang, KernelFlashInfer, 7.5, 0, false, "flashinfer-ai/flashinfer README: sm75 and newer"},
	{EngineTRTLLM, KernelRuntime, 8.0, 0, false, "TensorRT-LLM 1.0 support matrix: Blackwell, Hopper, Ada Lovelace, Ampere (NVIDIA only)"},
	{EngineTRTLLM, KernelFP8W8A8, 8.9, 0, false, "TensorRT-LLM 1.0 support matrix: FP8 on Ada, Hopper, Blackwell"},
	{EngineTRTLLM, KernelInt4, 8.0, 0, false, "TensorRT-LLM 1.0 support matrix: INT4 AWQ (W4A16) on Ampere and newer"},
	{EngineTRTLLM, KernelMXFP4, 9.0, 0, false, "TensorRT-LLM 1.0 gpt-oss: MXFP4 on Hopper and Blackwell"},
	{EngineTRTLLM, KernelFlashAttn2, 8.0, 0, false, "TensorRT-LLM fused multi-head attention (FMHA) kernels, Ampere and newer"},
	{EngineLlamaCpp, KernelRuntime, 5.0, 0, true, "llama.cpp docs/build.md: CUDA backend, compute capability 5.0+ (and HIP for ROCm)"},
	{EngineLlamaCpp, KernelInt4, 5.0, 0, true, "llama.cpp ggml-cuda: Q4_0 dequantize/MMQ kernels for every supported GPU"},
	{EngineLlamaCpp, KernelFlashAttn2, 5.0, 0, true, "llama.cpp ggml-cuda/fattn.cu: its own FlashAttention kernels (-fa), tile/vector variants for every GPU"},
	{EngineHF, KernelRuntime, 5.0, 0, true, "PyTorch wheels (the stack check covers which)"},
	{EngineHF, KernelFlashAttn2, 8.0, 0, false, "transformers attn_implementation=\"flash_attention_2\" needs the flash-attn package: Ampere, Ada, Hopper (Dao-AILab README)"},
	{EngineHF, KernelInt4, 7.5, 0, true, "transformers AWQ (autoawq) kernels: compute capability 7.5+"},
	{EngineHF, KernelFP8W8A16, 8.0, 0, false, "transformers fp8 (FineGrainedFP8 / compressed-tensors) dequantizing kernels, Ampere+"},
	{EngineHF, KernelFP8W8A8, 8.9, 0, false, "transformers FineGrainedFP8: fp8 GEMMs on sm89+"},
	{EngineHF, KernelMXFP4, 8.0, 0, false, "transformers Mxfp4Config: triton kernels on Ampere+ (else dequantized to bf16)"},
}

// KernelNeeds is what a resolved job asks of its engine's kernels.
type KernelNeeds struct {
	Engine  Engine
	Kernels []Kernel // besides KernelRuntime; KernelFP8W8A8 stands for "W8A8, else W8A16"
	flags   []string // the flags that asked for each kernel, for reasons
}

// KernelNeedsOf derives a served job's kernel needs (Result.Job: resolved). Training and
// image jobs need none here (the stack check covers them).
func KernelNeedsOf(j Job) KernelNeeds {
	n := KernelNeeds{Engine: j.Engine}
	if j.Engine == "" {
		return n
	}
	add := func(k Kernel, flag string) {
		n.Kernels = append(n.Kernels, k)
		n.flags = append(n.flags, flag)
	}
	switch j.Quant {
	case "fp8":
		add(KernelFP8W8A8, "fp8 weights")
	case "int4":
		add(KernelInt4, "int4 weights")
	case "mxfp4":
		add(KernelMXFP4, "MXFP4 weights")
	}
	if j.Attention == "flash" {
		add(KernelFlashAttn2, "--attention flash")
	}
	return n
}

// row returns the engine's row for a kernel family (a pointer into KernelTable: the
// per-offer check copies no rows).
func (n KernelNeeds) row(k Kernel) (*KernelRow, bool) {
	for i := range KernelTable {
		if r := &KernelTable[i]; r.Engine == n.Engine && r.Kernel == k {
			return r, true
		}
	}
	return nil, false
}

// runs reports whether row r covers a GPU (vendor, compute capability).
func (r KernelRow) runs(amd bool, cc float64) bool {
	if amd {
		return r.AMD
	}
	return cc >= r.MinCC && (r.MaxCC == 0 || cc <= r.MaxCC)
}

// Missing returns the kernel family the GPU lacks for the job ("" = it has them all) and
// why, citing the table's source. An fp8 job runs W8A8 where the GPU has fp8 tensor
// cores and the engine's W8A16 (Marlin) kernels elsewhere; fallback names that case.
// A GPU whose compute capability is unknown is not judged. The recommender asks it for
// every offer, so the path where nothing is missing allocates nothing (the reason is
// built only when there is one).
func (n KernelNeeds) Missing(vendor, computeCapability string, fp8Cores bool) (missing Kernel, reason string, fallback bool) {
	if n.Engine == "" {
		return "", "", false
	}
	amd := strings.EqualFold(vendor, "AMD")
	cc, err := strconv.ParseFloat(computeCapability, 64)
	if !amd && err != nil {
		return "", "", false
	}
	if r, ok := n.row(KernelRuntime); !ok || !r.runs(amd, cc) {
		return n.lacks(KernelRuntime, "the engine itself", "", amd, computeCapability)
	}
	fb := false
	for i, k := range n.Kernels {
		if k == KernelFP8W8A8 {
			if r, ok := n.row(KernelFP8W8A8); ok && fp8Cores && r.runs(amd, cc) {
				continue
			}
			if r, ok := n.row(KernelFP8W8A16); ok && r.runs(amd, cc) {
				fb = true
				continue
			}
			_, w8a16 := n.row(KernelFP8W8A16)
			switch {
			case !fp8Cores && w8a16:
				return n.lacks(KernelFP8W8A16, n.flags[i], " without fp8 tensor cores", amd, computeCapability)
			case !fp8Cores:
				continue // no fp8 tensor cores and no fallback: the fp8 rule excludes it (Job.FP8Cores)
			}
			return n.lacks(KernelFP8W8A8, n.flags[i], "", amd, computeCapability)
		}
		if r, ok := n.row(k); !ok || !r.runs(amd, cc) {
			return n.lacks(k, n.flags[i], "", amd, computeCapability)
		}
	}
	return "", "", fb
}

// lacks is Missing's answer for a kernel family the GPU lacks (flag+also: what asked for
// it), with the reason citing the table's row. The recommender's per-offer check reaches
// it for every offer of a GPU that lacks a kernel, so the reason is written into one
// buffer: a single allocation.
func (n KernelNeeds) lacks(k Kernel, flag, also string, amd bool, computeCapability string) (Kernel, string, bool) {
	var buf [512]byte
	b := append(append(append(buf[:0], n.Engine...), ' '), n.Engine.Spec().Version...)
	r, ok := n.row(k)
	if !ok {
		b = append(append(append(append(append(b, " has no "...), k...), " kernels ("...), flag...), also...)
		return k, string(append(b, ')')), false
	}
	b = append(append(append(append(append(b, "'s "...), k...), " kernels ("...), flag...), also...)
	b = append(b, ") need "...)
	switch {
	case amd:
		b = append(b, "NVIDIA"...)
	case r.MaxCC > 0:
		b = strconv.AppendFloat(append(b, "compute capability "...), r.MaxCC, 'f', 1, 64)
	default:
		b = append(strconv.AppendFloat(append(b, "compute capability "...), r.MinCC, 'f', 1, 64), '+')
	}
	if amd {
		b = append(append(append(b, ", not ROCm ("...), computeCapability...), ')')
	} else {
		b = append(append(b, ", not compute capability "...), computeCapability...)
	}
	b = append(append(append(b, " ["...), r.Source...), ']')
	return k, string(b), false
}

// FP8Cores reports whether a served job needs fp8 tensor cores whatever its engine's
// fallbacks: an fp8 KV cache, fp8 training, or fp8 weights on an engine with no W8A16
// kernels (TensorRT-LLM). fp8 weights on vLLM, SGLang and transformers run W8A16 on
// Ampere (the kernel table decides, KernelNeeds.Missing).
func (j Job) FP8Cores() bool {
	if !j.UsesFP8() {
		return false
	}
	if j.KVCacheDtype == "fp8" || j.Precision == "fp8-mixed" {
		return true
	}
	n := KernelNeeds{Engine: j.Engine}
	if j.Engine == "" {
		return true
	}
	_, ok := n.row(KernelFP8W8A16)
	return !ok
}
