package jobtime

import (
	"math"

	"github.com/pickergpu/picker/model"
)

// Serving speed (issue 27): what a decode step reads (the experts a batch touches), the
// latency floor of a step of small kernels, and continuous batching, which overlaps each
// request's prompt with the other requests' decoding instead of running it after them.

const (
	// graphKernelSec is one small kernel's cost inside a CUDA graph, launch and tail
	// included: 3.4 µs per kernel replayed from a graph against 9.6 µs launched one by
	// one on a stream with a synchronisation after each (A. Gray, "Getting Started with
	// CUDA Graphs", NVIDIA Technical Blog, 2019: a 2.9 µs kernel, 20 per graph). vLLM,
	// SGLang and TensorRT-LLM replay decode steps as CUDA graphs, and so does
	// llama.cpp's CUDA backend for batch 1 (ggml-cuda, GGML_CUDA_USE_GRAPHS).
	graphKernelSec = 3.4e-6

	// A decode step runs its kernels one after another on one stream (no two kernels of a
	// layer overlap: SemiAnalysis InferenceX issue #863, an SGLang DeepSeek-R1 decode
	// trace, "all operations are strictly serialized"), so a step is the weight-streaming
	// GEMMs' time (their bytes, or their own launch floor when each reads less than it
	// costs) plus every other kernel's floor. The counts are vLLM 0.11.0's decode kernels
	// per layer (LayerShape).
	//
	// denseGEMMs: vllm/model_executor/models/llama.py LlamaDecoderLayer: qkv_proj
	// (QKVParallelLinear fuses q, k, v), o_proj, gate_up_proj (MergedColumnParallelLinear),
	// down_proj.
	denseGEMMs = 4.0
	// denseSmall: the same layer's other kernels: input_layernorm and
	// post_attention_layernorm (fused_add_rms_norm, the residual add included), rotary_emb,
	// the KV-cache write (reshape_and_cache_flash), the attention kernel, SiluAndMul.
	denseSmall = 6.0
	// mlaGEMMs / mlaSmall: multi-head latent attention as vLLM decodes it
	// (vllm/model_executor/models/deepseek_v2.py DeepseekV2MLAAttention with
	// fused_qkv_a_proj; vllm/attention/backends/mla/common.py absorbs kv_b_proj into two
	// batched GEMMs, W_UK before and W_UV after the latent attention): fused_qkv_a_proj,
	// q_b_proj, the W_UK and W_UV bmm and o_proj are 5 GEMMs where a dense layer has 2,
	// and q_a_layernorm and kv_a_layernorm are 2 more small kernels.
	mlaGEMMs = 3.0
	mlaSmall = 2.0
	// moeSmall: a routed-MoE layer's MLP runs two fused expert GEMMs in place of the dense
	// pair, plus the router GEMM (tiny weights), top-k selection, moe_align_block_size and
	// moe_sum (vllm/model_executor/layers/fused_moe/fused_moe.py fused_experts): 4 more
	// small kernels. A shared expert (DeepSeek, Qwen2-MoE) adds its own gate_up and down
	// GEMMs (sharedGEMMs) and its SiluAndMul and the add to the routed output
	// (sharedSmall).
	moeSmall    = 4.0
	sharedGEMMs = 2.0
	sharedSmall = 2.0
	// fp8 W8A8 quantizes each GEMM's activations in a kernel of its own first
	// (vllm/model_executor/layers/quantization/utils/fp8_utils.py
	// apply_w8a8_block_fp8_linear: per_token_group_quant_fp8; per-tensor fp8:
	// w8a8_utils.py Fp8LinearOp, scaled_fp8_quant; fused_moe quantizes the expert
	// inputs the same way): one more small kernel per fp8 GEMM. MLA's W_UK/W_UV bmm run
	// in 16 bits (dequantized at load, MLACommonImpl.process_weights_after_loading).

	// blockFP8GEMMSec: a 128x128 block-scaled fp8 GEMM (DeepSeek-V3/R1, Qwen3-FP8
	// checkpoints) takes about 10 µs at decode batch sizes however few bytes it reads:
	// its K loop loads a scale per block and does not shorten with the batch. SGLang PR
	// #5820 (sgl-project/sglang, "cutlass 3.9 supported to improve fp8_blockwise_gemm",
	// its fp8 block-wise GEMM benchmark on DeepSeek-V3's shapes): N=3072 K=1536 takes
	// 10.3 µs in DeepGEMM at batch 1 and 9.4-10.3 µs up to batch 128 (vLLM's kernel
	// 14.5 µs, sgl-kernel's 17.2 µs), N=512 K=7168 13.6 µs (vLLM 20.6 µs):
	// DeepGEMM's 10.3 µs, the fastest, is the floor. The fused-MoE expert GEMMs run the
	// same block-scaled K loop (fused_moe_kernel with block_shape) and take it too.
	blockFP8GEMMSec = 10.3e-6
)

// LayerShape is what sets a decoder layer's decode kernels (LayerShapeOf); the zero
// value is a dense layer.
type LayerShape struct {
	MLA bool // multi-head latent attention (DeepSeek-V2/V3)
	// BlockFP8: the checkpoint's fp8 weights are block-scaled (model.CheckpointQuant
	// BlockFP8), so its GEMMs run at W8A8 with blockFP8GEMMSec's floor.
	BlockFP8 bool
	// MoE is the share of layers with routed experts (DeepSeek-V3: 58 of 61), Shared the
	// share whose MoE also runs a shared expert.
	MoE, Shared float64
}

// LayerShapeOf reads a model's decode-kernel shape from its linear modules.
func LayerShapeOf(mod *model.Model) LayerShape {
	s := LayerShape{BlockFP8: mod.Ckpt.BlockFP8()}
	L := float64(mod.Dec.Layers)
	if L <= 0 {
		return s
	}
	var denseMLP float64 // non-routed down projections: dense MLPs and shared experts
	for _, md := range mod.Modules {
		switch {
		case md.Name == "kv_a_proj_with_mqa":
			s.MLA = true
		case md.Routed && mod.MoEExperts > 0:
			s.MoE = math.Max(s.MoE, math.Min(1, float64(md.Count)/float64(mod.MoEExperts)/L))
		case !md.Routed && md.Name == "down_proj":
			denseMLP += float64(md.Count)
		}
	}
	if s.MoE > 0 {
		// Down projections beyond the dense layers' own are shared experts.
		s.Shared = math.Max(0, math.Min(s.MoE, denseMLP/L-(1-s.MoE)))
	}
	return s
}

// layerKernels returns a layer's weight-streaming GEMMs, its other kernels in a decode
// step, and the GEMMs' floor in seconds; fp8 says the GEMMs run W8A8 (each quantizes its
// input first).
func (s LayerShape) layerKernels(fp8 bool) (gemms, small, gemmFloor float64) {
	gemms, small = denseGEMMs, denseSmall
	bmm := 0.0
	if s.MLA {
		gemms += mlaGEMMs
		small += mlaSmall
		bmm = 2
	}
	small += s.MoE * moeSmall
	gemms += s.Shared * sharedGEMMs
	small += s.Shared * sharedSmall
	gemmFloor = gemms * graphKernelSec
	if fp8 {
		small += gemms - bmm
		if s.BlockFP8 {
			gemmFloor = (gemms-bmm)*blockFP8GEMMSec + bmm*graphKernelSec
		}
	}
	return gemms, small, gemmFloor
}

// kernelStep is a decode step of an engine that replays CUDA graphs, from the roofline
// step (the longer of its reads and its math) and what bound it: the GEMMs take their
// bytes' time or their floor (a launch, or a block-scaled fp8 GEMM's K loop), whichever
// is longer, and every other kernel of every layer adds its launch floor. The bound is
// "latency" when the floors outweigh the roofline step.
func (m *TimeModel) kernelStep(g *TimeGPU, roof float64, bound string) (float64, string) {
	_, small, floor := m.Layer.layerKernels(m.FP8 && g.FP8TFLOPS > 0)
	gemmFloor := m.Layers * floor
	rest := m.Layers * small * graphKernelSec
	step := math.Max(roof, gemmFloor) + rest
	if step-roof > roof {
		bound = "latency"
	}
	return step, bound
}

// expertsTouched is the expected share of a layer's routed experts that a decode step of
// batch tokens reads, each token picking frac = top-k/E of them: with the balanced
// routing the auxiliary losses train for (Fedus et al. 2021, arXiv:2101.03961 section
// 2.2; DeepSeek-V3 arXiv:2412.19437 section 2.1.2), an expert is missed by all batch
// tokens with probability (1-frac)^batch.
func expertsTouched(frac, batch float64) float64 {
	if frac <= 0 {
		return 0
	}
	if frac >= 1 {
		return 1
	}
	return 1 - math.Pow(1-frac, batch)
}

// serveParts is what continuous batching overlaps, per decode step and per prompt.
type serveParts struct {
	stepMem, stepComp, stepComm float64 // seconds of a decode step: reads, math, collectives
	promptComp                  float64 // seconds of math for one request's prompt
	batch                       float64
	continuous                  bool // the engine batches continuously with chunked prefill
}

// continuousSeconds is the run time of requests requests of out output tokens each under
// continuous batching with chunked prefill (vLLM V1's default scheduler; Agrawal et al.
// 2024, "Sarathi-Serve", arXiv:2403.02310): the prompts' tokens ride along in the decode
// steps, which read the weights anyway, so the job takes the longer of its reads and its
// math, plus the collectives of every step.
func (p *serveParts) continuousSeconds(requests, out float64) float64 {
	steps := requests * out / math.Max(p.batch, 1)
	reads := steps * p.stepMem
	math_ := steps*p.stepComp + requests*p.promptComp
	return math.Max(reads, math_) + steps*p.stepComm
}
