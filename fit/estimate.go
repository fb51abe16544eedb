package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

const gib = float64(1 << 30)

// Constants of the device-level overhead. Each says where it comes from.
const (
	// CUDAContextGiB is what a PyTorch process holds on the GPU before its first tensor:
	// the CUDA context, kernel images and the cuBLAS/cuDNN handles. The HF Transformers
	// "Model training anatomy" guide measured 1343 MiB on a V100 (CUDA 11, modules loaded
	// eagerly); with CUDA >= 11.7 lazy module loading the bare context is ~0.5 GiB, and
	// cuBLAS/cuDNN/NCCL initialisation adds a few hundred MiB back. Our own H200 run
	// (issue 8, fit/testdata/measured_gpu.csv: torch 2.11, CUDA 13, driver 580) measured
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

// Bytes per parameter of quantized linear weights.
const (
	// bitsandbytes NF4/FP4: two 4-bit weights per byte plus one fp32 absmax per block of
	// 64 weights (bnb.functional.quantize_4bit, blocksize=64): 0.5 + 4/64.
	bytes4bit = 0.5 + 4.0/64
	// Double quantization (QLoRA paper, section 3): the absmax constants are themselves
	// quantized to 8 bits in blocks of 256, with one fp32 constant per block of 256:
	// 0.5 + 1/64 + 4/(64*256).
	bytes4bitDQ = 0.5 + 1.0/64 + 4.0/(64*256)
	// GPTQ/AWQ-style int4: 4-bit weights with an fp16 scale and a packed 4-bit zero point
	// per group of 128 input weights (AutoGPTQ/AutoAWQ default group_size=128).
	bytesInt4 = 0.5 + 2.0/128 + 0.5/128
	// LLM.int8(): one int8 per weight plus one fp32 scale per output row (SCB), added per
	// module below.
	bytesInt8 = 1.0
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
	// Layout says how a multi-node job (--nodes > 1) is split; empty for one instance.
	Layout      string   `json:"layout,omitempty"`
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
	// warns are Result.Warnings: the job runs, but probably not as the user meant.
	warns []string
}

// invalid is an impossible job; param is the flag the error is about (pricing.Error.Param).
func invalid(param, format string, args ...any) error {
	return pricing.ParamErrorf(pricing.Invalid, param, format, args...)
}

func (r *resolved) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// resolve fills defaults and rejects impossible combinations, one concern per step; the
// order matters (the precision default depends on the task, the weight bytes on the
// quantization, the sharding default on the GPU count).
func resolve(m *Model, j Job) (*resolved, error) {
	r := &resolved{Job: j}
	for _, step := range []func(*Model, *resolved) error{
		resolveTask, resolveApplicable, resolveFramework, resolvePrecision, resolveCheckpointQuant, resolveQuant, resolveFP8, resolveRuntime, resolveNodes, resolveParallelism,
		resolveGradCkpt, resolveLength, resolveLoRA, resolveTechniques,
	} {
		if err := step(m, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// resolveTask defaults the task and matches it to the kind of model.
func resolveTask(m *Model, r *resolved) error {
	diffusion := m.Kind == KindDiffusion
	if r.Task == "" {
		r.Task = TaskInference
	}
	if diffusion && r.Task == TaskInference {
		r.Task = TaskImageGen
		r.note("task inference on an image pipeline means image-gen")
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
	case m.Kind == KindEncoder && r.Task == TaskInference && r.GradCkpt:
		return invalid("grad-ckpt", "--grad-ckpt applies to training, not --task inference")
	}
	return nil
}

// resolvePrecision defaults the precision and derives the bytes of activations and of
// stored weights.
func resolvePrecision(_ *Model, r *resolved) error {
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

// resolveQuant defaults the quantization, checks it against the task, and sets the
// bytes per quantized weight.
func resolveQuant(m *Model, r *resolved) error {
	if r.Quant == "" {
		r.Quant = QuantNone
		if r.Task == TaskQLoRA {
			r.Quant = "nf4"
		}
	}
	switch {
	case r.Task == TaskQLoRA && (!r.Quant.Quantized() || r.Quant == "int8"):
		return invalid("quant", "--task qlora --quant %s: QLoRA trains adapters over a 4-bit base (nf4, fp4 or int4); use --task lora for a %s base", r.Quant, r.Quant)
	case r.Task == TaskQLoRA && r.Precision == "fp32":
		return invalid("precision", "--task qlora --precision fp32: QLoRA computes in 16 bits over 4-bit weights; use bf16-mixed (default), bf16, fp16 or fp16-mixed")
	case r.Task == TaskFullFT && r.Quant.Quantized():
		return invalid("quant", "--task full-ft --quant %s: quantized weights cannot be fully fine-tuned; use --task qlora or --quant none", r.Quant)
	case r.DoubleQuant && r.Quant != "nf4" && r.Quant != "fp4":
		return invalid("double-quant", "--double-quant: needs 4-bit bitsandbytes weights (--quant nf4 or fp4), not --quant %s", r.Quant)
	case m.Kind == KindDiffusion && r.Quant == "int4":
		return invalid("quant", "--quant int4: not modelled for image pipelines; use int8, nf4 or fp4")
	}
	if r.Quant.Quantized() && r.mixed && r.IsTraining() {
		r.store = 2
	}
	if r.Task == TaskLoRA && r.Quant.Quantized() {
		r.note("LoRA over a %s base is QLoRA-style: the quantized layers keep their inputs for the backward pass", r.Quant)
	}
	switch r.Quant {
	case "int8":
		r.quantB = bytesInt8
	case "nf4", "fp4":
		r.quantB = bytes4bit
		if r.DoubleQuant {
			r.quantB = bytes4bitDQ
		}
	case "int4":
		r.quantB = bytesInt4
	case "fp8":
		r.quantB = bytesFP8
	}
	if m.ckpt != nil && r.Quant.Quantized() { // as stored (quantcfg.go); none = dequantized
		r.quantB = m.ckpt.bytesPerQuantized(m)
	}
	return nil
}

// resolveRuntime defaults the optimizer, micro-batch, GPU count and attention kernel.
func resolveRuntime(_ *Model, r *resolved) error {
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
func resolveGradCkpt(_ *Model, r *resolved) error {
	if r.GradCkpt && !r.IsTraining() {
		return invalid("grad-ckpt", "--grad-ckpt applies to training, not --task %s", r.Task)
	}
	return nil
}

// resolveParallelism defaults sharding and offload and checks them against the task.
func resolveParallelism(m *Model, r *resolved) error {
	training, diffusion := r.IsTraining(), m.Kind == KindDiffusion
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
	case r.Offload == "optimizer+params" && r.Shard != "zero3" && r.Shard != "fsdp":
		return invalid("offload", "--offload optimizer+params needs --shard zero3 or fsdp (parameters are only offloaded when they are sharded)")
	}
	if r.GPUs > 1 && !r.Shard.Sharded() && !training {
		r.note("%d GPUs without --shard tp: each GPU holds a full replica", r.GPUs)
	}
	if r.Shard == "tp" && r.GPUs > 1 && !m.tpValid(r.GPUs) {
		// vLLM (and TGI) require the tensor-parallel degree to divide the attention heads.
		return invalid("gpus", "--gpus %d with tensor parallelism: %s has %d attention heads, which %d does not divide; valid degrees up to %d: %s",
			r.GPUs, m.Name, m.dec.heads, r.GPUs, max(r.GPUs, 8), joinInts(m.TPDegrees(max(r.GPUs, 8))))
	}
	return nil
}

// resolveLength defaults the sequence length (capped at the model's context) or, for
// image pipelines, the resolution and image count.
func resolveLength(m *Model, r *resolved) error {
	switch {
	case m.Kind == KindDiffusion:
		if r.SeqLen != 0 {
			return invalid("seq-len", "--seq-len applies to language models; image pipelines take --resolution")
		}
		if r.Images == 0 {
			r.Images = 1
		}
		if r.Resolution.IsZero() {
			r.Resolution = Resolution{m.pipe.DefaultResolution, m.pipe.DefaultResolution}
		}
	case r.SeqLen == 0:
		r.SeqLen = 2048
		switch m.Kind {
		case KindEncoder, KindSeq2Seq:
			r.SeqLen = 512
		}
		if m.maxPos > 0 && int64(r.SeqLen) > m.maxPos {
			r.SeqLen = int(m.maxPos)
		}
	case m.maxPos > 0 && int64(r.SeqLen) > m.maxPos:
		r.warn("--seq-len %d is beyond %s's %d positions (max_position_embeddings): it needs RoPE scaling, and fails for learned positions", r.SeqLen, m.Name, m.maxPos)
	}
	return nil
}

// resolveLoRA picks the adapted modules and counts the trainable parameters.
func resolveLoRA(m *Model, r *resolved) error {
	if r.Task != TaskLoRA && r.Task != TaskQLoRA {
		r.LoRARank, r.LoRATargets = 0, []string{}
		if r.Task == TaskFullFT {
			r.trainable = m.params
		}
		return nil
	}
	if r.LoRARank == 0 {
		r.LoRARank = 8
	}
	spec := r.LoRATargets
	t, err := m.loraTargets(spec)
	if err != nil {
		return err
	}
	r.targets = t
	r.LoRATargets = append([]string{}, t...)
	r.trainable = m.loraParams(t, int64(r.LoRARank))
	if r.LoRADropout != nil && *r.LoRADropout > 0 {
		r.loraDropout = m.loraDropoutPerToken(t, r.b)
	}
	if r.trainable == 0 {
		return invalid("lora-targets", "--lora-targets %s: no linear layer of %s matches", strings.Join(spec, ","), m.Name)
	}
	return nil
}

func (m *Model) loraTargets(spec []string) ([]string, error) {
	allLinear := len(spec) == 1 && strings.EqualFold(spec[0], "all-linear")
	if m.Kind == KindParams && len(spec) > 0 && !allLinear {
		return nil, invalid("lora-targets", "--lora-targets %s: %s has no known architecture (only --params); use the default or all-linear", strings.Join(spec, ","), m.Name)
	}
	switch {
	case len(spec) == 0:
		return m.defaultTargets, nil
	case allLinear:
		return m.LoRAModules(), nil
	}
	avail := m.LoRAModules()
	for _, p := range spec {
		if !slices.Contains(avail, p) {
			return nil, invalid("lora-targets", "--lora-targets: %s has no linear layer named %q (it has: %s, or all-linear)", m.Name, p, strings.Join(avail, ", "))
		}
	}
	return spec, nil
}

// loraParams is PEFT's trainable count: r*(d_in+d_out) for every targeted linear layer.
func (m *Model) loraParams(targets []string, r int64) int64 {
	var n int64
	for _, mod := range m.modules {
		if contains(targets, mod.name) {
			n += r * (mod.in + mod.out) * mod.count
		}
	}
	return n
}

// loraDropoutPerToken: every adapted linear layer applies its own dropout to its input
// before lora_A (PEFT LoraLayer), keeping the dropped-out copy and a 1-byte mask for the
// backward pass. Routed experts see only top-k of E tokens.
func (m *Model) loraDropoutPerToken(targets []string, b float64) float64 {
	var n float64
	for _, mod := range m.modules {
		if !contains(targets, mod.name) {
			continue
		}
		c := float64(mod.count)
		if mod.routed && m.moeExperts > 0 {
			c = c * float64(m.moeTopK) / float64(m.moeExperts)
		}
		n += c * float64(mod.in) * (b + 1)
	}
	return n
}

func (m *Model) totalLayers() int64 {
	n := m.dec.layers
	if m.enc != nil {
		n += m.enc.layers
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Estimate computes the memory a job needs on each GPU. It is pure and does arithmetic only
// (the model's derived numbers were computed when it was resolved), so the recommender can
// call it once per GPU count and per savings-ladder step. Impossible jobs are
// pricing.Invalid errors that say why.
func Estimate(m *Model, job Job) (*Result, error) {
	if m == nil {
		return nil, pricing.Errorf(pricing.Invalid, "no model given")
	}
	r, err := resolve(m, job)
	if err != nil {
		return nil, err
	}
	var bd Breakdown
	var cpu float64
	if m.Kind == KindDiffusion {
		bd, cpu = estimateImage(m, r)
	} else if r.IsTraining() {
		bd, cpu = estimateTraining(m, r)
	} else {
		bd = estimateInference(m, r)
	}
	peak := bd.Weights + bd.Gradients + bd.Optimizer + bd.Activations + bd.KVCache + bd.Workspace
	static := bd.Weights + bd.Gradients + bd.Optimizer + bd.KVCache
	alloc := allocStaticFrac*static + allocDynamicFrac*(bd.Activations+bd.Workspace)
	res := &Result{
		Model:           ModelInfo{Name: m.Name, HFID: m.HFID, Architecture: m.Architecture, Params: m.params, ActiveParams: m.active},
		Job:             r.Job,
		TrainableParams: r.trainable,
		Breakdown: Breakdown{
			Weights: round3(bd.Weights / gib), Gradients: round3(bd.Gradients / gib), Optimizer: round3(bd.Optimizer / gib),
			Activations: round3(bd.Activations / gib), KVCache: round3(bd.KVCache / gib), Workspace: round3(bd.Workspace / gib),
		},
		PeakAllocatedGiB:     round3(peak / gib),
		PeakReservedGiB:      round3((peak + alloc) / gib),
		CUDAContextGiB:       CUDAContextGiB,
		AllocatorOverheadGiB: round3(alloc / gib),
		DeviceTotalGiB:       round3(peak/gib + CUDAContextGiB + alloc/gib),
		CPURAMGiB:            round3(cpu / gib),
		Layout:               r.layout(),
	}
	res.Warnings = r.warns
	res.Assumptions = append(append(append([]string{}, m.Notes...), r.notes...), standardNotes(m, r)...)
	return res, nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func standardNotes(m *Model, r *resolved) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	add("device_total = peak allocated + %.1f GiB CUDA context + allocator cache (%.0f%% of long-lived tensors, %.0f%% of activations/temporaries)",
		CUDAContextGiB, allocStaticFrac*100, allocDynamicFrac*100)
	if r.quantB > 0 && (m.ckpt == nil || !r.Quant.Quantized()) {
		add("%s weights for linear layers (%.4f bytes/param incl. quantization constants); embeddings, lm_head, norms and biases stay %s", r.Quant, r.quantB, dtypeName(r.store))
	}
	if r.IsTraining() {
		switch {
		case r.mixed && !r.Shard.Sharded():
			add("mixed precision with PyTorch AMP: fp32 weights + a %s autocast copy, fp32 gradients, fp32 optimizer states", strings.TrimSuffix(string(r.Precision), "-mixed"))
		case r.mixed:
			add("mixed precision as in the ZeRO paper: 16-bit weights and gradients, fp32 master weights with the optimizer states (2+2+12 bytes/param for AdamW)")
		case r.Precision != "fp32" && r.adapterFP32 && r.Task != TaskFullFT:
			add("frozen base weights in %s: %.0f bytes/param; adapters, their gradients and optimizer states in fp32 (PEFT autocast_adapter_dtype=True)", r.Precision, r.store)
		case r.Precision != "fp32":
			add("true %s training: weights, gradients and optimizer states in %s", r.Precision, r.Precision)
		}
		if r.Task != TaskFullFT {
			add("LoRA r=%d on %s: %d trainable parameters; the frozen base keeps no gradients or optimizer states", r.LoRARank, strings.Join(r.targets, ","), r.trainable)
			if r.LoRADropout != nil && *r.LoRADropout > 0 {
				add("lora_dropout %.2g keeps a dropped-out copy of each adapted layer's input and a 1-byte mask", *r.LoRADropout)
			} else {
				add("lora_dropout 0: no dropout copies (PEFT recipes often set 0.05-0.1: --lora-dropout)")
			}
			if r.mixed {
				base := "fp32 (autocast casts frozen weights on the fly; use --precision bf16 for a base loaded in bf16)"
				if r.quantB > 0 {
					base = "16-bit where not quantized (bitsandbytes loads them so)"
				}
				add("mixed precision: frozen base weights %s; adapters, their gradients and optimizer states in fp32 (PEFT's default autocast_adapter_dtype)", base)
			}
		}
		if r.GradCkpt {
			add("gradient checkpointing: each layer keeps only its input; one layer is recomputed at a time")
		}
		if m.Kind == KindEncoder {
			add("encoder trained with a classification head (no vocabulary logits)")
		}
		if m.Kind == KindSeq2Seq {
			add("decoder (target) sequence assumed as long as --seq-len")
		}
		if r.Optimizer == "paged-adamw-8bit" {
			add("paged optimizer states live in CUDA unified memory: counted on the device, though torch.cuda.max_memory_allocated does not see them")
		}
		if r.GPUs > 1 && !r.Shard.Sharded() {
			add("DDP: gradient buckets hold a second copy of the gradients (gradient_as_bucket_view=False, the default)")
		}
	} else if m.Kind != KindDiffusion {
		if m.kvPerToken > 0 {
			add("KV cache for batch %d x %d tokens (prompt + generated) in %s", r.Batch, r.SeqLen, kvDtypeName(r))
		}
		add("peak includes the largest checkpoint tensor copied while the weights load")
	}
	out = append(out, techniqueNotes(m, r)...)
	if m.attnSoftcap && r.Attention != "eager" {
		add("%s uses attention logit soft-capping, which fused SDPA/flash kernels do not apply: the attention scores are materialised as in eager mode", m.Architecture)
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

// weightBytes returns the bytes of all weights as stored for the job (before sharding).
func (m *Model) weightBytes(r *resolved) float64 {
	if m.ckpt != nil && r.Quant.Quantized() {
		return m.ckpt.weightBytes(m, r.store)
	}
	nonLinear := float64(m.embedParams+m.otherParams) + m.frameworkHead(r)
	if r.quantB == 0 {
		return (nonLinear + float64(m.linearParams)) * r.store
	}
	q := float64(m.linearParams) * r.quantB
	if r.Quant == "int8" {
		for _, mod := range m.modules {
			q += float64(mod.out*mod.count) * 4 // LLM.int8 per-row fp32 scale (SCB)
		}
	}
	return nonLinear*r.store + q
}

// dequantTransient is the 16-bit copy of one quantized weight that bitsandbytes' 4-bit
// matmul makes on every call with more than one token (MatMul4Bit: F.linear(A,
// dequantize_4bit(B).to(A.dtype).t()), forward and backward): the largest quantized weight
// sets it.
func (m *Model) dequantTransient(r *resolved) float64 {
	if r.Quant != "nf4" && r.Quant != "fp4" {
		return 0
	}
	var largest float64
	for _, mod := range m.modules {
		largest = math.Max(largest, float64(mod.in*mod.out))
	}
	return largest * r.b
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
		if contains(r.targets, mod) {
			return true
		}
	}
	return false
}

// layerBytes is the activation memory one layer keeps for the backward pass with tokens =
// batch*seq tokens: per-token tensors plus the attention scores of eager attention.
func (r *resolved) layerBytes(m *Model, s *stack, tokens, seq, kvSeq float64) float64 {
	var perTok float64
	for _, e := range s.entries {
		switch {
		case e.mask:
			perTok += float64(e.elems) // 1-byte dropout masks
		case e.mods != nil && !r.needsInput(e.mods):
		case e.mods != nil && r.fp8Training():
			perTok += float64(e.elems) // fp8 training saves linear inputs as their fp8 casts
		case e.fp32:
			perTok += float64(e.elems) * 4
		default:
			perTok += float64(e.elems) * r.b
		}
	}
	if m.pyGELU > 0 && r.Framework == FrameworkHF && s == &m.dec {
		// transformers' NewGELUActivation, 0.5*x*(1+tanh(c*(x+0.044715*x^3))), keeps tanh's
		// output, 0.5*x and (1+tanh) beside its input (see actEntry in model.go).
		perTok += 3 * float64(m.pyGELU) * r.b
	}
	eager := r.Attention == "eager" || m.attnSoftcap
	// The attention kernel keeps q, k, v and its output. Hugging Face repeats grouped K/V
	// heads to the query heads before eager and SDPA attention (repeat_kv); FlashAttention-2
	// reads the grouped heads directly.
	kv := float64(s.qDim)
	if r.Attention == "flash" && !m.attnSoftcap {
		kv = float64(s.kvDim)
	}
	attn := float64(2*s.qDim)*r.b + 2*kv*r.b
	if s.cross {
		attn *= 2
	}
	// LoRA dropout: each adapted module applies its own dropout to its input before lora_A,
	// which keeps the dropped-out copy (compute dtype) and a 1-byte mask.
	perTok += r.loraDropout / float64(m.totalLayers())
	total := perTok*tokens + attn*tokens
	if eager {
		total += r.scoreBytes(s, seq, seq)
		if s.cross {
			total += r.scoreBytes(s, seq, kvSeq)
		}
	}
	return total
}

// scoreBytes is what eager attention keeps per layer: the softmax output (in fp32 when the
// implementation upcasts, then a copy in the compute dtype for the matmul with V) and,
// with attention dropout, a 1-byte mask plus the dropped-out probabilities.
func (r *resolved) scoreBytes(s *stack, q, k float64) float64 {
	per := r.b
	if s.softmaxFP32 && r.b < 4 {
		per = 4 + r.b
	}
	if s.attnDropout {
		per += 1 + r.b
	}
	return float64(r.Batch) * float64(s.heads) * q * k * per
}

// trainMem is a training job's memory per GPU in bytes, filled step by step by
// estimateTraining.
type trainMem struct {
	weights, adapters, autocastCache, gathered float64
	grads, opt, stepTemp                       float64
	act, ws, cpu                               float64
}

// estimateTraining sums a training job's memory: weights, gradients and optimizer states,
// then sharding and offload move parts of them, then activations and workspace.
func estimateTraining(m *Model, r *resolved) (Breakdown, float64) {
	var t trainMem
	t.trainWeights(m, r)
	t.trainGrads(m, r)
	t.optimizerStates(m, r)
	t.shard(m, r)
	t.offload(m, r)
	t.activations(m, r)
	bd := Breakdown{Weights: t.weights + t.adapters + t.gathered + r.fp8WeightCache(m), Gradients: t.grads, Optimizer: t.opt,
		Activations: t.act, Workspace: t.ws}
	if !r.gradAccum {
		bd = t.peakWithoutAccumulation(bd) // framework.go
	}
	return bd, t.cpu
}

// amp reports plain PyTorch AMP: mixed precision without ZeRO/FSDP, which keeps fp32
// weights and gradients.
func (r *resolved) amp() bool { return r.mixed && !r.Shard.Sharded() }

// trainWeights: the stored weights, autocast's half copies and the LoRA adapters.
func (t *trainMem) trainWeights(m *Model, r *resolved) {
	P, T := float64(m.params), float64(r.trainable)
	full := r.Task == TaskFullFT
	t.weights = m.weightBytes(r)
	if full && r.amp() {
		// fp32 model + autocast's cached half copies of trainable weights, which live until
		// the forward pass leaves the autocast region (torch.autocast caches casts of leaf
		// tensors that require grad; frozen weights are cast on the fly).
		t.autocastCache = P * 2
		t.weights = P*4 + t.autocastCache
	}
	if !full && r.amp() && r.store == 4 && r.quantB == 0 && !r.GradCkpt {
		// A frozen fp32 base under autocast: every linear layer's half-precision cast of its
		// weight is saved by autograd for the backward pass (the input's gradient needs the
		// weight), so all casts live from their forward to their backward: +2 bytes per
		// linear weight (lm_head included; embeddings are looked up, not cast). Gradient
		// checkpointing recomputes the casts layer by layer instead. Measured on an H200
		// (issue 8, fit/testdata/measured_gpu.csv lora-m7-r8-mixed-s512: Mistral-7B LoRA r=8
		// bf16-mixed, fp32 base): 43.0 GiB allocated, 30.1 GiB estimated without this term,
		// 43.1 with it.
		t.autocastCache = float64(m.linearParams+m.headParams) * 2
		t.weights += t.autocastCache
	}
	if !full {
		ab := r.b
		if r.mixed || r.adapterFP32 {
			ab = 4
		}
		t.adapters = T * ab
	}
}

// trainGrads: gradients of the trainable parameters.
//
// Gradients are counted alongside the activations. With gradient accumulation (the
// usual recipe: LitGPT, HF Trainer with gradient_accumulation_steps > 1) or DDP buckets
// they persist through the next micro-batch's forward, and the sum is what is measured
// (calibration lit-hub-27, TinyLlama full-ft bf16 b4 s512 with accumulation: 13.13 GiB,
// estimate 12.84). A single micro-batch per step with zero_grad(set_to_none=True) peaks
// lower, since the gradients replace the activations during the backward pass (H200,
// measured_gpu.csv ft-tl-bf16true-b4-s512, same job without accumulation: 10.76 GiB):
// the estimate keeps the accumulation case, which errs on the side of fitting.
func (t *trainMem) trainGrads(m *Model, r *resolved) {
	gradB := r.b
	if r.amp() || (r.Task != TaskFullFT && (r.mixed || r.adapterFP32)) {
		gradB = 4
	}
	t.grads = float64(r.trainable) * gradB
	if r.optimInBwd {
		// torchtune optimizer_in_bwd: a hook steps and frees each parameter's gradient as
		// soon as it is computed, so at most the largest tensor's gradient is live.
		t.grads = math.Min(t.grads, float64(m.largestTensor)*gradB)
	}
}

// optimizerStates: the optimizer's states (+ fp32 master weights under ZeRO-style mixed
// precision) and the temporaries of its step.
func (t *trainMem) optimizerStates(m *Model, r *resolved) {
	T := float64(r.trainable)
	full := r.Task == TaskFullFT
	stateB := 4.0
	if !r.mixed && r.b == 2 && (full || !r.adapterFP32) {
		stateB = 2 // true bf16/fp16 training keeps the states in that dtype
	}
	switch r.Optimizer {
	case "adamw":
		t.opt = 2 * stateB * T                   // m and v
		t.stepTemp = stepTempBytes(m, r, stateB) // foreach AdamW materialises sqrt(v) for all params at once
	case "adamw-8bit", "paged-adamw-8bit":
		t.opt = 2 * T // 8-bit blockwise m and v (Dettmers et al. 2021)
	case "adafactor":
		t.opt = 4 * float64(m.factoredSize(r, full)) // factored second moment, no momentum (HF default beta1=None)
	case "sgd":
	case "sgd-momentum":
		t.opt = stateB * T
	}
	if r.mixed && !r.amp() {
		t.opt += 4 * T // fp32 master copy (ZeRO paper's 12 = 4 master + 8 Adam)
	}
	if !full && r.mixed && !r.amp() {
		t.opt -= 4 * T // adapters are already fp32: no separate master copy
	}
}

// gatherCap is what ZeRO-3/FSDP keep gathered: the layer being computed and the one
// prefetched, or DeepSpeed's stage3_max_live_parameters when larger.
func gatherCap(m *Model, r *resolved) float64 {
	// FSDP MixedPrecision(param_dtype=bf16) all-gathers the unsharded parameters in the
	// compute dtype (torch.distributed.fsdp.MixedPrecision docs: full precision only
	// outside forward/backward, in the shards); DeepSpeed's bf16/fp16 modes hold the
	// parameters in 16 bits.
	gatherB := r.store
	if r.mixed {
		gatherB = r.b
	}
	layerBytes := float64(m.dec.layerParams) * gatherB
	if r.quantB > 0 {
		layerBytes = float64(m.dec.layerParams) * r.quantB
	}
	capB := 2 * layerBytes
	if r.Shard == "zero3" {
		capB = math.Max(capB, zero3MaxLiveParams*gatherB)
	}
	return capB
}

// shard divides states by the GPU count: ZeRO-1 the optimizer, ZeRO-2 also gradients,
// ZeRO-3/FSDP also parameters, which are gathered a layer or two at a time.
func (t *trainMem) shard(m *Model, r *resolved) {
	g := float64(r.world()) // every GPU of every node (nodes.go)
	switch r.Shard {
	case "zero1":
		t.opt /= g
		t.stepTemp /= g
	case "zero2":
		t.opt /= g
		t.grads /= g
		t.stepTemp /= g
	case "zero3", "fsdp":
		t.opt /= g
		t.grads /= g
		t.stepTemp /= g
		fullW := t.weights
		t.weights /= g
		t.adapters /= g
		t.gathered = math.Min(fullW-t.weights, gatherCap(m, r))
	}
}

// offload moves states (and parameters) to host memory; loading the checkpoint holds one
// shard in host memory on every GPU's process.
func (t *trainMem) offload(m *Model, r *resolved) {
	g, T := float64(r.GPUs), float64(r.trainable)
	switch r.Offload {
	case "optimizer":
		t.cpu += t.opt*g + T*4 // states and fp32 gradients for the CPU Adam (ZeRO-Offload)
		t.opt, t.stepTemp, t.grads = 0, 0, 0
	case "optimizer+params":
		t.cpu += t.opt*g + T*4 + t.weights*g + t.adapters*g
		t.opt, t.stepTemp, t.grads = 0, 0, 0
		t.weights, t.adapters = 0, 0
		t.gathered = math.Min(m.weightBytes(r), gatherCap(m, r))
	}
	t.cpu += math.Min(m.weightBytes(r), checkpointShardBytes) * g
}

// activations: what every layer keeps for backward, the embedding output, and the
// workspace of logits and loss, DDP buckets and the optimizer step.
func (t *trainMem) activations(m *Model, r *resolved) {
	B, S := float64(r.Batch), float64(r.SeqLen)
	tokens := B * S
	t.act = stackActivations(m, r, &m.dec, tokens, S, S)
	if m.enc != nil {
		t.act += stackActivations(m, r, m.enc, tokens, S, S)
	}
	t.act += tokens * float64(m.hidden) * r.b // embedding output
	// Logits and loss (transformers >= 4.46 ForCausalLMLoss): the LM head's output in the
	// compute dtype (kept by the model output), its fp32 upcast, the fp32 log-softmax that
	// cross-entropy keeps for backward, and the fp32 gradient of the logits.
	if m.Kind == KindCausalLM || m.Kind == KindSeq2Seq || m.Kind == KindParams {
		perTok := r.b + 4 + 4
		if r.b < 4 {
			perTok += 4
		}
		if m.logitSoftcap {
			perTok += 2 * 4 // tanh soft-capping keeps its fp32 input and output
		}
		if m.Kind == KindParams {
			perTok = genericLossBytes(r.b) // no known implementation: the published count
		}
		if r.chunkedLoss {
			// Chunked head and loss keep every chunk's logits (compute dtype) and the
			// log-softmax cross-entropy saves for backward: LitGPT's chunked_cross_entropy
			// runs on the bf16 chunks, torchtune's CEWithChunkedOutputLoss upcasts each chunk
			// to fp32 first. No fp32 copy of the whole logits exists, but autograd runs every
			// chunk's loss backward (later sequence numbers first) before any chunk's head
			// backward, so all the logits' gradients (compute dtype) are live at once.
			perTok = r.b + r.b + r.b
			if r.Framework == FrameworkTorchtune {
				perTok = r.b + 4 + r.b
			}
		}
		t.ws = lossTokens(m, r, tokens) * float64(m.vocab) * perTok
		if r.Loss == "fused-linear" {
			t.ws += tokens * float64(m.hidden) * r.b // the input gradient the chunks accumulate into
		}
	}
	t.ws += m.dequantTransient(r)
	if r.GPUs > 1 && !r.Shard.Sharded() {
		t.ws += t.grads // DDP gradient buckets
	}
	// The optimizer step runs after the activations (and the autocast cache) are freed: it
	// only raises the peak when its temporaries exceed them.
	if extra := t.stepTemp - t.act - t.ws - t.autocastCache; extra > 0 && r.gradAccum {
		t.ws += extra
	}
}

func stackActivations(m *Model, r *resolved, s *stack, tokens, seq, kvSeq float64) float64 {
	one := r.layerBytes(m, s, tokens, seq, kvSeq)
	if r.GradCkpt {
		// Checkpointing keeps each layer's input and recomputes one layer at a time during
		// backward (Chen et al. 2016; HF gradient_checkpointing_enable).
		return float64(s.layers)*tokens*float64(s.hidden)*r.b + one
	}
	return float64(s.layers) * one
}

// factoredSize is the number of Adafactor second-moment elements: a row and a column
// vector per weight matrix (Shazeer & Stern 2018), a full vector for other parameters.
func (m *Model) factoredSize(r *resolved, full bool) int64 {
	var n int64
	for _, mod := range m.modules {
		if full {
			n += (mod.in + mod.out) * mod.count
		} else if contains(r.targets, mod.name) {
			rk := int64(r.LoRARank)
			n += (rk + mod.in + rk + mod.out) * mod.count
		}
	}
	if full {
		n += m.otherParams + 2*(m.vocab+m.hidden)
	}
	return n
}

func estimateInference(m *Model, r *resolved) Breakdown {
	var bd Breakdown
	g := float64(r.GPUs)
	tp := r.Shard == "tp" && r.GPUs > 1
	weights := m.weightBytes(r)
	B, S := float64(r.Batch), float64(r.SeqLen)
	tokens := B * S
	// KV cache: keys and values for every layer and token. Grouped-query and multi-query
	// attention store only the KV heads; MLA stores its compressed latent.
	// Windowed layers keep at most their window (window.go).
	kv := m.kvElems(B, S) * r.kvB
	if m.Kind == KindEncoder {
		kv = 0
	}
	// Prefill temporaries of one layer at a time (nothing is kept for backward): the widest
	// of the attention block (normed input, q, k, v, output) and the MLP (normed input and
	// the intermediate tensors of the activation).
	s := &m.dec
	inter := float64(0)
	for _, e := range s.entries {
		if e.elems > s.hidden*2 && !e.fp32 && !e.mask {
			inter = math.Max(inter, float64(e.elems))
		}
	}
	attnW := float64(s.hidden + 2*s.qDim + 2*s.qDim)
	mlpW := float64(s.hidden) + 3*inter
	if s.plainMLP {
		mlpW = float64(s.hidden) + 2*inter // the up projection's output and the activation's
	}
	ws := tokens * math.Max(attnW, mlpW) * r.b
	if r.Attention == "eager" || m.attnSoftcap {
		per := 2 * r.b
		if s.softmaxFP32 && r.b < 4 {
			// softmax(scores, dtype=float32) first casts its half-precision input to fp32 and
			// then writes an fp32 output, so three copies of the s x s scores are live at
			// once: half + fp32 input + fp32 output. Measured on an H200 (issue 8,
			// measured_gpu.csv): TinyLlama eager prefill b8 s2048 12.71 GiB allocated (9.0
			// estimated with 4+2 bytes, 12.9 with 4+4+2); Llama-2-7B b1 s4096 19.69 (17.8
			// before, 19.8 after).
			per = r.b + 4 + 4
		}
		ws += B * float64(s.heads) * S * S * per
	}
	// Logits of the last position only (generate() slices before the LM head), upcast to fp32.
	if m.Kind != KindEncoder {
		ws += B * float64(m.vocab) * (r.b + 4)
	}
	if tokens > 1 {
		ws += m.dequantTransient(r) // the prefill's 4-bit matmuls dequantize (decode uses gemv_4bit)
	}
	if tp {
		weights /= g
		kvHeads := float64(s.kvDim) / (float64(s.qDim) / float64(s.heads))
		if m.Architecture == "deepseek_v2" || m.Architecture == "deepseek_v3" {
			kvHeads = 1 // the MLA latent is shared by all heads: replicated
		}
		kv /= math.Max(1, math.Min(g, kvHeads))
		ws /= g
	}
	// Loading copies each checkpoint tensor into its parameter; the largest one briefly
	// exists twice. Inference is small enough beside the weights for this to set the peak.
	load := float64(m.largestTensor) * r.store
	if tp {
		load /= g
	}
	if pp := float64(r.Nodes); pp > 1 { // pipeline stages across nodes hold 1/pp of the layers (nodes.go)
		weights, kv = weights/pp, kv/pp
	}
	bd.Weights = weights
	bd.KVCache = kv
	bd.Workspace = math.Max(ws, load-kv)
	return bd
}

func estimateImage(m *Model, r *resolved) (Breakdown, float64) {
	var bd Breakdown
	p := m.pipe
	var weights, vaeParams, largest float64
	for _, c := range p.Components {
		n := float64(c.Params)
		if c.Role == "vae" {
			vaeParams = n
		}
		w := n * r.store
		if r.quantB > 0 && c.Quantize {
			lf := c.LinearFraction
			w = n*lf*r.quantB + n*(1-lf)*r.store
		}
		weights += w
		largest = math.Max(largest, w)
	}
	W, H := float64(r.Resolution.Width), float64(r.Resolution.Height)
	imgs := float64(r.Images)
	batch := imgs
	if p.CFG {
		batch *= 2 // classifier-free guidance runs the conditional and unconditional batch together
	}
	ds := float64(p.VAE.LatentDownscale)
	lw, lh := W/ds, H/ds
	b := r.b
	var den float64
	eager := r.Attention == "eager"
	if p.dit != nil {
		// Diffusion transformer: image tokens are 2x2 latent patches, joined with the text
		// tokens. A block keeps ~16 hidden-width tensors alive (q, k, v, output, the 4x MLP
		// and its activation, the fused single-stream projection).
		t := (lw/float64(p.dit.patch))*(lh/float64(p.dit.patch)) + float64(p.TextTokens)
		den = batch * t * float64(p.dit.dim) * 16 * b
		if eager {
			den += batch * float64(p.dit.heads) * t * t * 2 * b
		}
	} else {
		for _, a := range p.attn {
			n := (lw / float64(a.downscale)) * (lh / float64(a.downscale))
			// Transformer block: q, k, v, output and the GEGLU feed-forward (8x channels in,
			// 4x out) ~ 12 channel-widths per token.
			x := batch * n * float64(a.channels) * 12 * b
			if eager {
				// diffusers' classic AttnProcessor: baddbmm scores and their softmax coexist.
				x += batch * float64(a.heads) * n * n * 2 * b
			}
			den = math.Max(den, x)
		}
		// ResNet blocks and the skip connections kept for the up path at full latent size.
		if len(p.attn) > 0 {
			den += batch * lw * lh * float64(p.attn[0].channels) * 10 * b
		}
	}
	// VAE decode: the last up block upsamples DecodeChannels to full resolution; the
	// upsampled tensor, its GroupNorm and SiLU outputs and the narrower conv output coexist
	// (diffusers UpDecoderBlock2D / ResnetBlock2D): ~3.5 full-size tensors per image.
	vb := b
	vaeExtra := 0.0
	if p.VAE.UpcastFP16 && r.Precision == "fp16" {
		vb = 4
		vaeExtra = vaeParams * 2 // the VAE is converted to fp32 for decoding
	}
	vImgs, vW, vH := vaeDecodeSize(m, r, imgs, W, H)
	vae := vImgs*vW*vH*float64(p.VAE.DecodeChannels)*vb*3.5 + vaeExtra
	bd.Weights = weights
	bd.Activations = math.Max(den, vae)
	var cpu float64
	if r.Offload == OffloadModel {
		// diffusers enable_model_cpu_offload keeps every component in host memory and moves
		// one whole component (text encoder, denoiser or VAE) to the GPU when it runs; the
		// GPU holds the largest one plus the activations of whichever phase peaks.
		bd.Weights, cpu = largest, weights
	}
	return bd, cpu
}

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}
