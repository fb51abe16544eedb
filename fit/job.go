package fit

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// The job's enumerated knobs are named string types: the JSON and CSV outputs print them
// as they are, the parser accepts only the listed values, and the methods answer the
// questions the estimator asks ("is it quantized?", "is it sharded?") in one place, so
// no caller compares with "" or "none".
type (
	Task      string // --task
	Precision string // --precision
	Quant     string // --quant
	Optimizer string // --optimizer
	Attention string // --attention
	Shard     string // --shard
	Offload   string // --offload
	// OptimizerStep is how torch.optim runs the step (--optimizer-step).
	OptimizerStep string
	// Loss is how the language-model loss is computed (--loss).
	Loss string
	// Norm is how the layers' norms keep their input for backward (--norm).
	Norm string
	// Allocator is the PyTorch CUDA caching allocator's segment mode (--allocator,
	// allocator.go).
	Allocator string
	// KVCacheDtype is --kv-cache-dtype (fp8.go).
	KVCacheDtype string
	Framework    string // --framework
	// Split is how inference on several GPUs divides the model (--split).
	Split string
)

// Task values (CONTRACT --task).
const (
	TaskInference Task = "inference"
	TaskFullFT    Task = "full-ft"
	TaskLoRA      Task = "lora"
	TaskQLoRA     Task = "qlora"
	TaskImageGen  Task = "image-gen"
)

// The "nothing" value of the knobs that have one; "" means the same (the default).
const (
	QuantNone   Quant   = "none"
	ShardNone   Shard   = "none"
	OffloadNone Offload = "none"
)

// Allowed values of the enumerated job flags, in the CONTRACT's order.
var (
	Tasks      = []Task{TaskInference, TaskFullFT, TaskLoRA, TaskQLoRA, TaskImageGen}
	Precisions = []Precision{"fp32", "fp16", "bf16", "fp16-mixed", "bf16-mixed", "fp8-mixed"}
	Quants     = []Quant{QuantNone, "int8", "nf4", "fp4", "int4", "fp8"}
	Optimizers = []Optimizer{"adamw", "adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd", "sgd-momentum"}
	Attentions = []Attention{"eager", "sdpa", "flash"}
	Shards     = []Shard{ShardNone, "zero1", "zero2", "zero3", "fsdp", "hsdp", "tp"}
	Offloads   = []Offload{OffloadNone, "optimizer", "optimizer+params", OffloadModel}
	// OptimizerSteps: torch.optim's implementations (foreach is its CUDA default).
	OptimizerSteps = []OptimizerStep{"foreach", "fused", "for-loop"}
	// Losses: the full-vocabulary cross-entropy; LitGPT/torchtune's chunked head and loss
	// (no fp32 copy of the logits); Liger's fused linear cross-entropy (one chunk's logits
	// at a time).
	Losses = []Loss{"standard", "chunked", "fused-linear"}
	// Norms: the framework's RMSNorm/LayerNorm, which upcasts and keeps an fp32 copy of its
	// input (transformers LlamaRMSNorm, T5LayerNorm; LitGPT and torchtune alike), or a fused
	// norm kernel that keeps its 16-bit input and the row statistics (Liger LigerRMSNorm,
	// Apex FusedRMSNorm, torchtitan norm_type = "fused_rmsnorm").
	Norms = []Norm{"standard", "fused"}
	// Allocators: PyTorch's CUDA caching allocator with fixed segments (default) or with
	// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch >= 2.1; allocator.go).
	Allocators = []Allocator{"default", "expandable"}
	// KVCacheDtypes are vLLM's --kv-cache-dtype names: auto = the compute dtype (fp8.go).
	KVCacheDtypes = []KVCacheDtype{"auto", "fp8"}
	Frameworks    = []Framework{FrameworkHF, FrameworkLitGPT, FrameworkTorchtune}
	// Splits: tensor parallel (vLLM, SGLang, TensorRT-LLM: every GPU holds a slice of
	// every layer and they work at once) or a layer split (llama.cpp's default
	// --split-mode layer, and pipeline stages: each GPU holds whole layers, and for one
	// stream the GPUs take turns).
	Splits = []Split{SplitTensor, SplitLayer}
)

// Split values (--split).
const (
	SplitTensor Split = "tensor"
	SplitLayer  Split = "layer"
)

// OffloadModel is diffusers' enable_model_cpu_offload: an image pipeline's components
// wait in host memory and move to the GPU one at a time.
const OffloadModel Offload = "model"

// Mixed reports whether the precision is automatic mixed precision (fp16-mixed, bf16-mixed).
func (p Precision) Mixed() bool { return strings.HasSuffix(string(p), "-mixed") }

// Quantized reports whether the weights are quantized (anything but none or the default).
func (q Quant) Quantized() bool { return q != "" && q != QuantNone }

// FourBit reports whether the quantization is 4-bit (nf4, fp4, int4).
func (q Quant) FourBit() bool { return q == "nf4" || q == "fp4" || q == "int4" }

// Sharded reports whether training states or weights are divided across GPUs.
func (s Shard) Sharded() bool { return s != "" && s != ShardNone }

// Enabled reports whether states are offloaded to host memory.
func (o Offload) Enabled() bool { return o != "" && o != OffloadNone }

// Job is one training or inference job, as the CONTRACT's job flags describe it, and,
// once Estimate has resolved it (Result.Job), the same job with every default filled: one
// type, whose JSON is the CONTRACT's "job" object. It is a plain value: copy it, change a
// field and call Estimate again (the recommender does so for every GPU count and every
// step of its savings ladder). Empty strings, nil and zero numbers mean "the CONTRACT
// default"; Estimate resolves them against the model (seq-len and resolution depend on it).
type Job struct {
	Task        Task      `json:"task"`         // Tasks; "" = inference
	Precision   Precision `json:"precision"`    // Precisions; "" = bf16 for inference/image-gen, bf16-mixed for training
	Quant       Quant     `json:"quant"`        // Quants; "" = none, or nf4 for qlora
	DoubleQuant bool      `json:"double_quant"` //
	Optimizer   Optimizer `json:"optimizer"`    // Optimizers; "" = adamw
	Batch       int       `json:"batch"`        // micro-batch per GPU; 0 = 1
	// GradAccum is micro-batches per optimizer step (gradient_accumulation_steps); 0 = the
	// framework's (hf 1, litgpt ceil(16/batch), torchtune LoRA/QLoRA 8, else 1). Resolved:
	// set for training, 0 otherwise. Above 1 the gradients outlive each micro-batch (the
	// memory peak holds them beside the next forward's activations) and the optimizer
	// step is paid once per GradAccum micro-batches (jobtime).
	GradAccum int `json:"grad_accum,omitempty"`
	SeqLen    int `json:"seq_len"` // tokens per sample; 0 = 2048 for LLMs (capped at the model's context), 512 for BERT
	// TargetTokens is an encoder–decoder job's target (decoder) length; 0 = SeqLen.
	// Resolved: set for encoder–decoder models, 0 otherwise (stack.go).
	TargetTokens int       `json:"target_tokens,omitempty"`
	GradCkpt     bool      `json:"grad_ckpt"` //
	Attention    Attention `json:"attention"` // Attentions; "" = sdpa
	LoRARank     int       `json:"lora_r"`    // 0 = 8
	// LoRATargets are module names, or just "all-linear"; nil = the architecture's default
	// (PEFT's). Resolved: the adapted modules ([] when the task is not LoRA).
	LoRATargets []string   `json:"lora_targets"`
	GPUs        int        `json:"gpus"`       // 0 = 1
	Shard       Shard      `json:"shard"`      // Shards; "" = none for training, tp for inference on more than one GPU
	Offload     Offload    `json:"offload"`    // Offloads; "" = none
	Resolution  Resolution `json:"resolution"` // image-gen; zero = the pipeline's default
	Images      int        `json:"images"`     // images per batch; 0 = 1
	// KVCacheDtype is KVCacheDtypes; "" = auto (the compute dtype).
	KVCacheDtype KVCacheDtype `json:"kv_cache_dtype"`
	// Nodes is how many identical instances the job spans (nodes.go); 0 = one. GPUs is
	// then per node. NodesAuto (--nodes auto) asks the recommender for the fewest that fit.
	Nodes     int  `json:"nodes"`
	NodesAuto bool `json:"-"`
	// Split is Splits for inference on more than one GPU; "" = tensor. Resolved: set
	// only for inference split across GPUs.
	Split Split `json:"split,omitempty"`
	// Framework is the training/inference stack whose defaults fill what the job leaves
	// unset (framework.go); "" = hf.
	Framework Framework `json:"framework"`
	// LoRADropout is LoraConfig.lora_dropout; nil = the framework's default. Resolved: set.
	LoRADropout *float64 `json:"lora_dropout,omitempty"`

	// gradCkptSet and doubleQuantSet record that the switch was given (true or false), so a
	// framework default (QLoRA's checkpointing, torchtune's NF4 scalers) does not override
	// an explicit false.
	gradCkptSet, doubleQuantSet bool
	// OptimizerStep: OptimizerSteps; "" = the framework's (fused for torchtune's AdamW
	// recipes, else foreach, torch.optim's default on CUDA).
	OptimizerStep OptimizerStep `json:"optimizer_step"`
	// Loss: Losses; "" = the framework's (chunked for litgpt and torchtune, else standard).
	Loss Loss `json:"loss"`
	// Norm: Norms; "" = standard.
	Norm Norm `json:"norm,omitempty"`
	// Allocator: Allocators; "" = default.
	Allocator Allocator `json:"allocator,omitempty"`
	// VAETiling decodes one image at a time in tiles (diffusers enable_vae_slicing and
	// enable_vae_tiling).
	VAETiling bool `json:"vae_tiling"`

	// Serving (engine.go): the engine, the workload's prompt and output tokens per
	// request (they fix --seq-len), and the engine's memory fraction and context.
	// Resolved: Engine is set for language-model inference ("" otherwise).
	Engine               Engine  `json:"engine,omitempty"`
	PromptTokens         int     `json:"prompt_tokens,omitempty"`
	OutputTokens         int     `json:"output_tokens,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	MaxModelLen          int     `json:"max_model_len,omitempty"`
}

// Resolution is an image size in pixels; the zero value means the pipeline's default.
// It is written as "WxH" ("" when zero), as --resolution takes it.
type Resolution struct{ Width, Height int }

// IsZero reports whether no resolution was given.
func (r Resolution) IsZero() bool { return r.Width == 0 || r.Height == 0 }

func (r Resolution) String() string {
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf("%dx%d", r.Width, r.Height)
}

// MarshalText writes the resolution as "WxH" for the JSON output.
func (r Resolution) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// IsTraining reports whether the job computes gradients.
func (j Job) IsTraining() bool {
	return j.Task == TaskFullFT || j.Task == TaskLoRA || j.Task == TaskQLoRA
}

// UsesBF16 reports whether the job needs bfloat16 support (Ampere or newer). A GPU without
// it (T4, V100) can run the job with WithFP16 instead.
func (j Job) UsesBF16() bool {
	p := j.Precision
	if p == "" {
		return true // the default precisions are bf16 and bf16-mixed
	}
	return p == "bf16" || p == "bf16-mixed"
}

// UsesFlashAttention reports whether the job asks for FlashAttention kernels (Ampere or
// newer); sdpa falls back to memory-efficient kernels on older GPUs.
func (j Job) UsesFlashAttention() bool { return j.Attention == "flash" }

// WithFP16 returns the job switched to what a GPU without bf16 or FlashAttention runs:
// bf16 -> fp16, bf16-mixed -> fp16-mixed, flash -> sdpa. Memory is nearly the same; the
// recommender warns that fp16 may need loss scaling.
func (j Job) WithFP16() Job {
	switch j.Precision {
	case "bf16":
		j.Precision = "fp16"
	case "bf16-mixed":
		j.Precision = "fp16-mixed"
	case "":
		j.Precision = "fp16"
		if j.IsTraining() && !(j.Task == TaskLoRA && j.Framework.orHF() == FrameworkHF) {
			j.Precision = "fp16-mixed"
		}
	}
	if j.Attention == "flash" {
		j.Attention = "sdpa"
	}
	return j
}

// JobParam is one job flag: its CONTRACT name (also the query parameter and form field),
// its help text, the default shown in help (Estimate applies the real one, which may
// depend on the task and the model), and how a value sets it on a Job. JobParams is the
// one list: the CLI registers flags from it, the binder reads request parameters through
// it, so a new job flag is one entry here plus its physics in Estimate.
type JobParam struct {
	Name  string
	Usage string
	Shown string // default shown in help; "" shows none
	Bool  bool   // a switch: given bare (--grad-ckpt, ?grad-ckpt) it means true
	// Type names the value in --help ("int", "float", "WxH"); "" is a string (a name
	// from a list). The CLI binds every job flag as text, so that Set parses a flag, a
	// query parameter and a form field alike; Type keeps its help honest.
	Type string
	Set  func(j *Job, v string) error
}

// JobParams are the job flags in the CONTRACT's order. Every Set error is a
// pricing.Invalid error that names the flag, the value and what is allowed.
var JobParams = []JobParam{
	{"task", "inference, full-ft, lora, qlora or image-gen", "inference", false, "",
		func(j *Job, v string) (err error) { j.Task, err = parseEnum("task", v, Tasks); return }},
	{"precision", "fp32, fp16, bf16, fp16-mixed, bf16-mixed or fp8-mixed (default bf16 for inference, bf16-mixed for training)", "", false, "",
		func(j *Job, v string) (err error) { j.Precision, err = parseEnum("precision", v, Precisions); return }},
	{"quant", "weight quantization: none, int8, nf4, fp4, int4 or fp8 (qlora implies nf4; a pre-quantized checkpoint implies its own)", "none", false, "",
		func(j *Job, v string) (err error) { j.Quant, err = parseEnum("quant", v, Quants); return }},
	{"double-quant", "bitsandbytes double quantization of the 4-bit constants", "false", true, "",
		func(j *Job, v string) (err error) {
			j.DoubleQuant, err = boolFlag("double-quant", v)
			j.doubleQuantSet = err == nil
			return
		}},
	{"optimizer", "adamw, adamw-8bit, paged-adamw-8bit, adafactor, sgd or sgd-momentum", "adamw", false, "",
		func(j *Job, v string) (err error) { j.Optimizer, err = parseEnum("optimizer", v, Optimizers); return }},
	{"batch", "micro-batch per GPU", "1", false, "int",
		func(j *Job, v string) (err error) { j.Batch, err = intFlag("batch", v, 1); return }},
	{"grad-accum", "training: micro-batches per optimizer step (gradient accumulation; default: the framework's, hf 1)", "", false, "int",
		func(j *Job, v string) (err error) { j.GradAccum, err = intFlag("grad-accum", v, 1); return }},
	{"seq-len", "tokens per sample; inference: prompt + generated (default 2048 for LLMs)", "", false, "int",
		func(j *Job, v string) (err error) { j.SeqLen, err = intFlag("seq-len", v, 1); return }},
	{"target-tokens", "encoder–decoder (T5, BART): decoder (target) tokens per sample (default: --seq-len)", "", false, "int",
		func(j *Job, v string) (err error) { j.TargetTokens, err = intFlag("target-tokens", v, 1); return }},
	{"grad-ckpt", "gradient (activation) checkpointing (default: the framework's; hf turns it on for qlora, torchtune for all training)", "", true, "",
		func(j *Job, v string) (err error) {
			j.GradCkpt, err = boolFlag("grad-ckpt", v)
			j.gradCkptSet = err == nil
			return
		}},
	{"attention", "eager, sdpa or flash", "sdpa", false, "",
		func(j *Job, v string) (err error) { j.Attention, err = parseEnum("attention", v, Attentions); return }},
	{"lora-r", "LoRA rank", "8", false, "int",
		func(j *Job, v string) (err error) { j.LoRARank, err = intFlag("lora-r", v, 1); return }},
	{"lora-targets", "LoRA target modules, comma list or all-linear (default q_proj,v_proj or the architecture's equivalent)", "", false, "",
		func(j *Job, v string) (err error) { j.LoRATargets, err = targetsFlag(v); return }},
	{"gpus", "GPUs the job runs on (estimate: default 1; recommend: default each offer's GPU count)", "", false, "int",
		func(j *Job, v string) (err error) { j.GPUs, err = intFlag("gpus", v, 1); return }},
	{"shard", "none, zero1, zero2, zero3, fsdp, hsdp (FSDP within a node, replicated across --nodes) or tp (default none for training, tp for inference on >1 GPU)", "", false, "",
		func(j *Job, v string) (err error) { j.Shard, err = parseEnum("shard", v, Shards); return }},
	{"offload", "none, optimizer or optimizer+params (ZeRO-Offload / FSDP CPU offload); model for image generation (diffusers model CPU offload)", "none", false, "",
		func(j *Job, v string) (err error) { j.Offload, err = parseEnum("offload", v, Offloads); return }},
	{"framework", "hf, litgpt or torchtune: whose defaults fill unset flags (see 'assumptions')", "hf", false, "",
		func(j *Job, v string) (err error) { j.Framework, err = parseEnum("framework", v, Frameworks); return }},
	{"lora-dropout", "LoRA dropout probability (default: the framework's; PEFT 0.0, LitGPT 0.05, torchtune 0.0)", "", false, "float",
		func(j *Job, v string) (err error) { j.LoRADropout, err = dropoutFlag(v); return }},
	{"resolution", "image generation: WxH (default: the model's)", "", false, "WxH",
		func(j *Job, v string) (err error) { j.Resolution, err = parseResolution(v); return }},
	{"images", "image generation: images per batch (default 1)", "", false, "int",
		func(j *Job, v string) (err error) { j.Images, err = intFlag("images", v, 1); return }},
	{"kv-cache-dtype", "inference KV cache: auto (the compute dtype) or fp8 (needs an fp8 GPU: Ada, Hopper, Blackwell)", "auto", false, "",
		func(j *Job, v string) (err error) {
			j.KVCacheDtype, err = parseEnum("kv-cache-dtype", v, KVCacheDtypes)
			return
		}},
	{"split", "inference on several GPUs: tensor (tensor parallel: vLLM, SGLang, TensorRT-LLM) or layer (llama.cpp's default --split-mode layer: each GPU holds whole layers, and they take turns)", "tensor", false, "",
		func(j *Job, v string) (err error) { j.Split, err = parseEnum("split", v, Splits); return }},
	{"nodes", "instances the job spans: a number, or auto (recommend: the fewest that fit); needs a cluster interconnect", "", false, "int|auto",
		func(j *Job, v string) (err error) { j.Nodes, j.NodesAuto, err = nodesFlag(v); return }},
	{"optimizer-step", "training: torch.optim step implementation: foreach, fused or for-loop", "foreach", false, "",
		func(j *Job, v string) (err error) {
			j.OptimizerStep, err = parseEnum("optimizer-step", v, OptimizerSteps)
			return
		}},
	{"loss", "training: standard, chunked (LitGPT/torchtune chunked head and loss) or fused-linear (Liger fused linear cross-entropy); default: the framework's", "", false, "",
		func(j *Job, v string) (err error) { j.Loss, err = parseEnum("loss", v, Losses); return }},
	{"norm", "training: standard (the framework's norms keep an fp32 copy of their input) or fused (a fused norm kernel: Liger, Apex, torchtitan's fused_rmsnorm; keeps the 16-bit input)", "", false, "",
		func(j *Job, v string) (err error) { j.Norm, err = parseEnum("norm", v, Norms); return }},
	{"allocator", "PyTorch's CUDA caching allocator: default (fixed segments; activation churn fragments them) or expandable (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, PyTorch >= 2.1: segments grow in place)", "default", false, "",
		func(j *Job, v string) (err error) { j.Allocator, err = parseEnum("allocator", v, Allocators); return }},
	{"vae-tiling", "image generation: decode one image at a time in tiles (diffusers VAE slicing + tiling)", "false", true, "",
		func(j *Job, v string) (err error) { j.VAETiling, err = boolFlag("vae-tiling", v); return }},
	{"engine", "inference engine whose memory budget, kernels, speed and launch line are modelled: vllm, sglang, trt-llm, llama.cpp or hf (estimate: default hf, transformers generate; recommend: default vllm)", "", false, "",
		func(j *Job, v string) (err error) { j.Engine, err = parseEnum("engine", v, Engines); return }},
	{"prompt-tokens", "inference: prompt tokens per request (with --output-tokens it fixes --seq-len; rounded up)", "", false, "float",
		func(j *Job, v string) (err error) { j.PromptTokens, err = tokensFlag("prompt-tokens", v); return }},
	{"output-tokens", "inference: generated tokens per request (rounded up)", "", false, "float",
		func(j *Job, v string) (err error) { j.OutputTokens, err = tokensFlag("output-tokens", v); return }},
	{"gpu-memory-utilization", "vllm/sglang/trt-llm: the engine's memory fraction, 0-1 (default vllm 0.9, sglang 0.88-0.81 by tensor-parallel size, trt-llm 0.9 of the free memory)", "", false, "float",
		func(j *Job, v string) (err error) {
			j.GPUMemoryUtilization, err = fractionFlag("gpu-memory-utilization", v)
			return
		}},
	{"max-model-len", "the context the engine reserves per sequence (vllm --max-model-len, sglang --context-length, trt-llm --max_seq_len, llama.cpp -c; default the model's context, llama.cpp 4096)", "", false, "int",
		func(j *Job, v string) (err error) { j.MaxModelLen, err = intFlag("max-model-len", v, 1); return }},
}

// tokensFlag reads a per-request token count: a non-negative number, rounded up.
func tokensFlag(flag, v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1<<30 || f != f {
		return 0, pricing.ParamErrorf(pricing.Invalid, flag, "--%s %q: want a non-negative number of tokens", flag, v)
	}
	return int(math.Ceil(f)), nil
}

// fractionFlag reads a share of GPU memory in (0, 1].
func fractionFlag(flag, v string) (float64, error) {
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, pricing.ParamErrorf(pricing.Invalid, flag, "--%s %q: want a fraction above 0 and at most 1", flag, v)
	}
	return f, nil
}

// ParseJob sets the job flags values holds, keyed by JobParams names ("model" and
// "params" are accepted and ignored: they name the model, not the job), in name order,
// so the first bad flag in name order is reported; an unknown key is an error. A missing
// key or an empty value takes the default; a switch given as "" means true. The CLI and
// the API bind through cmd/picker's binder instead, over the same JobParams.
func ParseJob(values map[string]string) (Job, error) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var j Job
	for _, k := range keys {
		if k == "model" || k == "params" {
			continue
		}
		i := slices.IndexFunc(JobParams, func(p JobParam) bool { return p.Name == k })
		if i < 0 {
			names := make([]string, len(JobParams))
			for n, p := range JobParams {
				names[n] = p.Name
			}
			return Job{}, pricing.ParamErrorf(pricing.Invalid, k, "unknown job flag --%s (job flags: --%s)", k, strings.Join(names, ", --"))
		}
		if err := JobParams[i].Set(&j, strings.TrimSpace(values[k])); err != nil {
			return Job{}, err
		}
	}
	return j, nil
}

// parseEnum accepts one of allowed, case-insensitively; "" is the default.
func parseEnum[T ~string](flag, v string, allowed []T) (T, error) {
	if v == "" {
		return "", nil
	}
	lv := strings.ToLower(v)
	names := make([]string, len(allowed))
	for i, a := range allowed {
		if lv == string(a) {
			return a, nil
		}
		names[i] = string(a)
	}
	return "", pricing.ParamErrorf(pricing.Invalid, flag, "--%s %q: want one of %s", flag, v, strings.Join(names, ", "))
}

func boolFlag(flag, v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(strings.ToLower(v))
	if err != nil {
		return false, pricing.ParamErrorf(pricing.Invalid, flag, "--%s %q: want true or false", flag, v)
	}
	return b, nil
}

func intFlag(flag, v string, lo int) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, pricing.ParamErrorf(pricing.Invalid, flag, "--%s %q: want a whole number >= %d", flag, v, lo)
	}
	if n < lo {
		return 0, pricing.ParamErrorf(pricing.Invalid, flag, "--%s %d: must be at least %d", flag, n, lo)
	}
	if n > 1<<30 {
		return 0, pricing.ParamErrorf(pricing.Invalid, flag, "--%s %d: too large", flag, n)
	}
	return n, nil
}

func targetsFlag(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var parts []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, pricing.ParamErrorf(pricing.Invalid, "lora-targets", "--lora-targets %q: want a comma list of module names or all-linear", v)
	}
	for _, p := range parts {
		if strings.EqualFold(p, "all-linear") && len(parts) > 1 {
			return nil, pricing.ParamErrorf(pricing.Invalid, "lora-targets", "--lora-targets %q: all-linear cannot be combined with module names", v)
		}
	}
	return parts, nil
}

func parseResolution(v string) (Resolution, error) {
	if v == "" {
		return Resolution{}, nil
	}
	bad := func(why string) error {
		return pricing.ParamErrorf(pricing.Invalid, "resolution", "--resolution %q: %s (want WxH, e.g. 1024x1024)", v, why)
	}
	w, h, ok := strings.Cut(strings.ToLower(v), "x")
	if !ok {
		return Resolution{}, bad("missing x")
	}
	W, err1 := strconv.Atoi(strings.TrimSpace(w))
	H, err2 := strconv.Atoi(strings.TrimSpace(h))
	if err1 != nil || err2 != nil {
		return Resolution{}, bad("not two whole numbers")
	}
	if W < 64 || H < 64 || W > 16384 || H > 16384 {
		return Resolution{}, bad("each side must be 64 to 16384 pixels")
	}
	if W%8 != 0 || H%8 != 0 {
		return Resolution{}, bad("each side must be a multiple of 8 (the VAE downsamples by 8)")
	}
	return Resolution{W, H}, nil
}

func dropoutFlag(v string) (*float64, error) {
	if v == "" {
		return nil, nil
	}
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || p < 0 || p >= 1 {
		return nil, pricing.ParamErrorf(pricing.Invalid, "lora-dropout", "--lora-dropout %q: want a probability in [0, 1)", v)
	}
	return &p, nil
}
