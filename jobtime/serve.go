package jobtime

import "math"

// Serving speed (issue 27): what a decode step reads (the experts a batch touches), the
// latency floor of a step of small kernels, and continuous batching, which overlaps each
// request's prompt with the other requests' decoding instead of running it after them.

const (
	// graphKernelSec is one small kernel's cost inside a CUDA graph, launch and tail
	// included: 3.4 µs per kernel replayed from a graph against 9.6 µs launched one by
	// one on a stream (A. Gray, "Getting Started with CUDA Graphs", NVIDIA Technical Blog,
	// 2019). vLLM, SGLang and TensorRT-LLM replay decode steps as CUDA graphs, and so
	// does llama.cpp's CUDA backend for batch 1 (ggml-cuda, GGML_CUDA_USE_GRAPHS).
	graphKernelSec = 3.4e-6
	// kernelsPerLayer: a dense decoder layer's decode kernels in vLLM's CUDA-graph step:
	// input norm, fused QKV GEMM, rotary embedding, KV-cache write, paged attention,
	// output projection, residual add + norm, fused gate/up GEMM, activation, down
	// projection, residual add (vllm/model_executor/models/llama.py LlamaDecoderLayer):
	// 11, plus the all-reduces at tensor parallel (counted by their own latency).
	kernelsPerLayer = 11.0
	// moeKernelsPerLayer: a routed-MoE layer adds the router GEMM, top-k softmax, the
	// token-expert alignment, two grouped expert GEMMs, the activation and the weighted
	// sum (vllm/model_executor/layers/fused_moe/fused_moe.py: topk_softmax,
	// moe_align_block_size, fused_moe_kernel x2, silu_and_mul, moe_sum): 7 more.
	moeKernelsPerLayer = 7.0
)

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

// stepFloor is the least time a decode step of an engine that replays CUDA graphs takes:
// each layer's kernels one after another, however little each reads.
func (m *TimeModel) stepFloor() float64 {
	k := kernelsPerLayer
	if m.RoutedWeightBytes > 0 {
		k += moeKernelsPerLayer
	}
	return m.Layers * k * graphKernelSec
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
