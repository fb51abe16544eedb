package jobtime

import (
	"math"

	"github.com/pickergpu/picker/fit"
)

// The job-time model (issue 15). It turns a job's shape and a GPU's datasheet figures
// into tokens per second from first principles: FLOPs over an achievable share of the
// tensor peak, bytes over an achievable share of the memory bandwidth, and bytes over
// the interconnect. Every constant below is a published measurement or a datasheet
// figure, not a number fitted to the calibration rows (cmd/picker/testdata/throughput_measured.csv
// scores the result).

// Inference engines (--engine): fit.Engines, whose memory model (fit/engine.go) the
// time model shares.
const (
	EngineHF       = string(fit.EngineHF)
	EngineVLLM     = string(fit.EngineVLLM)
	EngineSGLang   = string(fit.EngineSGLang)
	EngineLlamaCpp = string(fit.EngineLlamaCpp)
	EngineTRTLLM   = string(fit.EngineTRTLLM)
	DefaultEngine  = string(fit.DefaultServeEngine)
)

// Engines lists the --engine values.
var Engines = func() []string {
	out := make([]string, len(fit.Engines))
	for i, e := range fit.Engines {
		out[i] = string(e)
	}
	return out
}()

// Time-model constants.
const (
	// Achievable share of the dense tensor peak for the GEMMs of dense transformer
	// training, per GPU generation (archEfficiency picks one):
	//
	// None of these comes from a source the calibration rows are taken from (llm-foundry,
	// the FlashAttention repository, Lambda's benchmarks, torchtune, llama.cpp tables):
	// those rows score the model, they do not set it.
	//
	// effAmpere: published A100 training runs sustain 44-52 % of the bf16 peak in
	// Megatron-LM (Narayanan et al. 2021, arXiv:2104.04473 Table 1: 137-163 TFLOPs/s per
	// GPU, 1.7B-1T parameters), 54 % for the 530B model with selective recomputation
	// (Korthikanti et al. 2022, arXiv:2205.05198 Table 5), 50 % for BLOOM-176B (156
	// TFLOPs/s; BigScience, "The Technology Behind BLOOM Training", 2022) and 47 % for
	// OPT-175B (147 TFLOPs/s; Zhang et al. 2022, arXiv:2205.01068 section 2.4): 0.50 is
	// the middle. Ada Lovelace has the same per-SM tensor-core design; no independent
	// end-to-end figure, so the same.
	effAmpere = 0.50
	// effHopper: Llama 3 pre-training 38-43 % BF16 MFU on H100 (Dubey et al. 2024,
	// arXiv:2407.21783 Table 4) and Megatron-Core's up to 47 % on H100 clusters
	// (NVIDIA Megatron-LM README, performance section): 0.43 is the middle. Hopper's
	// peak grew 3x over A100 while software kept less of it. Blackwell: no public
	// end-to-end MFU yet, so Hopper's.
	effHopper = 0.43
	// effVolta: Megatron-LM's single-V100 baseline sustains 39 TFLOPs/s = 30 % of the
	// 125 TFLOPS peak (Shoeybi et al. 2019, arXiv:1909.08053 section 5.1). Also used for
	// Turing, pre-tensor-core GPUs (their FP32 figure) and AMD CDNA, whose training
	// stacks trail (SemiAnalysis, "MI300X vs H100 vs H200 Benchmark Part 1: Training",
	// Dec 2024: MI300X BF16 training MFU well below H100's).
	effVolta = 0.30

	// actBytesPerHidden: bytes of saved activations per token, layer and hidden unit in
	// 16-bit training without attention scores (Korthikanti et al. 2022, arXiv:2205.05198
	// eq. 1: s·b·h·(34 + 5·a·s/h) per layer). Elementwise kernels (norms, activation,
	// dropout, residual adds) are memory-bound: each saved tensor is written in the
	// forward, read in the backward, and its gradient written and read once more, so
	// traffic is actTrafficPasses × that. This term is what makes small-hidden models and
	// GPUs with a high FLOP/byte ratio slower than their peak suggests.
	actBytesPerHidden = 34.0
	// actScoreBytesPerHead: the 5·a·s term of the same equation (attention scores,
	// softmax output, dropout mask), present only when attention is eager (not fused).
	actScoreBytesPerHead = 5.0
	actTrafficPasses     = 4.0
	// gemmIOElemsPerHidden: a layer's GEMMs read their input row and write their output
	// row per token: QKV d+3d, output projection d+d, MLP up d+4d and down 4d+d = 16·d
	// elements (GPT-style layer; Megatron-LM, Narayanan et al. 2021 arXiv:2104.04473
	// section 3.1 counts the same shapes); the backward runs two GEMMs per forward GEMM,
	// so gemmPasses = 3. Near the ridge point (small d) this traffic is not hidden
	// behind the math (roofline, Williams et al. 2009 CACM 52(4)), which is why a
	// d=1024 model reaches a smaller share of a high FLOP/byte GPU than a d=4096 one.
	gemmIOElemsPerHidden = 16.0
	gemmPasses           = 3.0
	// bwEfficiency: share of datasheet DRAM bandwidth a streaming kernel sustains
	// (BabelStream/STREAM-style triad on A100/H100 reaches ~85-90 % of peak; Deakin et
	// al., BabelStream results, uob-hpc.github.io/BabelStream); 0.8 leaves room for
	// non-ideal access patterns.
	bwEfficiency = 0.8

	// fp8GEMMShare: fp8 GEMMs keep this share of the 16-bit GEMM efficiency
	// (per-tensor scaling, casts and amax bookkeeping around each GEMM): NVIDIA reports
	// 1.3-1.5x end-to-end for GPT/Llama training with Transformer Engine fp8 over bf16 on
	// H100 (Transformer Engine docs "FP8 primer"; Micikevicius et al. 2022
	// arXiv:2209.05433), i.e. the 2x peak delivers ~0.7x of it.
	fp8GEMMShare = 0.7

	// QLoRA's dequantization: dequant.go.

	// Interconnect: NCCL all-reduce bus bandwidth reaches ~77 % of the per-direction link
	// rate (nccl-tests on DGX A100: ~230 of 300 GB/s; github.com/NVIDIA/nccl-tests
	// doc/PERFORMANCE.md defines busbw).
	linkEfficiency = 0.77
	// gpusPerNode: clouds sell at most 8 GPUs in one box; beyond that FSDP/DDP traffic
	// crosses the network.
	gpusPerNode = 8
	// netGBsPerGPU: one 200 Gb/s HDR InfiniBand port per GPU, the DGX A100 design
	// (NVIDIA DGX A100 system architecture white paper); per direction. Hopper and
	// Blackwell clusters give each GPU a 400 Gb/s NDR port (DGX H100/B200 reference
	// architecture: 8x ConnectX-7 400G), netGBsPerGPUNDR.
	netGBsPerGPU    = 25.0
	netGBsPerGPUNDR = 50.0
	// allReduceLatencyNVLink / PCIe: the fixed cost of one small all-reduce, which
	// tensor-parallel decoding pays twice per layer (Megatron's two all-reduces per
	// layer, Shoeybi et al. 2019 fig. 3); nccl-tests small-message all_reduce times on
	// 8-GPU NVLink systems are ~10 µs, over PCIe ~25 µs.
	allReduceLatencyNVLink = 10e-6
	allReduceLatencyPCIe   = 25e-6

	// Decode engines: the share of the bandwidth roof a single decoding stream reaches.
	// vLLM: 75 tok/s for Llama-3.1-8B bf16 on an A100 40GB at concurrency 1 = 77 % of
	// the roof (J. Musgrave, "vLLM throughput-latency sweep on NVIDIA A100",
	// johnmusgrave.com, vLLM 0.23). TensorRT-LLM uses the same fused GEMV + CUDA-graph
	// design; no independent single-stream figure was found, so vLLM's.
	decodeEffVLLM = 0.77
	// llama.cpp (CUDA): llama-bench tg128 of LLaMA-7B F16 (13.5 GB read per token) in
	// llama.cpp's own pull requests: 61.0 tok/s on an RTX 4090 = 82 % of its 1008 GB/s
	// roof (ggml-org/llama.cpp#4766, Jan 2024), 45.2 tok/s on an RTX A6000 = 79 % of 768
	// GB/s (ggml-org/llama.cpp#3816, Oct 2023): 0.80. Whether its GEMV kernels keep
	// enough bytes in flight for HBM's latency-bandwidth product (Little's law) has no
	// published single-GPU figure outside the calibration rows' own source, so HBM cards
	// get the same share.
	decodeEffLlamaCpp = 0.80
	// hfLayerDispatchSec: Hugging Face generate() runs eager PyTorch, bound by Python
	// dispatch: gpt-fast's eager baseline decodes Llama-2-7B at 25.5 tok/s on an A100
	// (PyTorch blog "Accelerating Generative AI with PyTorch II: GPT, Fast", Nov 2023),
	// 39 ms per step for 32 layers = 1.2 ms per layer whatever the GPU; the GPU side
	// then runs at vLLM's share of the roof.
	hfLayerDispatchSec = 1.2e-3
)

// TimeModel is the time model's view of a job: model shape plus techniques. It is built
// from a resolved job (TimeModelFor) but kept separate from Job so the model can be
// tested and benchmarked on its own. Counts are float64 because they enter products of
// 1e9-1e13 quantities.
type TimeModel struct {
	Task fit.Task // TaskInference, TaskFullFT, TaskLoRA, TaskQLoRA

	ActiveParams    float64 // parameters each token passes through (MoE: shared + top-k)
	Params          float64 // all parameters the GPUs hold
	TrainableParams float64 // parameters with gradients (LoRA: adapters)
	QuantParams     float64 // linear weights stored 4/8-bit (0 unquantized)
	Layers, Hidden  float64
	Heads           float64
	Layer           LayerShape // serve.go: what sets a layer's decode kernels
	KVPerToken      float64    // K and V elements per token over all layers
	// Decode reads: DenseWeightBytes every step; RoutedWeightBytes (MoE experts) in the
	// share RoutedFrac·batch of distinct experts a step's tokens hit, at most all.
	DenseWeightBytes, RoutedWeightBytes, RoutedFrac float64

	ComputeBytes float64 // bytes of the compute dtype: 2 for 16-bit, 4 for fp32
	// KVBytes is the bytes of one KV-cache element (1 for --kv-cache-dtype fp8); 0 =
	// ComputeBytes.
	KVBytes float64
	// GradBytes is the dtype of reduced gradients: 4 when fp32 master weights hold them
	// (mixed precision), 2 for pure 16-bit.
	GradBytes      float64
	GradCkpt       bool
	EagerAttention bool
	Batch, SeqLen  float64 // micro-batch per GPU, tokens per sample
	Shard          fit.Shard
	Offload        fit.Offload
	// The optimizer step (optimizer.go): OptStepBytes is what one step reads and writes
	// in each GPU's memory, OptCPUParams the parameters each GPU's process updates on the
	// host when the optimizer is offloaded (DeepSpeedCPUAdam); LastBucketBytes is the
	// gradient all-reduce DDP has left when the backward ends.
	OptStepBytes, OptCPUParams, LastBucketBytes float64
	// OptLaunches is the ops a for-loop optimizer step dispatches from Python
	// (--optimizer-step for-loop: forLoopAdamKernels per trainable tensor); 0 for foreach
	// and fused (stepfixed.go).
	OptLaunches float64
	// LayerGEMMs is a layer's forward GEMMs (its linear modules); 0 = layerGEMMsDense.
	LayerGEMMs float64
	// GradAccum is the micro-batches per optimizer step (--grad-accum, resolved to the
	// framework's default: fit.Job.GradAccum); 0 = 1.
	GradAccum float64
	// WorkScale is an encoder–decoder job's work per source token relative to running
	// every layer over the source (--target-tokens: the decoder runs over the target);
	// 0 = 1.
	WorkScale float64

	// Inference workload.
	Engine       string  // "" = DefaultEngine
	Pipeline     bool    // --split layer: layers split across GPUs (GPUs take turns) instead of tensor parallel
	PromptTokens float64 // 0 = SeqLen/2 of context on average and no prompt phase
	OutputTokens float64

	MFU float64 // > 0 overrides the per-architecture GEMM efficiency (--mfu)
	// FP8: linear layers in fp8 (--precision fp8-mixed: Transformer Engine; --quant fp8
	// and fp8 checkpoints: fp8 GEMMs where the GPU has them); attention and everything
	// else stay 16-bit.
	FP8 bool

	// Image generation (image.go): the pipeline's work per image (nil when the catalog
	// has no compute figures for it), and Steps, the denoising steps per image (0 = the
	// pipeline's default, DefaultSteps).
	Image *ImageWork
	Steps float64
}

// TimeGPU is the hardware side: one offer's GPUs.
type TimeGPU struct {
	Arch       string
	PeakTFLOPS float64 // dense, in the job's compute dtype
	// FP8TFLOPS is the dense fp8 peak (0 = none); an fp8 job (TimeModel.FP8) runs its
	// linear layers there.
	FP8TFLOPS float64
	// FP32TFLOPS is the FP32 (non-tensor) peak, for the fp32 passes of a 16-bit job (an
	// image pipeline's upcast VAE) on GPUs without TF32.
	FP32TFLOPS   float64
	BandwidthGBs float64
	HBM          bool
	Count        float64 // GPUs the job runs on; below 1 for a vGPU slice
	LinkGBs      float64 // GPU-GPU per direction (NVLink/Infinity Fabric); 0 = over PCIe
	HostLinkGBs  float64 // GPU-host per direction
	// NodeGPUs and NodeLinkGBs describe a cluster's nodes for hybrid sharding (--shard
	// hsdp): GPUs per node and their GPU-GPU link inside it, when LinkGBs is the
	// cluster's slowest path; 0 = nodes of at most gpusPerNode GPUs with LinkGBs inside.
	NodeGPUs, NodeLinkGBs float64
}

// Timing is the model's answer for one job on one offer.
type Timing struct {
	// TokensPerSec: training tokens (all GPUs) or generated tokens per second in steady
	// decoding at the job's batch.
	TokensPerSec float64
	// PrefillTokensPerSec: prompt tokens per second (inference).
	PrefillTokensPerSec float64
	// TTFTSec: time to first token of one request (prefill of its prompt plus one step).
	TTFTSec float64
	// ImagesPerSec: images per second over all the GPUs used (image generation; each GPU
	// runs its own copy of the pipeline).
	ImagesPerSec float64
	// Bound names what limits the step: compute, memory, communication, offload,
	// dequant, dispatch, latency (a decode step of small kernels), optimizer (the
	// optimizer step outlasts the forward and backward's math).
	Bound string
	// serve is what continuous batching overlaps (serve.go); zero for training.
	serve serveParts
}

// archEfficiency is the achievable GEMM share of the tensor peak for a GPU generation.
func archEfficiency(arch string) float64 {
	switch arch {
	case "Ampere", "Ada Lovelace":
		return effAmpere
	case "Hopper", "Blackwell", "Blackwell Ultra":
		return effHopper
	}
	return effVolta
}

// decodeBWEfficiency is the engine's share of the bandwidth roof.
func decodeBWEfficiency(engine string) float64 {
	if engine == EngineLlamaCpp {
		return decodeEffLlamaCpp
	}
	return decodeEffVLLM
}

// linkGBs is the per-direction bandwidth collectives see on g.
func linkGBs(g *TimeGPU) float64 {
	bw := g.LinkGBs
	if bw <= 0 {
		bw = g.HostLinkGBs
	}
	if bw <= 0 {
		bw = 16 // PCIe Gen3 x16, the slowest link a cloud GPU has
	}
	if g.Count > gpusPerNode {
		net := netGBsPerGPU
		if archEfficiency(g.Arch) == effHopper {
			net = netGBsPerGPUNDR
		}
		bw = math.Min(bw, net)
	}
	return bw * linkEfficiency
}

// Estimate returns the job's timing on g; ok is false when a figure is missing.
func (m *TimeModel) Estimate(g *TimeGPU) (Timing, bool) {
	if g.PeakTFLOPS <= 0 || g.BandwidthGBs <= 0 || m.ActiveParams <= 0 {
		return Timing{}, false
	}
	if m.Task == fit.TaskImageGen {
		if m.Image == nil {
			return Timing{}, false
		}
		return m.image(g), true // image.go
	}
	if m.training() {
		return m.train(g), true
	}
	return m.infer(g), true
}

func (m *TimeModel) efficiency(g *TimeGPU) float64 {
	if m.MFU > 0 {
		return m.MFU
	}
	return archEfficiency(g.Arch)
}

// train: one micro-batch per GPU per step.
func (m *TimeModel) train(g *TimeGPU) Timing {
	n := math.Max(g.Count, 1) // GPUs
	slice := math.Min(g.Count, 1)
	if slice <= 0 {
		slice = 1
	}
	peak := g.PeakTFLOPS * 1e12 * slice
	bw := g.BandwidthGBs * 1e9 * slice * bwEfficiency
	L, d, s := m.Layers, m.Hidden, math.Max(m.SeqLen, 1)
	tokens := math.Max(m.Batch, 1) * s // per GPU per micro-batch

	// FLOPs per token: 2N forward, 2N for activation gradients, 2N for weight gradients
	// (Kaplan et al. 2020 arXiv:2001.08361, C = 6N); frozen weights (LoRA/QLoRA) skip the
	// weight gradients; checkpointing repeats the forward. Attention scores and values add
	// 4·L·d·s forward per token and twice that backward (PaLM, Chowdhery et al. 2022
	// arXiv:2204.02311 appendix B: 6N + 12·L·d·s), plus the recomputed forward.
	kw, ka := 6.0, 12.0
	if m.Task != fit.TaskFullFT {
		kw = 4
	}
	if m.GradCkpt {
		kw += 2
		ka += 4
	}
	flops := kw*m.ActiveParams + ka*L*d*s
	if m.FP8 && g.FP8TFLOPS > 0 {
		// The linear layers run at the fp8 peak with fp8GEMMShare of the 16-bit GEMM
		// efficiency: attention FLOPs are counted at the 16-bit rate.
		flops = kw*m.ActiveParams*g.PeakTFLOPS/(g.FP8TFLOPS*fp8GEMMShare) + ka*L*d*s
	}
	act := actBytesPerHidden*d + gemmIOElemsPerHidden*d*gemmPasses/actTrafficPasses
	if m.EagerAttention {
		act += actScoreBytesPerHead * m.Heads * s
	}
	actBytes := actTrafficPasses * act * L * m.ComputeBytes / 2

	tp := 1.0 // tensor parallel splits each token's work over the GPUs
	if m.Shard == "tp" && n > 1 {
		tp = n
	}
	work := tokens // the tokens every layer's work is counted for
	if m.WorkScale > 0 {
		work *= m.WorkScale
	}
	compute := work * flops / (peak * m.efficiency(g)) / tp
	memory := work * actBytes / bw / tp
	// Every kernel takes at least its launch floor (stepfixed.go): the GEMMs the longer
	// of their math and theirs, the other kernels the longer of their bytes and theirs.
	// Tensor parallelism splits a kernel's work, not its launch.
	gemmFloor, smallFloor := m.kernelFloors()
	step := math.Max(compute, gemmFloor) + math.Max(memory, smallFloor)
	bound := "compute"
	if memory > compute {
		bound = "memory"
	}
	if step-compute-memory > math.Max(compute, memory) {
		bound = "latency"
	}
	if m.Task == fit.TaskQLoRA || (m.Task == fit.TaskLoRA && m.QuantParams > 0) {
		passes := 2.0
		if m.GradCkpt {
			passes = 3
		}
		deq := m.dequantSeconds(bw, tp, passes) // dequant.go
		step += deq
		if deq > compute {
			bound = "dequant"
		}
	}
	// Eager PyTorch launches a layer's kernels from Python, and the Trainer synchronises
	// every micro-batch: the GPU waits for the forward's dispatch where it is slower than
	// the forward's kernels (their share 2/kw of the step's linear FLOPs), then runs the
	// backward that autograd's C++ engine queues ahead of it (stepfixed.go). It binds
	// only for small layers at short sequences.
	if idle := m.dispatchIdle(step * 2 / kw); idle > 0 {
		if idle > step {
			bound = "dispatch"
		}
		step += idle
	}

	// Data-parallel collectives overlap the backward pass (PyTorch DDP gradient
	// buckets, Li et al. 2020 arXiv:2006.15704; FSDP prefetching, Zhao et al. 2023
	// arXiv:2304.11277), so a step takes the longer of the two.
	link := linkGBs(g) * 1e9
	weightBytes := (m.Params-m.QuantParams)*m.ComputeBytes + m.QuantParams*0.5
	// Gradient accumulation: the gradient reduction, the optimizer step and the weights'
	// return from offload happen once per accum micro-batches (DDP no_sync; FSDP and
	// ZeRO-3 still gather the weights for every micro-batch).
	accum := math.Max(m.GradAccum, 1)
	var comm float64
	lat := collectiveLatency(g)
	if n > 1 {
		ring := 2 * (n - 1) / n // a ring all-reduce moves 2(n-1)/n of the buffer per GPU
		switch m.Shard {
		case "zero3", "fsdp":
			// All-gather the weights for the forward and again for the backward, and
			// reduce-scatter the gradients: (n-1)/n of each per GPU (ZeRO, Rajbhandari et
			// al. 2020 arXiv:1910.02054 section 7: 1.5x DDP's volume).
			// FSDP/ZeRO-3 mixed precision reduces in the compute dtype (FSDP MixedPrecision
			// reduce_dtype, DeepSpeed's fp16/bf16 reduce).
			comm = (n - 1) / n * (2*weightBytes + m.TrainableParams*m.ComputeBytes/accum) / link
			// Each layer's unit: an all-gather for the forward, one for the backward and a
			// reduce-scatter, each with its fixed latency (stepfixed.go).
			comm += 3 * L * lat
		case "hsdp":
			comm = m.hybridComm(g, n, weightBytes, accum) + 3*L*lat // hsdp.go
		case "tp":
			// Megatron tensor parallelism: 2 all-reduces of the layer's activations in the
			// forward and 2 in the backward (+2 when recomputed), not overlapped.
			k := 4.0
			if m.GradCkpt {
				k = 6
			}
			step += k * L * (ring*tokens*d*m.ComputeBytes/link + lat)
		default: // DDP, ZeRO-1/2: one all-reduce (or reduce-scatter + all-gather) of the gradients
			// It overlaps the backward of the last micro-batch only; each bucket pays the
			// collective latency.
			grads := m.TrainableParams * m.GradBytes
			comm = ring*grads/link + ddpBuckets(grads)*lat
			if comm > step {
				comm = step + (comm-step)/accum
			}
		}
	}
	if comm > step {
		bound = "communication"
		step = comm
	}
	step += m.exposedComm(n, link) / accum // optimizer.go

	// Offload (ZeRO-Offload, Ren et al. 2021 arXiv:2101.06840): the PCIe link carries
	// the gradients out and the updated 16-bit weights back every step; parameter
	// offload (ZeRO-Infinity, arXiv:2104.07857) also streams the weights in for the
	// forward and again for the backward. Not hidden behind compute at these volumes.
	if m.Offload == "optimizer" || m.Offload == "optimizer+params" {
		host := math.Max(g.HostLinkGBs, 16) * 1e9 * linkEfficiency
		shard := 1.0
		if m.Shard == "zero3" || m.Shard == "fsdp" || m.Shard == "zero2" || m.Shard == "zero1" {
			shard = n
		}
		bytes := m.TrainableParams * (m.GradBytes + m.ComputeBytes/accum) / shard
		if m.Offload == "optimizer+params" {
			bytes += 2 * weightBytes / shard
		}
		off := bytes / host
		if m.Shard == "zero3" {
			// ZeRO-3's overlap_comm (on by default for stage 3, DeepSpeed
			// zero/config.py overlap_comm_valid) copies each reduced gradient partition to
			// pinned host memory while the backward continues: the copy hides behind the
			// backward's two thirds of the math; the weights' return waits for the CPU step.
			grads := m.TrainableParams * m.GradBytes / shard / host
			off = math.Max(0, grads-compute*2/3) + (off - grads)
		}
		if off > step {
			bound = "offload"
		}
		step += off
	}
	// The optimizer step follows the backward and its collectives (optimizer.go): on the
	// GPU a stream of its states, or with --offload optimizer the host's CPU Adam, after
	// the gradients have crossed PCIe (above) and before the weights come back.
	if opt := m.optimizerSeconds(bw*tp) / accum; opt > 0 { // tensor parallel: each GPU steps 1/tp of the states
		if opt > compute {
			bound = "optimizer"
			if m.OptCPUParams > 0 {
				bound = "offload"
			}
		}
		step += opt
	}
	perGPU := tokens / step
	total := perGPU * n / tp
	if g.Count < 1 {
		total = perGPU
	}
	return Timing{TokensPerSec: total, Bound: bound}
}

// infer: steady decoding at the job's batch, plus the prompt phase.
func (m *TimeModel) infer(g *TimeGPU) Timing {
	n := math.Max(g.Count, 1)
	slice := math.Min(g.Count, 1)
	if slice <= 0 {
		slice = 1
	}
	peak := g.PeakTFLOPS * 1e12 * slice
	bwPeak := g.BandwidthGBs * 1e9 * slice
	engine := m.Engine
	if engine == "" {
		engine = DefaultEngine
	}
	eff := m.efficiency(g)
	bw := bwPeak * decodeBWEfficiency(engine)
	L, d := m.Layers, m.Hidden
	b := math.Max(m.Batch, 1)
	prompt := m.PromptTokens
	ctx := math.Max(m.SeqLen, 1) / 2 // no workload given: the context fills to seq-len
	if m.PromptTokens > 0 || m.OutputTokens > 0 {
		ctx = m.PromptTokens + m.OutputTokens/2
	}
	split := 1.0 // tensor parallel: each GPU reads and computes 1/n of every layer
	if n > 1 && !m.Pipeline {
		split = n
	}

	// One decode step: every weight once (experts as far as the batch's tokens reach
	// them) and each sequence's KV cache; 2·N_active FLOPs per token plus 4·L·d·ctx for
	// attention (roofline, Williams et al. 2009; decode analysis in Pope et al. 2022
	// arXiv:2211.05102 section 2). A layer split gives no speed-up: the GPUs take turns.
	weights := m.DenseWeightBytes + m.RoutedWeightBytes*expertsTouched(m.RoutedFrac, b) // serve.go
	kvB := m.KVBytes
	if kvB == 0 {
		kvB = m.ComputeBytes
	}
	kv := b * ctx * m.KVPerToken * kvB
	// fp8 GEMMs (TimeModel.FP8 on a GPU with fp8 tensor cores) run the linear layers'
	// 2·N_active FLOPs per token at the fp8 peak, keeping fp8GEMMShare of the 16-bit
	// efficiency; attention stays 16-bit.
	linScale := 1.0
	if m.FP8 && g.FP8TFLOPS > 0 {
		linScale = g.PeakTFLOPS / (g.FP8TFLOPS * fp8GEMMShare)
	}
	tMem := (weights + kv) / split / bw
	tComp := b * (2*m.ActiveParams*linScale + 4*L*d*ctx) / split / (peak * eff)
	step, bound := tMem, "memory"
	if tComp > step {
		step, bound = tComp, "compute"
	}
	if engine == EngineHF {
		if disp := L * hfLayerDispatchSec; disp > step {
			step, bound = disp, "dispatch"
		}
	} else {
		step, bound = m.kernelStep(g, step, bound) // serve.go: a step of serialized kernels
	}
	comm := 0.0
	if split > 1 {
		lat := allReduceLatencyPCIe
		if g.LinkGBs > 0 {
			lat = allReduceLatencyNVLink
		}
		comm = 2 * L * (lat + b*d*m.ComputeBytes*2*(n-1)/n/(linkGBs(g)*1e9))
		step += comm
	}
	t := Timing{TokensPerSec: b / step, Bound: bound}
	// A step without its collectives is its reads, its math or its kernels' floor,
	// whichever is longest (serve.go overlaps the prompts' math with it).
	t.serve = serveParts{stepMem: step - comm, stepComp: tComp, stepComm: comm, batch: b, continuous: engine != EngineHF}

	// Prefill is compute-bound: 2·N_active per prompt token plus causal attention over
	// the prompt (4·L·d·p/2 per token on average), and the weights are read once.
	p := prompt
	if p <= 0 {
		p = math.Max(m.SeqLen, 1)
	}
	pfMath := p * (2*m.ActiveParams*linScale + 2*L*d*p) / split / (peak * eff)
	pf := pfMath + m.DenseWeightBytes/split/bw
	t.PrefillTokensPerSec = p / pf
	t.serve.promptComp = pfMath * math.Max(prompt, 0) / p
	t.TTFTSec = step // no prompt: the first token is one decode step
	if prompt > 0 {
		t.TTFTSec = pf // the prompt pass yields the first token's logits
	}
	return t
}
