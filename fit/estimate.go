package fit

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

const GiB = float64(1 << 30)

// Constants of the device-level overhead. Each says where it comes from.
const (
	// CUDAContextGiB is what a PyTorch process holds on the GPU before its first tensor:
	// the CUDA context, kernel images and the cuBLAS/cuDNN handles. The HF Transformers
	// "Model training anatomy" guide measured 1343 MiB on a V100 (CUDA 11, modules loaded
	// eagerly); with CUDA >= 11.7 lazy module loading the bare context is ~0.5 GiB, and
	// cuBLAS/cuDNN/NCCL initialisation adds a few hundred MiB back. Our own H200 run
	// (issue 8, calibration/measured_gpu.csv: torch 2.11, CUDA 13, driver 580) measured
	// NVML's used memory minus max_memory_reserved at 1.28 GiB in every one of 39 cases
	// (inference, training, LoRA alike): the context plus cuBLAS workspaces. 1.0 GiB, the
	// earlier midpoint, left inference device totals 6-18 % low; 1.25 GiB is the measured
	// figure, rounded down for older, leaner CUDA versions.
	CUDAContextGiB = 1.25
	// allocStaticFrac: reserved-but-unallocated share of long-lived tensors (weights,
	// gradients, optimizer states, KV cache). The caching allocator rounds large blocks to
	// 2 MiB and carves 20 MiB segments for mid-size ones (PyTorch CUDA semantics docs,
	// "Memory management"); tensors allocated once pack densely, so a few percent.
	allocStaticFrac = 0.04
	// allocDynamicFrac: the same for activations and temporary buffers, whose sizes vary
	// from op to op and fragment the cache; the PyTorch docs' expandable_segments note
	// and typical max_memory_reserved/max_memory_allocated ratios of 1.1-1.3 in training.
	allocDynamicFrac = 0.10
)

// Defaults of the training stacks that size buffers.
const (
	// DeepSpeed ZeRO-3's default stage3_max_live_parameters: parameters it keeps gathered
	// on a GPU before releasing (DeepSpeed config docs).
	zero3MaxLiveParams = 1e9
	// Hugging Face writes checkpoints in shards of at most 5 GB
	// (PreTrainedModel.save_pretrained max_shard_size="5GB"); loading holds one at a time.
	checkpointShardBytes = 5e9
)

// Result is an estimate, marshalled as the CONTRACT's `picker estimate -o json` body. All
// memory is GiB (2^30 bytes) per GPU unless named otherwise.
type Result struct {
	Model           ModelInfo `json:"model"`
	Job             Job       `json:"job"` // resolved: every default filled
	TrainableParams int64     `json:"trainable_params"`
	Breakdown       Breakdown `json:"breakdown_gib"`
	// PeakAllocatedGiB is what torch.cuda.max_memory_allocated() would report per GPU: the
	// largest simultaneous sum of live tensors.
	PeakAllocatedGiB float64 `json:"peak_allocated_gib"`
	// PeakReservedGiB is what torch.cuda.max_memory_reserved() would report: peak allocated
	// plus the caching allocator's reserved-but-free slack (AllocatorOverheadGiB; the model
	// is allocStaticFrac/allocDynamicFrac, after the PyTorch CUDA semantics notes on block
	// rounding and segment splitting). It excludes the CUDA context.
	PeakReservedGiB float64 `json:"peak_reserved_gib"`
	// DeviceTotalGiB is what the GPU must physically hold (nvidia-smi's view): peak
	// reserved plus the CUDA context. Compare it with an offer's VRAM.
	DeviceTotalGiB float64 `json:"device_total_gib"`
	// CPURAMGiB is host memory the job needs: offloaded states and checkpoint loading.
	CPURAMGiB float64 `json:"cpu_ram_gib"`
	// Warnings say where the job runs but probably not as meant (a sequence beyond the
	// model's positions, ZeRO on one GPU); Assumptions say how it was modelled.
	Warnings             []string `json:"warnings,omitempty"`
	CUDAContextGiB       float64  `json:"cuda_context_gib"`
	AllocatorOverheadGiB float64  `json:"allocator_overhead_gib"`
	// NCCLBuffersGiB is NCCL's communicator buffers (multi-GPU training, stack.go): device
	// memory outside PyTorch's allocator, in device_total only.
	NCCLBuffersGiB float64 `json:"nccl_buffers_gib,omitempty"`
	// Layout says how a multi-node job (--nodes > 1) is split; empty for one instance.
	Layout string `json:"layout,omitempty"`
	// Serving is how the inference engine (--engine other than hf) runs the job: its
	// budget, KV pool and launch line (engine.go); nil for hf and training.
	Serving     *Serving `json:"serving,omitempty"`
	Assumptions []string `json:"assumptions"`
}

// ModelInfo identifies the model in a Result.
type ModelInfo struct {
	Name         string `json:"name"`
	HFID         string `json:"hf_id"`
	Architecture string `json:"architecture"`
	Params       int64  `json:"params"`
	ActiveParams int64  `json:"active_params"`
}

// Breakdown splits the peak per GPU. Workspace holds logits and loss, prefill and decode
// temporaries, communication buckets and optimizer-step temporaries.
type Breakdown struct {
	Weights     float64 `json:"weights"`
	Gradients   float64 `json:"gradients"`
	Optimizer   float64 `json:"optimizer"`
	Activations float64 `json:"activations"`
	KVCache     float64 `json:"kv_cache"`
	Workspace   float64 `json:"workspace"`
}

// resolved is a job with defaults filled and derived switches computed.
type resolved struct {
	Job
	targets   []string
	mixed     bool    // fp16-mixed / bf16-mixed
	b         float64 // bytes of the compute dtype (activations)
	store     float64 // bytes per unquantized stored weight
	quantB    float64 // bytes per quantized linear weight; 0 = not quantized
	notes     []string
	trainable int64
	// loraDropout: bytes per token, whole model, that LoRA dropout keeps (see layerBytes).
	loraDropout float64
	kvB         float64 // bytes per KV-cache element (fp8.go)
	// Framework switches (framework.go): adapters (and their gradients and optimizer
	// states) in fp32 over a 16-bit base; chunked LM head/loss; a fused optimizer step; the
	// optimizer applied during backward (no full set of gradients).
	adapterFP32, chunkedLoss, fusedOptim, optimInBwd bool
	// gradAccum: the framework's recipes accumulate gradients over micro-batches, so
	// gradients live through the next forward pass (see trainGrads).
	gradAccum bool
	// Stack terms (stack.go): DeepSpeed's fp32 masters over a 16-bit model; FSDP's
	// unsharded gradients under no_sync accumulation; the gathered bytes that churn
	// through the allocator (counted with the dynamic slack) and NCCL's buffers (device
	// memory outside the allocator), both set by estimateTraining.
	dsMasters, unshardedGrads, flatFrozenGrads bool
	allocChurn, ncclBytes                      float64
	// warns are Result.Warnings: the job runs, but probably not as the user meant.
	warns []string
	// serving is the engine's plan and servingTotal its device total in bytes per GPU
	// (engine.go); nil for transformers generate and training.
	serving      *Serving
	servingTotal float64
}

// invalid is an impossible job; param is the flag the error is about (pricing.Error.Param).
func invalid(param, format string, args ...any) error {
	return pricing.ParamErrorf(pricing.Invalid, param, format, args...)
}

// addNote records an assumption. Estimate runs tens of times per recommendation, so the
// notes concatenate their numbers (format.go) instead of going through fmt.
func (r *resolved) addNote(s string) { r.notes = append(r.notes, s) }

// resolve fills defaults and rejects impossible combinations, one concern per step; the
// order matters (the precision default depends on the task, the weight bytes on the
// quantization, the sharding default on the GPU count).
func resolve(m *model.Model, j Job) (*resolved, error) {
	r := &resolved{Job: j}
	// The assumptions: the model's, then each step's, then Estimate's standard ones, in
	// one slice sized for a typical job's (a LoRA fine-tune states about 20, an
	// inference about 5).
	room := 8
	if j.IsTraining() {
		room = 24
	}
	r.notes = append(make([]string, 0, len(m.Notes)+room), m.Notes...)
	for _, step := range []func(*model.Model, *resolved) error{
		resolveTask, resolveApplicable, resolveFramework, resolvePrecision, resolveCheckpointQuant, resolveQuant, resolveFP8, resolveRuntime, resolveNodes, resolveParallelism, resolveEngine, resolveSplit,
		resolveGradCkpt, resolveLength, resolveWorkload, resolveStack, resolveLoRA, resolveTechniques,
	} {
		if err := step(m, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// resolveTask defaults the task and matches it to the kind of model.
func resolveTask(m *model.Model, r *resolved) error {
	diffusion := m.Kind == model.KindDiffusion
	if r.Task == "" {
		r.Task = TaskInference
	}
	if diffusion && r.Task == TaskInference {
		r.Task = TaskImageGen
		r.addNote("task inference on an image pipeline means image-gen")
	}
	switch {
	case diffusion && r.Task != TaskImageGen:
		return invalid("task", "--task %s: %s is an image pipeline; only --task image-gen is modelled for it", r.Task, m.Name)
	case !diffusion && r.Task == TaskImageGen:
		return invalid("task", "--task image-gen: %s is a language model, not an image pipeline (try sd-1.5, sdxl-base or flux.1-dev)", m.Name)
	case !diffusion && !r.Resolution.IsZero():
		return invalid("resolution", "--resolution/--images apply to image generation; %s is a language model", m.Name)
	case !diffusion && r.Images != 0:
		return invalid("images", "--resolution/--images apply to image generation; %s is a language model", m.Name)
	case !r.IsTraining() && r.GradAccum != 0:
		return invalid("grad-accum", "--grad-accum applies to training, not --task %s", r.Task)
	case m.Kind == model.KindEncoder && r.Task == TaskInference && r.GradCkpt:
		return invalid("grad-ckpt", "--grad-ckpt applies to training, not --task inference")
	}
	return nil
}

// resolvePrecision defaults the precision and derives the bytes of activations and of
// stored weights.
func resolvePrecision(_ *model.Model, r *resolved) error {
	training := r.IsTraining()
	if r.Precision == "" {
		r.Precision = "bf16"
		if training {
			r.Precision = "bf16-mixed"
		}
	}
	r.mixed = r.Precision.Mixed()
	r.b = 2
	if r.Precision == "fp32" {
		r.b = 4
	}
	// Stored weight bytes. Mixed precision stores the half copy the forward pass uses; the
	// fp32 master copy is accounted with the optimizer (ZeRO paper, 2+2+12). Inference with
	// a -mixed precision runs autocast over fp32 weights.
	r.store = r.b
	if r.mixed && (!training || r.Task == TaskLoRA) {
		r.store = 4
	}
	return nil
}

// resolveRuntime defaults the optimizer, micro-batch, GPU count and attention kernel.
func resolveRuntime(_ *model.Model, r *resolved) error {
	if r.Optimizer == "" {
		r.Optimizer = "adamw"
	}
	if r.Batch == 0 {
		r.Batch = 1
	}
	if r.GPUs == 0 {
		r.GPUs = 1
	}
	if r.Attention == "" {
		r.Attention = "sdpa"
	}
	if r.Attention == "flash" && r.Precision == "fp32" {
		return invalid("attention", "--attention flash --precision fp32: FlashAttention kernels run in fp16/bf16 only; use sdpa or a 16-bit precision")
	}
	return nil
}

// resolveGradCkpt rejects checkpointing where nothing is kept for backward.
func resolveGradCkpt(_ *model.Model, r *resolved) error {
	if r.GradCkpt && !r.IsTraining() {
		return invalid("grad-ckpt", "--grad-ckpt applies to training, not --task %s", r.Task)
	}
	return nil
}

// resolveParallelism defaults sharding and offload and checks them against the task.
func resolveParallelism(m *model.Model, r *resolved) error {
	training, diffusion := r.IsTraining(), m.Kind == model.KindDiffusion
	if r.Shard == "" {
		r.Shard = ShardNone
		if !training && r.GPUs > 1 && !diffusion {
			r.Shard = "tp"
		}
	}
	if r.Offload == "" {
		r.Offload = OffloadNone
	}
	switch {
	case !training && r.Shard.Sharded() && r.Shard != "tp":
		return invalid("shard", "--shard %s with --task %s: ZeRO/FSDP shard training states; inference uses --shard tp (or none for one replica per GPU)", r.Shard, r.Task)
	case training && r.Shard == "tp":
		return invalid("shard", "--shard tp with --task %s: tensor parallelism is modelled for inference; for training use zero1, zero2, zero3 or fsdp", r.Task)
	case diffusion && r.Shard == "tp" && r.GPUs > 1:
		return invalid("shard", "--shard tp: image pipelines run on one GPU each; use --shard none to run one pipeline per GPU")
	case r.Offload == OffloadModel && !diffusion:
		return invalid("offload", "--offload model: model CPU offload is modelled for image pipelines (diffusers enable_model_cpu_offload); %s is a language model", m.Name)
	case diffusion && r.Offload.Enabled() && r.Offload != OffloadModel:
		return invalid("offload", "--offload %s: image pipelines take --offload model (diffusers enable_model_cpu_offload)", r.Offload)
	case !training && r.Offload.Enabled() && !diffusion:
		return invalid("offload", "--offload %s with --task %s: offload moves training states to host memory; it needs a training task", r.Offload, r.Task)
	case r.Offload == "optimizer" && !r.Shard.Sharded():
		return invalid("offload", "--offload optimizer needs ZeRO or FSDP (--shard zero1, zero2, zero3 or fsdp); DDP keeps every state on the GPU")
	case r.Offload == "optimizer+params" && r.Shard != "zero3" && r.Shard != "fsdp" && r.Shard != "hsdp":
		return invalid("offload", "--offload optimizer+params needs --shard zero3 or fsdp (parameters are only offloaded when they are sharded)")
	}
	if r.GPUs > 1 && !r.Shard.Sharded() && !training {
		r.addNote(itoa(r.GPUs) + " GPUs without --shard tp: each GPU holds a full replica")
	}
	return nil
}

// resolveSplit checks --split and fills it for inference split across GPUs (a resolve
// step: runs after the sharding is defaulted). A layer split keeps whole layers on each
// GPU (llama.cpp --split-mode layer), so any GPU count divides the model; tensor
// parallelism needs the count to divide the attention heads.
func resolveSplit(m *model.Model, r *resolved) error {
	split := r.Shard == "tp" && r.GPUs > 1 && !r.IsTraining()
	switch {
	case r.Split != "" && r.IsTraining():
		return invalid("split", "--split %s with --task %s: --split says how inference divides the model across GPUs; training uses --shard", r.Split, r.Task)
	case r.Split != "" && !split && r.GPUs > 1:
		return invalid("split", "--split %s with --shard %s: --split says how the model is divided across GPUs, and --shard %s keeps a whole replica on each; drop --shard (or give --shard tp)", r.Split, r.Shard, r.Shard)
	}
	if !split {
		r.Split = ""
		return nil
	}
	if r.Split == "" {
		r.Split = SplitTensor
		if r.Engine != "" {
			r.Split = r.Engine.Spec().Split // llama.cpp: --split-mode layer
		}
	}
	if r.Split == SplitTensor && !m.TPValid(r.GPUs) {
		// vLLM (and TGI) require the tensor-parallel degree to divide the attention heads.
		return invalid("gpus", "--gpus %d with tensor parallelism: %s has %d attention heads, which %d does not divide; valid degrees up to %d: %s",
			r.GPUs, m.Name, m.Dec.Heads, r.GPUs, max(r.GPUs, 8), joinInts(m.TPDegrees(max(r.GPUs, 8))))
	}
	if r.Split == SplitLayer {
		r.addNote("layer split (llama.cpp --split-mode layer): each of the " + itoa(r.GPUs) + " GPUs holds 1/" + itoa(r.GPUs) + " of the layers and their KV cache; one layer's prefill workspace and the logits are not divided; for one stream the GPUs take turns, so it is no faster than one GPU")
	}
	return nil
}

// resolveLength defaults the sequence length (capped at the model's context) or, for
// image pipelines, the resolution and image count.
func resolveLength(m *model.Model, r *resolved) error {
	if err := workloadSeqLen(r); err != nil { // engine.go: prompt + output fix the length
		return err
	}
	switch {
	case m.Kind == model.KindDiffusion:
		if r.SeqLen != 0 {
			return invalid("seq-len", "--seq-len applies to language models; image pipelines take --resolution")
		}
		if r.Images == 0 {
			r.Images = 1
		}
		if r.Resolution.IsZero() {
			r.Resolution = Resolution{m.Pipe.DefaultResolution, m.Pipe.DefaultResolution}
		}
	case r.SeqLen == 0:
		r.SeqLen = 2048
		switch m.Kind {
		case model.KindEncoder, model.KindSeq2Seq:
			r.SeqLen = 512
		}
		if m.MaxPos > 0 && int64(r.SeqLen) > m.MaxPos {
			r.SeqLen = int(m.MaxPos)
		}
	case m.MaxPos > 0 && int64(r.SeqLen) > m.MaxPos:
		r.addWarning("--seq-len " + itoa(r.SeqLen) + " is beyond " + m.Name + "'s " + strconv.FormatInt(m.MaxPos, 10) + " positions (max_position_embeddings): it needs RoPE scaling, and fails for learned positions")
	}
	return nil
}

// resolveLoRA picks the adapted modules and counts the trainable parameters.
func resolveLoRA(m *model.Model, r *resolved) error {
	if r.Task != TaskLoRA && r.Task != TaskQLoRA {
		r.LoRARank, r.LoRATargets = 0, []string{}
		if r.Task == TaskFullFT {
			r.trainable = m.ParamCount
		}
		return nil
	}
	if r.LoRARank == 0 {
		r.LoRARank = 8
	}
	spec := r.LoRATargets
	t, err := m.LoRATargets(spec)
	if err != nil {
		return err
	}
	r.targets = t
	r.LoRATargets = append([]string{}, t...)
	r.trainable = m.LoRAParams(t, int64(r.LoRARank))
	if r.LoRADropout != nil && *r.LoRADropout > 0 {
		r.loraDropout = m.LoRADropoutPerToken(t, r.b)
	}
	if r.trainable == 0 {
		return invalid("lora-targets", "--lora-targets %s: no linear layer of %s matches", strings.Join(spec, ","), m.Name)
	}
	return nil
}

// Estimate computes the memory a job needs on each GPU. It is pure and does arithmetic only
// (the model's derived numbers were computed when it was resolved), so the recommender can
// call it once per GPU count and per savings-ladder step. Impossible jobs are
// pricing.Invalid errors that say why.
func Estimate(m *model.Model, job Job) (*Result, error) {
	if m == nil {
		return nil, pricing.Errorf(pricing.Invalid, "no model given")
	}
	r, err := resolve(m, job)
	if err != nil {
		return nil, err
	}
	var bd Breakdown
	var cpu float64
	if m.Kind == model.KindDiffusion {
		bd, cpu = estimateImage(m, r)
	} else if r.IsTraining() {
		bd, cpu = estimateTraining(m, r)
	} else {
		bd = estimateInference(m, r)
	}
	peak := bd.Weights + bd.Gradients + bd.Optimizer + bd.Activations + bd.KVCache + bd.Workspace
	// Gathered layers (ZeRO-3/FSDP) are allocated and freed layer by layer, so they
	// churn through the cache like activations do (r.allocChurn, stack.go; allocator.go).
	alloc := allocatorSlack(bd, r)
	res := &Result{
		Model:           ModelInfo{Name: m.Name, HFID: m.HFID, Architecture: m.Architecture, Params: m.ParamCount, ActiveParams: m.ActiveCount},
		Job:             r.Job,
		TrainableParams: r.trainable,
		Breakdown: Breakdown{
			Weights: Round3(bd.Weights / GiB), Gradients: Round3(bd.Gradients / GiB), Optimizer: Round3(bd.Optimizer / GiB),
			Activations: Round3(bd.Activations / GiB), KVCache: Round3(bd.KVCache / GiB), Workspace: Round3(bd.Workspace / GiB),
		},
		PeakAllocatedGiB:     Round3(peak / GiB),
		PeakReservedGiB:      Round3((peak + alloc) / GiB),
		CUDAContextGiB:       CUDAContextGiB,
		AllocatorOverheadGiB: Round3(alloc / GiB),
		DeviceTotalGiB:       Round3(peak/GiB + CUDAContextGiB + alloc/GiB + r.ncclBytes/GiB),
		NCCLBuffersGiB:       Round3(r.ncclBytes / GiB),
		CPURAMGiB:            Round3(cpu / GiB),
		Layout:               r.layout(),
	}
	if r.serving != nil { // the engine's budget, not the caching allocator's (engine.go)
		res.AllocatorOverheadGiB = 0
		res.PeakReservedGiB = res.PeakAllocatedGiB
		res.DeviceTotalGiB = Round3(r.servingTotal / GiB)
		res.Serving = r.serving
	}
	res.Warnings = r.warns
	// r.notes starts with the model's notes (resolve), so the assumptions are one slice,
	// clipped so that a caller's append never writes into another's.
	notes := appendStandardNotes(r.notes, m, r)
	if r.serving != nil {
		notes = appendServingNotes(notes, r.serving)
	}
	res.Assumptions = slices.Clip(notes)
	return res, nil
}

// Round3 rounds to three decimals, the precision of every GiB and $ figure in the JSON
// answers (so equal needs compare equal).
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// appendStandardNotes appends the assumptions of the job's kind and stack. Estimate runs
// tens of times per recommendation, so the fixed notes are constants and the others
// concatenate their numbers (format.go) rather than go through fmt.
func appendStandardNotes(out []string, m *model.Model, r *resolved) []string {
	out = append(out, allocatorNote(r))
	if r.quantB > 0 && (m.Ckpt == nil || !r.Quant.Quantized()) {
		out = append(out, string(r.Quant)+" weights for linear layers ("+fixed(r.quantB, 4)+" bytes/param incl. quantization constants); "+keptModules(m, r)+" "+dtypeName(r.store))
	}
	if r.IsTraining() {
		switch {
		case r.mixed && !r.Shard.Sharded():
			out = append(out, "mixed precision with PyTorch AMP: fp32 weights + a "+strings.TrimSuffix(string(r.Precision), "-mixed")+" autocast copy, fp32 gradients, fp32 optimizer states")
		case r.mixed:
			out = append(out, "mixed precision as in the ZeRO paper: 16-bit weights and gradients, fp32 master weights with the optimizer states (2+2+12 bytes/param for AdamW)")
		case r.Precision != "fp32" && r.adapterFP32 && r.Task != TaskFullFT:
			out = append(out, "frozen base weights in "+string(r.Precision)+": "+fixed(r.store, 0)+" bytes/param; adapters, their gradients and optimizer states in fp32 (PEFT autocast_adapter_dtype=True)")
		case r.Precision != "fp32":
			out = append(out, "true "+string(r.Precision)+" training: weights, gradients and optimizer states in "+string(r.Precision))
		}
		if r.Task != TaskFullFT {
			out = append(out, "LoRA r="+itoa(r.LoRARank)+" on "+strings.Join(r.targets, ",")+": "+strconv.FormatInt(r.trainable, 10)+" trainable parameters; the frozen base keeps no gradients or optimizer states")
			if r.LoRADropout != nil && *r.LoRADropout > 0 {
				out = append(out, "lora_dropout "+general(*r.LoRADropout, 2)+" keeps a dropped-out copy of each adapted layer's input and a 1-byte mask")
			} else {
				out = append(out, "lora_dropout 0: no dropout copies (PEFT recipes often set 0.05-0.1: --lora-dropout)")
			}
			if r.mixed {
				base := "fp32 (autocast casts frozen weights on the fly; use --precision bf16 for a base loaded in bf16)"
				if r.quantB > 0 {
					base = "16-bit where not quantized (bitsandbytes loads them so)"
				}
				out = append(out, "mixed precision: frozen base weights "+base+"; adapters, their gradients and optimizer states in fp32 (PEFT's default autocast_adapter_dtype)")
			}
		}
		if r.GradCkpt {
			out = append(out, "gradient checkpointing: each layer keeps only its input; one layer is recomputed at a time")
		}
		if m.Kind == model.KindEncoder {
			out = append(out, "encoder trained with a classification head (no vocabulary logits)")
		}
		if r.Optimizer == "paged-adamw-8bit" {
			out = append(out, "paged optimizer states live in CUDA unified memory: counted on the device, though torch.cuda.max_memory_allocated does not see them")
		}
		if r.GPUs > 1 && !r.Shard.Sharded() {
			out = append(out, "DDP: gradient buckets hold a second copy of the gradients (gradient_as_bucket_view=False, the default)")
		}
	} else if m.Kind != model.KindDiffusion {
		if m.KVPerToken > 0 {
			out = append(out, "KV cache for batch "+itoa(r.Batch)+" x "+itoa(r.SeqLen)+" tokens (prompt + generated) in "+kvDtypeName(r))
		}
		out = append(out, "peak includes the largest checkpoint tensor copied while the weights load")
	}
	out = appendStackNotes(out, m, r)
	out = appendTechniqueNotes(out, m, r)
	if m.AttnSoftcap && r.Attention != "eager" {
		out = append(out, m.Architecture+" uses attention logit soft-capping, which fused SDPA/flash kernels do not apply: the attention scores are materialised as in eager mode")
	}
	return out
}

func kvDtypeName(r *resolved) string {
	if r.kvB == 1 {
		return "fp8"
	}
	return dtypeName(r.b)
}

func dtypeName(b float64) string {
	if b == 4 {
		return "fp32"
	}
	return "16-bit"
}

// needsInput reports whether a layer's linear modules keep their input for the backward
// pass: a trainable weight needs it for its gradient; bitsandbytes' quantized matmul
// (MatMul4Bit, MatMul8bitLt) saves its input whenever any gradient is needed; a LoRA
// adapter's lora_A reads the same input.
func (r *resolved) needsInput(mods []string) bool {
	if r.Task == TaskFullFT || r.quantB > 0 {
		return true
	}
	for _, mod := range mods {
		if slices.Contains(r.targets, mod) {
			return true
		}
	}
	return false
}

// layerBytes is the activation memory one layer keeps for the backward pass with tokens =
// batch*seq tokens: per-token tensors plus the attention scores of eager attention.
func (r *resolved) layerBytes(m *model.Model, s *model.Stack, tokens, seq, kvSeq float64) float64 {
	var perTok float64
	for _, e := range s.Entries {
		switch {
		case e.Mask:
			perTok += float64(e.Elems) // 1-byte dropout masks
		case e.Mods != nil && !r.needsInput(e.Mods):
		case e.Mods != nil && r.fp8Training():
			perTok += float64(e.Elems) // fp8 training saves linear inputs as their fp8 casts
		case e.FP32 && r.Norm != "fused": // a norm's input, upcast unless the norm is fused (--norm)
			perTok += float64(e.Elems) * 4
		default:
			perTok += float64(e.Elems) * r.b
		}
	}
	if m.PyGELU > 0 && r.Framework == FrameworkHF && s == &m.Dec {
		// transformers' NewGELUActivation, 0.5*x*(1+tanh(c*(x+0.044715*x^3))), keeps tanh's
		// output, 0.5*x and (1+tanh) beside its input (see actEntry in model.go).
		perTok += 3 * float64(m.PyGELU) * r.b
	}
	eager := r.Attention == "eager" || m.AttnSoftcap
	// The attention kernel keeps q, k, v and its output. Hugging Face repeats grouped K/V
	// heads to the query heads before eager and SDPA attention (repeat_kv); FlashAttention-2
	// reads the grouped heads directly.
	kv := float64(s.QDim)
	if r.Attention == "flash" && !m.AttnSoftcap {
		kv = float64(s.KVDim)
	}
	attn := float64(2*s.QDim)*r.b + 2*kv*r.b
	if s.Cross {
		// Cross-attention keeps its queries and output per decoder token, its keys and
		// values per encoder token (kvSeq per sample; tokens/seq samples).
		attn += float64(2*s.QDim)*r.b + 2*kv*r.b*kvSeq/math.Max(seq, 1)
	}
	// LoRA dropout: each adapted module applies its own dropout to its input before lora_A,
	// which keeps the dropped-out copy (compute dtype) and a 1-byte mask.
	perTok += r.loraDropout / float64(m.TotalLayers())
	total := perTok*tokens + attn*tokens
	if eager {
		total += r.scoreBytes(s, seq, seq)
		if s.Cross {
			total += r.scoreBytes(s, seq, kvSeq)
		}
	}
	return total
}

// scoreBytes is what eager attention keeps per layer: the softmax output (in fp32 when the
// implementation upcasts, then a copy in the compute dtype for the matmul with V) and,
// with attention dropout, a 1-byte mask plus the dropped-out probabilities.
func (r *resolved) scoreBytes(s *model.Stack, q, k float64) float64 {
	per := r.b
	if s.SoftmaxFP32 && r.b < 4 {
		per = 4 + r.b
	}
	if s.AttnDropout {
		per += 1 + r.b
	}
	return float64(r.Batch) * float64(s.Heads) * q * k * per
}
