package fit

import (
	"math"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// Engine is the inference stack that serves the model (--engine). Each one budgets GPU
// memory its own way; the defaults below are each engine's documented ones at the named
// version, and a pick must fit the engine's budget, not just the sum of its tensors.
type Engine string

// Engine values (--engine).
const (
	EngineVLLM     Engine = "vllm"
	EngineSGLang   Engine = "sglang"
	EngineTRTLLM   Engine = "trt-llm"
	EngineLlamaCpp Engine = "llama.cpp"
	// EngineHF is transformers' generate(): what the memory calibration measured, and
	// estimate's default.
	EngineHF Engine = "hf"
	// DefaultServeEngine is recommend's default: a serving pick is sized as vLLM runs it.
	DefaultServeEngine = EngineVLLM
)

// Engines are the --engine values in the CONTRACT's order.
var Engines = []Engine{EngineVLLM, EngineSGLang, EngineTRTLLM, EngineLlamaCpp, EngineHF}

// EngineSpec is an engine's documented defaults that size its memory.
type EngineSpec struct {
	Name    Engine
	Version string // the version whose defaults these are
	// Fraction is the share of the GPU the engine budgets: vLLM's gpu_memory_utilization
	// (of the total, for everything it allocates), SGLang's mem_fraction_static (of the
	// total, for weights and the KV pool), TensorRT-LLM's kv_cache free_gpu_memory_fraction
	// (of what is free after the weights and activations, for the KV pool). 0: the
	// engine allocates exactly what it needs (llama.cpp, transformers).
	Fraction float64
	// MaxBatchedTokens is the most tokens one step computes (chunked prefill), which sets
	// the activation peak: vLLM max_num_batched_tokens, SGLang chunked_prefill_size,
	// TensorRT-LLM max_num_tokens, llama.cpp n_ubatch. 0: every prompt token at once (hf).
	MaxBatchedTokens int
	// LogitRows is the positions whose logits a step computes at most (vLLM's sampler
	// profile runs max_num_seqs rows); 0 = the batch.
	LogitRows int
	// ContextDefault is the context the engine reserves when none is given; 0 = the
	// model's own (max_position_embeddings).
	ContextDefault int
	// OneFullSequence: the engine refuses to start unless the KV pool holds one
	// max_model_len sequence (vLLM); the others start and cap requests at the pool.
	OneFullSequence bool
	// CUDAGraphs: the engine captures decode CUDA graphs at start-up (graph pool memory).
	CUDAGraphs bool
	// ContextShift: a sequence that outgrows the context keeps running (llama.cpp keeps
	// the prompt's first n_keep tokens and discards half of the rest), so a context
	// below prompt + output is a valid job; the others refuse such a request.
	ContextShift bool
	// Split is how the engine divides a model over several GPUs by default.
	Split  Split
	Source string
}

// Engine defaults, each from the engine's source or documentation at the named version.
const (
	// vLLM 0.11.0, vllm/engine/arg_utils.py EngineArgs: gpu_memory_utilization=0.9;
	// max_model_len=None (the model's max_position_embeddings); V1's default batch sizes
	// (EngineArgs._set_default_args / get_batch_defaults) for `vllm serve`
	// (UsageContext.OPENAI_API_SERVER): max_num_batched_tokens 8192 and max_num_seqs 1024
	// on a GPU of 70 GiB or more whose name is not A100 ("For GPUs like H100 and MI300x,
	// use larger default values"; vLLM PR #17885), 2048 and 256 elsewhere. The memory
	// rule takes the larger step (8192 tokens, logits for 1024 sampled rows: the V1
	// profile run's _dummy_sampler_run) whatever the GPU; the launch line names
	// --max-num-seqs when the batch is over the smaller default.
	// vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory raises "To serve at
	// least one request with the model's max seq len ... estimated maximum model length
	// is N" when the pool cannot hold one max_model_len sequence.
	vllmFraction         = 0.9
	vllmMaxBatchedTokens = 8192
	vllmMaxNumSeqs       = 1024
	vllmMaxNumSeqsSmall  = 256
	// SGLang 0.4.6, python/sglang/srt/server_args.py ServerArgs.__post_init__:
	// mem_fraction_static 0.79 at tp >= 16, 0.81 at tp >= 8, 0.85 at tp >= 4, 0.87 at
	// tp >= 2, else 0.88 (sglangFraction); chunked_prefill_size 8192, 2048 on a GPU
	// under 25,000 MB; cuda_graph_max_bs 160 (8 or 80 under 25,000 MB).
	sglangMaxBatchedTokens = 8192
	// TensorRT-LLM 1.0, tensorrt_llm/llmapi/llm_args.py KvCacheConfig
	// free_gpu_memory_fraction: "The fraction of GPU memory fraction that should be
	// allocated for the KV cache. Default is 90%" (of the memory free after the model and
	// activations); BuildConfig max_num_tokens 8192, max_seq_len = the model's
	// max_position_embeddings.
	trtFraction         = 0.9
	trtMaxBatchedTokens = 8192
	// llama.cpp (b6000), common/common.h common_params: n_ctx = 4096, n_ubatch = 512,
	// split_mode = LLAMA_SPLIT_MODE_LAYER; the KV cache is f16 (cache_type_k/v "f16")
	// and ggml's activations are f32; ctx_shift = true ("context shift on infinite text
	// generation"; later builds turn it off by default, so the launch line asks for it).
	llamaCppContext = 4096
	llamaCppUBatch  = 512
	// ncclBufferBytes: NCCL keeps NCCL_BUFFSIZE (4 MiB, NCCL docs "Environment
	// Variables") per channel for each ring neighbour (send and receive) and again for
	// the tree, over up to 32 channels on NVLink: 32 x 2 x 4 MiB x 2 = 512 MiB per GPU
	// at tensor parallel >= 2 (vLLM's custom all-reduce adds 8 MiB of IPC buffers).
	ncclBufferBytes = 512 << 20
	// cudaGraphBytes: vLLM captures decode graphs for batch sizes up to 512
	// (compilation_config.cudagraph_capture_sizes), SGLang up to cuda_graph_max_bs 160;
	// vLLM's
	// start-up log reports the pool ("Graph capturing finished ... took 0.45 GiB" on
	// 8B-27B models; vLLM PR #2437: it grows with max_num_seqs): 0.5 GiB, held outside
	// vLLM's utilization budget (captured after the KV pool is allocated).
	cudaGraphBytes = 512 << 20
)

var engineSpecs = map[Engine]EngineSpec{
	EngineVLLM: {Name: EngineVLLM, Version: "0.11.0", Fraction: vllmFraction, MaxBatchedTokens: vllmMaxBatchedTokens, LogitRows: vllmMaxNumSeqs,
		OneFullSequence: true, CUDAGraphs: true, Split: SplitTensor,
		Source: "vllm/engine/arg_utils.py (gpu_memory_utilization 0.9, max_model_len = the model's, max_num_batched_tokens 8192 and max_num_seqs 1024 on 70 GiB+ GPUs other than A100, 2048 and 256 elsewhere); vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory"},
	EngineSGLang: {Name: EngineSGLang, Version: "0.4.6", MaxBatchedTokens: sglangMaxBatchedTokens, CUDAGraphs: true, Split: SplitTensor,
		Source: "python/sglang/srt/server_args.py (mem_fraction_static 0.88/0.87/0.85/0.81/0.79 at tp 1/2/4/8/16, chunked_prefill_size 8192 (2048 under 25,000 MB), context_length = the model's)"},
	EngineTRTLLM: {Name: EngineTRTLLM, Version: "1.0", Fraction: trtFraction, MaxBatchedTokens: trtMaxBatchedTokens, CUDAGraphs: true, Split: SplitTensor,
		Source: "tensorrt_llm/llmapi/llm_args.py KvCacheConfig (free_gpu_memory_fraction: \"Default is 90%\" of the free memory), BuildConfig (max_num_tokens 8192, max_seq_len = the model's)"},
	EngineLlamaCpp: {Name: EngineLlamaCpp, Version: "b6000", MaxBatchedTokens: llamaCppUBatch, ContextDefault: llamaCppContext, Split: SplitLayer, ContextShift: true,
		Source: "common/common.h common_params (n_ctx 4096, n_ubatch 512, split_mode LLAMA_SPLIT_MODE_LAYER, f16 KV cache, ctx_shift true)"},
	EngineHF: {Name: EngineHF, Version: "transformers 4.57", Split: SplitTensor,
		Source: "GenerationMixin.generate: the whole prompt in one forward pass, logits of the last position"},
}

// Spec returns the engine's defaults.
func (e Engine) Spec() EngineSpec { return engineSpecs[e] }

// Paged reports whether the engine keeps a paged KV pool under a memory budget and
// prefills in chunks (vLLM, SGLang, TensorRT-LLM).
func (e Engine) Paged() bool { return e == EngineVLLM || e == EngineSGLang || e == EngineTRTLLM }

// sglangFraction is SGLang's default mem_fraction_static for a tensor-parallel size.
func sglangFraction(tp int) float64 {
	switch {
	case tp >= 16:
		return 0.79
	case tp >= 8:
		return 0.81
	case tp >= 4:
		return 0.85
	case tp >= 2:
		return 0.87
	}
	return 0.88
}

// Serving is how the engine runs the job on each GPU: its budget, its KV pool and the
// command that starts it, from the same numbers (Result.Serving; CONTRACT "serving").
type Serving struct {
	Engine  Engine `json:"engine"`
	Version string `json:"version"`
	// Parallel is the GPUs one replica spans: the tensor-parallel size, or the layer
	// split's (pipeline) size when Split is layer.
	Parallel int   `json:"parallel"`
	Split    Split `json:"split,omitempty"`
	// MemoryFraction is the engine's budget share (gpu_memory_utilization,
	// mem_fraction_static, free_gpu_memory_fraction); 0 when it has none.
	MemoryFraction float64 `json:"memory_fraction,omitempty"`
	// MaxModelLen is the context the engine reserves for one sequence (vLLM
	// --max-model-len, SGLang --context-length, TensorRT-LLM --max_seq_len, llama.cpp
	// -c); MaxModelLenDefault says it is the engine's default.
	MaxModelLen        int  `json:"max_model_len"`
	MaxModelLenDefault bool `json:"max_model_len_default"`
	MaxBatchedTokens   int  `json:"max_num_batched_tokens,omitempty"`
	// KVTokens is what the KV pool must hold: the asked concurrency x (prompt + output),
	// and for vLLM at least one MaxModelLen sequence.
	KVTokens int `json:"kv_tokens"`
	// BudgetGiB is what the engine's fraction must cover per GPU (vLLM: context,
	// weights, activation peak, NCCL and the KV pool; SGLang: weights and the KV pool;
	// TensorRT-LLM: the KV pool); DeviceTotalGiB in the Result is BudgetGiB over the
	// fraction, or the plain sum where an engine has no fraction.
	BudgetGiB      float64 `json:"budget_gib"`
	ActivationsGiB float64 `json:"activation_peak_gib"`
	NCCLGiB        float64 `json:"nccl_gib,omitempty"`
	CUDAGraphsGiB  float64 `json:"cuda_graphs_gib,omitempty"`
	Launch         string  `json:"launch,omitempty"`
	Source         string  `json:"source"`

	// The device total as a function of the KV tokens, for the recommender's "the
	// default max_model_len does not fit but N does": total(t) = max(fixed + perTok*t,
	// floor + perTokFloor*t) bytes per GPU.
	fixed, perTok, floor, perTokFloor float64
	workload                          int // Batch x SeqLen: the tokens the workload itself holds
	seq                               int // SeqLen: the shortest context that serves it
	job                               Job
	hfid, name                        string
	ckpt                              bool // the repository stores the weights quantized
}

// TotalAt is the device memory per GPU (GiB) the engine needs with a KV pool of tokens.
func (s *Serving) TotalAt(tokens int) float64 {
	t := float64(tokens)
	return math.Max(s.fixed+s.perTok*t, s.floor+s.perTokFloor*t) / GiB
}

// LongestFitting returns the longest max_model_len (a multiple of vLLM's 16-token block)
// whose engine total fits in avail GiB per GPU and still serves the workload, and whether
// there is one. Only an engine that must hold one full sequence (vLLM) has a choice here.
func (s *Serving) LongestFitting(avail float64) (int, bool) {
	if !s.Engine.Spec().OneFullSequence || !s.MaxModelLenDefault || s.perTok <= 0 {
		return 0, false
	}
	if s.TotalAt(s.workload) > avail {
		return 0, false // the workload's own tokens do not fit
	}
	a := avail * GiB
	l := math.Min((a-s.fixed)/s.perTok, (a-s.floor)/s.perTokFloor)
	n := int(l) / 16 * 16
	n = min(n, s.MaxModelLen)
	if n < s.seq || n < 16 {
		return 0, false
	}
	return n, true
}

// WithMaxModelLen returns the serving plan with a shorter max_model_len (LongestFitting),
// its KV pool, budget and launch line redone.
func (s Serving) WithMaxModelLen(n int) Serving {
	s.MaxModelLen, s.MaxModelLenDefault = n, false
	s.KVTokens = max(s.workload, n)
	s.BudgetGiB = Round3((s.fixed + s.perTok*float64(s.KVTokens)) * s.MemoryFraction / GiB)
	s.Launch = launchLine(&s)
	return s
}

// resolveEngine defaults --engine and checks the serving flags against the task (a resolve
// step, before resolveSplit: llama.cpp's default split is the layer split).
func resolveEngine(m *model.Model, r *resolved) error {
	serving := !r.IsTraining() && m.Kind != model.KindDiffusion
	switch {
	case !serving && r.Engine != "":
		return invalid("engine", "--engine %s applies to language-model inference, not --task %s", r.Engine, r.Task)
	case !serving && (r.PromptTokens > 0 || r.OutputTokens > 0):
		return invalid("prompt-tokens", "--prompt-tokens/--output-tokens describe an inference workload, not --task %s", r.Task)
	case !serving && r.GPUMemoryUtilization > 0:
		return invalid("gpu-memory-utilization", "--gpu-memory-utilization applies to inference engines, not --task %s", r.Task)
	case !serving && r.MaxModelLen > 0:
		return invalid("max-model-len", "--max-model-len applies to inference engines, not --task %s", r.Task)
	}
	if !serving {
		return nil
	}
	if r.Engine == "" {
		r.Engine = EngineHF
	}
	lm := m.Kind == model.KindCausalLM || m.Kind == model.KindParams
	switch {
	case !lm && r.Engine != EngineHF:
		return invalid("engine", "--engine %s serves decoder-only language models; %s is %s: use --engine hf", r.Engine, m.Name, m.Kind)
	case r.GPUMemoryUtilization > 0 && r.Engine != EngineVLLM && r.Engine != EngineSGLang && r.Engine != EngineTRTLLM:
		return invalid("gpu-memory-utilization", "--gpu-memory-utilization %g: %s has no memory fraction (vllm, sglang and trt-llm do)", r.GPUMemoryUtilization, r.Engine)
	case r.MaxModelLen > 0 && r.Engine == EngineHF:
		return invalid("max-model-len", "--max-model-len: transformers generate reserves no context; it applies to vllm, sglang, trt-llm and llama.cpp (its -c)")
	case r.Engine == EngineLlamaCpp && r.KVCacheDtype == "fp8":
		return invalid("kv-cache-dtype", "--kv-cache-dtype fp8 with --engine llama.cpp: llama.cpp has no fp8 KV cache (its -ctk q8_0 is not modelled)")
	case r.Engine == EngineLlamaCpp && (r.Quant == "fp8" || r.Quant == "mxfp4" || r.Quant == "nf4" || r.Quant == "fp4"):
		return invalid("quant", "--quant %s with --engine llama.cpp: llama.cpp runs GGUF weights (F16, Q8_0 = --quant int8, Q4_0 = --quant int4)", r.Quant)
	case r.Engine == EngineTRTLLM && (r.Quant == "nf4" || r.Quant == "fp4"):
		return invalid("quant", "--quant %s with --engine trt-llm: TensorRT-LLM has no bitsandbytes weights (int4 AWQ, int8 and fp8 are its formats)", r.Quant)
	}
	return nil
}

// resolveWorkload checks the workload's lengths and the engine's context (a resolve step,
// after resolveLength has defaulted the sequence).
func resolveWorkload(m *model.Model, r *resolved) error {
	if r.MaxModelLen > 0 && r.MaxModelLen < r.SeqLen {
		return invalid("max-model-len", "--max-model-len %d is below the %d tokens each sequence holds (--seq-len, or --prompt-tokens + --output-tokens)", r.MaxModelLen, r.SeqLen)
	}
	return nil
}

// workloadSeqLen is resolveLength's rule for a serving workload: a sequence holds its
// prompt and its whole output, so --seq-len defaults to their sum and may not be less,
// unless the engine shifts the context (llama.cpp), where --seq-len is its -c.
func workloadSeqLen(r *resolved) error {
	w := r.PromptTokens + r.OutputTokens
	if w == 0 {
		return nil
	}
	if r.SeqLen == 0 {
		r.SeqLen = w
		return nil
	}
	if r.SeqLen < w && r.Engine.Spec().ContextShift {
		r.addNote(string(r.Engine) + " takes --seq-len " + itoa(r.SeqLen) + " below --prompt-tokens " + itoa(r.PromptTokens) + " + --output-tokens " + itoa(r.OutputTokens) + " = " + itoa(w) + ": its context is -c (--max-model-len), and a sequence that outgrows it shifts (keeps the prompt's first tokens, discards half of the rest) instead of failing")
		return nil
	}
	if r.SeqLen < w {
		return invalid("seq-len", "--seq-len %d is below --prompt-tokens %d + --output-tokens %d = %d: a sequence holds its prompt and its output; drop --seq-len or give at least %d",
			r.SeqLen, r.PromptTokens, r.OutputTokens, w, w)
	}
	return nil
}

// estimateServing sizes an engine-served job per GPU from the pieces estimateInference
// computed: the weights and the KV cache per token as split across the GPUs, and the
// engine's step (its chunk of tokens, its logits). It returns the breakdown, the device
// total in bytes and the serving plan.
func estimateServing(m *model.Model, r *resolved, weights, kvShare, wsShare, load float64) (Breakdown, float64, *Serving) {
	spec := r.Engine.Spec()
	g := r.GPUs
	tp := r.Split == SplitTensor && g > 1
	s := &Serving{Engine: r.Engine, Version: spec.Version, Parallel: g, Split: r.Split, MaxBatchedTokens: spec.MaxBatchedTokens,
		Source: spec.Source, workload: r.Batch * r.SeqLen, seq: r.SeqLen, job: r.Job, hfid: m.HFID, name: m.Name, ckpt: m.Ckpt != nil}
	if s.Parallel <= 1 {
		s.Parallel, s.Split = 1, ""
	}
	// The context the engine reserves for one sequence.
	def := spec.ContextDefault
	if def == 0 || (m.MaxPos > 0 && int64(def) > m.MaxPos) {
		def = int(m.MaxPos)
	}
	if def <= 0 {
		def = r.SeqLen
	}
	s.MaxModelLen, s.MaxModelLenDefault = r.MaxModelLen, r.MaxModelLen == 0
	if s.MaxModelLenDefault {
		s.MaxModelLen = max(def, r.SeqLen)
	}
	kvTokens := s.workload
	switch {
	case spec.OneFullSequence:
		kvTokens = max(kvTokens, s.MaxModelLen)
	case r.Engine == EngineLlamaCpp:
		// llama-server -c is the whole cache, shared by its -np slots: each of the
		// batch's sequences needs its own seq-len of it.
		if s.MaxModelLenDefault {
			s.MaxModelLen = max(s.MaxModelLen, s.workload)
		}
		kvTokens = max(s.MaxModelLen, s.workload)
	}
	s.KVTokens = kvTokens
	// KV bytes per token per GPU, from the batch's own cache as split (window-capped
	// layers make it depend on the length: the workload's ratio is used for the pool).
	perTok := kvShare / math.Max(1, float64(s.workload))
	kv := perTok * float64(kvTokens)

	// The step's activation peak: one chunk of MaxBatchedTokens (chunked prefill), and
	// logits only for the positions sampled (LogitRows, else the batch), in fp32. ggml
	// computes in f32.
	chunk := float64(min(spec.MaxBatchedTokens, max(s.workload, spec.MaxBatchedTokens)))
	actB := r.b
	if r.Engine == EngineLlamaCpp {
		actB = 4
	}
	rows := float64(r.Batch)
	if spec.LogitRows > 0 {
		rows = float64(max(spec.LogitRows, r.Batch))
	}
	act := chunk*wsShare*actB + rows*float64(m.Vocab)*(r.b+4)
	if tp {
		act /= float64(g) // each GPU computes its slice of the step
	}
	act = math.Max(act, load) // loading copies the largest tensor once
	nccl := 0.0
	if g > 1 && r.Engine != EngineLlamaCpp {
		nccl = ncclBufferBytes
	}
	graphs := 0.0
	if spec.CUDAGraphs {
		graphs = cudaGraphBytes
	}
	ctx := CUDAContextGiB * GiB
	var bd Breakdown
	bd.Weights, bd.KVCache, bd.Workspace = weights, kv, act+nccl+graphs
	s.ActivationsGiB, s.NCCLGiB, s.CUDAGraphsGiB = Round3(act/GiB), Round3(nccl/GiB), Round3(graphs/GiB)

	frac := r.GPUMemoryUtilization
	switch r.Engine {
	case EngineVLLM:
		if frac == 0 {
			frac = vllmFraction
		}
		// Everything vLLM allocates, the KV pool last, within utilization x total; the
		// CUDA graphs are captured afterwards, in what is left.
		in := ctx + weights + act + nccl
		s.fixed, s.perTok = in/frac, perTok/frac
		s.floor, s.perTokFloor = in+graphs, perTok
		s.BudgetGiB = Round3((in + kv) / GiB)
	case EngineSGLang:
		if frac == 0 {
			frac = sglangFraction(g)
		}
		// mem_fraction_static covers the weights and the KV pool; activations, graphs and
		// NCCL live in the rest.
		s.fixed, s.perTok = weights/frac, perTok/frac
		s.floor, s.perTokFloor = weights+ctx+act+nccl+graphs, perTok
		s.BudgetGiB = Round3((weights + kv) / GiB)
	case EngineTRTLLM:
		if frac == 0 {
			frac = trtFraction
		}
		// The KV pool is free_gpu_memory_fraction of what is free after everything else.
		s.fixed, s.perTok = ctx+weights+act+nccl+graphs, perTok/frac
		s.floor, s.perTokFloor = s.fixed, s.perTok
		s.BudgetGiB = Round3(kv / GiB)
	default: // llama.cpp: exactly what it allocates
		s.fixed, s.perTok = ctx+weights+act+nccl+graphs, perTok
		s.floor, s.perTokFloor = s.fixed, s.perTok
		s.BudgetGiB = Round3((weights + kv + act) / GiB)
	}
	s.MemoryFraction = frac
	s.Launch = launchLine(s)
	total := s.TotalAt(kvTokens) * GiB
	return bd, total, s
}

// appendServingNotes appends how the engine's budget was modelled (concatenated, not
// fmt: Estimate's hot path, format.go).
func appendServingNotes(out []string, s *Serving) []string {
	spec := s.Engine.Spec()
	ctx := "the engine's default"
	if !s.MaxModelLenDefault {
		ctx = "--max-model-len"
	}
	switch s.Engine {
	case EngineVLLM:
		out = append(out, "vLLM "+spec.Version+": gpu_memory_utilization "+fixed(s.MemoryFraction, 2)+" of the GPU must hold the CUDA context, the weights, a "+itoa(spec.MaxBatchedTokens)+"-token chunked-prefill step (logits for "+itoa(max(spec.LogitRows, s.job.Batch))+" sampled rows), NCCL buffers at tensor parallel >= 2 and a KV pool of at least one max_model_len "+itoa(s.MaxModelLen)+" sequence ("+ctx+") and the batch's "+itoa(s.workload)+" tokens; device_total is that budget over "+fixed(s.MemoryFraction, 2))
	case EngineSGLang:
		out = append(out, "SGLang "+spec.Version+": mem_fraction_static "+fixed(s.MemoryFraction, 2)+" of the GPU must hold the weights and a KV pool of the batch's "+itoa(s.workload)+" tokens; activations of a "+itoa(spec.MaxBatchedTokens)+"-token chunk, CUDA graphs and NCCL live in the rest")
	case EngineTRTLLM:
		out = append(out, "TensorRT-LLM "+spec.Version+": the KV pool (the batch's "+itoa(s.workload)+" tokens) is free_gpu_memory_fraction "+fixed(s.MemoryFraction, 2)+" of the memory left after the weights, a "+itoa(spec.MaxBatchedTokens)+"-token step, CUDA graphs and NCCL")
	case EngineLlamaCpp:
		out = append(out, "llama.cpp "+spec.Version+": a "+itoa(s.MaxModelLen)+"-token f16 KV cache (-c, "+ctx+"; shared by the -np "+itoa(s.job.Batch)+" slots), a "+itoa(spec.MaxBatchedTokens)+"-token f32 compute buffer; "+splitWord(s))
	}
	return out
}

func splitWord(s *Serving) string {
	if s.Parallel > 1 && s.Split == SplitTensor {
		return "--split-mode row (tensor split)"
	}
	return "--split-mode layer (each GPU holds whole layers)"
}

// launchLine is the command that starts the engine as the estimate sized it.
func launchLine(s *Serving) string {
	j := s.job
	id := s.hfid
	if id == "" {
		id = s.name
	}
	a := make([]string, 0, 24) // every engine's longest line fits: no regrowth
	add := func(parts ...string) { a = append(a, parts...) }
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	fp8Weights := j.Quant == "fp8"
	switch s.Engine {
	case EngineVLLM:
		add("vllm", "serve", id)
		if s.Split == SplitLayer {
			add("--pipeline-parallel-size", strconv.Itoa(s.Parallel))
		} else if s.Parallel > 1 {
			add("--tensor-parallel-size", strconv.Itoa(s.Parallel))
		}
		add("--max-model-len", strconv.Itoa(s.MaxModelLen), "--gpu-memory-utilization", num(s.MemoryFraction))
		if j.Batch > vllmMaxNumSeqsSmall {
			add("--max-num-seqs", strconv.Itoa(j.Batch))
		}
		if j.KVCacheDtype == "fp8" {
			add("--kv-cache-dtype", "fp8")
		}
		if fp8Weights && !s.prequantized() {
			add("--quantization", "fp8")
		}
		if (j.Quant == "nf4" || j.Quant == "fp4") && !s.prequantized() {
			add("--quantization", "bitsandbytes")
		}
	case EngineSGLang:
		add("python", "-m", "sglang.launch_server", "--model-path", id)
		if s.Split == SplitLayer {
			add("--pp-size", strconv.Itoa(s.Parallel))
		} else if s.Parallel > 1 {
			add("--tp", strconv.Itoa(s.Parallel))
		}
		add("--context-length", strconv.Itoa(s.MaxModelLen), "--mem-fraction-static", num(s.MemoryFraction))
		if j.KVCacheDtype == "fp8" {
			add("--kv-cache-dtype", "fp8_e4m3")
		}
		if fp8Weights && !s.prequantized() {
			add("--quantization", "fp8")
		}
	case EngineTRTLLM:
		add("trtllm-serve", id)
		if s.Split == SplitLayer {
			add("--pp_size", strconv.Itoa(s.Parallel))
		} else if s.Parallel > 1 {
			add("--tp_size", strconv.Itoa(s.Parallel))
		}
		add("--max_seq_len", strconv.Itoa(s.MaxModelLen), "--kv_cache_free_gpu_memory_fraction", num(s.MemoryFraction), "--max_batch_size", strconv.Itoa(max(j.Batch, 1)))
	case EngineLlamaCpp:
		add("llama-server", "-m", ggufName(s), "-ngl", "999", "-c", strconv.Itoa(s.MaxModelLen), "-np", strconv.Itoa(max(j.Batch, 1)))
		if s.Parallel > 1 {
			mode := "layer"
			if s.Split == SplitTensor {
				mode = "row"
			}
			add("--split-mode", mode)
		}
		if j.PromptTokens+j.OutputTokens > s.MaxModelLen/max(j.Batch, 1) {
			add("--context-shift") // a slot's sequence outgrows its share of -c: shift, not fail
		}
	default:
		return ""
	}
	return strings.Join(a, " ")
}

func (s *Serving) prequantized() bool { return s.job.Quant.Quantized() && s.ckpt }

// ggufName is the GGUF file llama.cpp loads for the job's weights.
func ggufName(s *Serving) string {
	t := "F16"
	switch s.job.Quant {
	case "int8":
		t = "Q8_0"
	case "int4":
		t = "Q4_0"
	}
	return s.name + "-" + t + ".gguf"
}

// ParseEngine accepts an --engine value ("" = the default of the command).
func ParseEngine(v string) (Engine, error) {
	e, err := parseEnum("engine", v, Engines)
	if err != nil {
		return "", pricing.WithParam(err, "engine")
	}
	return e, nil
}

// CheckpointBytes is the repository's stored size, what start-up downloads: a
// pre-quantized checkpoint as it stores its layers (fp8 1 byte, MXFP4 and AWQ/GPTQ int4
// with their scales), else 16-bit weights (quantization on load starts from them).
func CheckpointBytes(m *model.Model) float64 {
	if m.Ckpt != nil {
		return m.Ckpt.WeightBytes(m, 2)
	}
	return 2 * float64(m.Params())
}
