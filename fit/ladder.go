package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// The savings ladder: each standard memory technique, written as the job flags that ask
// for it, applied on its own to the job as asked. A rung is shown only when it lowers the
// need per GPU and its cheapest fitting offer costs less than the job's (or the job fits
// nowhere and the rung makes it fit); the others are listed as rejected with the reason.
// Rungs are applied through JobParams, the same parsers the CLI and the API bind with, so
// `picker recommend` with the job's flags plus a rung's flags gives the rung's answer.
// Plan is the cheapest combination of rungs, found greedily.

// LadderStep is one memory-saving change the job could make, estimated on its own
// against the original job.
type LadderStep struct {
	Change string `json:"change"`
	// Flags is how to ask for it on the command line, added to the job's own flags.
	Flags          string  `json:"flags"`
	DeviceTotalGiB float64 `json:"device_total_gib"`
	// NeedPerGPUGiB is device_total_gib with headroom at the GPU count of Cheapest.
	NeedPerGPUGiB float64 `json:"need_per_gpu_gib"`
	// Cheapest is the best offer with the change; nil when even then nothing fits.
	Cheapest *Fit `json:"cheapest"`
	// SavingPct compares Cheapest with the original job's best offer: per hour, or with
	// --rank job the job's dollars (JobCostUSD); nil when the original job fits nowhere.
	SavingPct *float64 `json:"saving_pct"`
	// Slowdown is the job's time with the change over its time without (1.33: a third
	// slower; below 1: faster), from the time model and the cited factors it lacks.
	Slowdown float64 `json:"slowdown"`
	// JobCostUSD (--rank job) is Cheapest's job cost with the slow-down applied.
	JobCostUSD *float64 `json:"job_cost_usd,omitempty"`
	Tradeoff   string   `json:"tradeoff"`
}

// RejectedStep is a rung that applies to the job but would not save money.
type RejectedStep struct {
	Change string `json:"change"`
	Flags  string `json:"flags"`
	Reason string `json:"reason"`
}

// Plan is the cheapest combination of ladder rungs: its flags, added to the job's,
// reproduce its need and offer.
type Plan struct {
	Changes []string `json:"changes"`
	LadderStep
}

// flagVal is one job flag a rung sets; a switch is written bare when its value is "true".
type flagVal struct{ name, value string }

func (f flagVal) String() string {
	if f.value == "true" && jobParam(f.name) != nil && jobParam(f.name).Bool {
		return "--" + f.name
	}
	return "--" + f.name + " " + f.value
}

func flagString(fs []flagVal) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, " ")
}

func jobParam(name string) *JobParam {
	i := slices.IndexFunc(JobParams, func(p JobParam) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return &JobParams[i]
}

// applyFlags sets fs on a copy of j through JobParams. A flag this build does not know
// (a rung written for a flag another change adds) is an error: the rung does not apply.
func applyFlags(j Job, fs []flagVal) (Job, error) {
	for _, f := range fs {
		p := jobParam(f.name)
		if p == nil {
			return j, fmt.Errorf("no job flag --%s", f.name)
		}
		if err := p.Set(&j, f.value); err != nil {
			return j, err
		}
	}
	return j, nil
}

// mergeFlags is a then b, a later value of a flag replacing an earlier one in place.
func mergeFlags(a, b []flagVal) []flagVal {
	out := slices.Clone(a)
	for _, f := range b {
		if i := slices.IndexFunc(out, func(g flagVal) bool { return g.name == f.name }); i >= 0 {
			out[i] = f
		} else {
			out = append(out, f)
		}
	}
	return out
}

// rungCtx is what a rung decides from: the model and the job resolved at one GPU count.
type rungCtx struct {
	m   *Model
	res *Result // the job as asked, resolved
	// multiGPU: offers with several GPUs can run the job sharded (not pinned to one GPU).
	multiGPU bool
}

// rung is one technique: the flags that ask for it on this job (nil: not applicable), its
// trade-off, and its slow-down given the time model's ratio (0 when unknown).
type rung struct {
	name     string
	flags    func(c rungCtx) []flagVal
	tradeoff string
	slow     func(modelled float64, base, step *Result, m *Model) float64
}

func fv(kv ...string) []flagVal {
	out := make([]flagVal, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, flagVal{kv[i], kv[i+1]})
	}
	return out
}

// Slow-downs. The time model (throughput.go) sees gradient checkpointing, LoRA and
// QLoRA (adapters, dequantization per micro-batch), precision, eager attention, ZeRO
// communication, offload over PCIe and the bytes a decode step reads, so a rung whose
// effect it sees takes its ratio (timeModel). The others state a cited factor: the whole
// slow-down where the time model says nothing (image generation is not timed) or gets
// the direction wrong (bitsandbytes LLM.int8 reads fewer bytes but decodes slower).
const (
	// int8Slowdown: bitsandbytes LLM.int8 decoding vs bf16, BLOOM-176B on 8 x A100, batch
	// 1: 286.56 vs 230.38 ms/token (Hugging Face blog "Incredibly Fast BLOOM Inference with
	// DeepSpeed and Accelerate", 2022): 1.24.
	int8Slowdown = 1.24
	// nf4ComputeSlowdown: bitsandbytes NF4 in compute-bound work (a diffusion denoiser)
	// dequantizes each weight per matmul: 1.38-1.57 x fp16 latency measured on a T4
	// (earino.github.io applied-deep-learning, "Your int8 quantization is 2.5x slower").
	nf4ComputeSlowdown = 1.5
	// modelOffloadSlowdown: diffusers model CPU offload moves every component over PCIe
	// once per prompt (FLUX.1-dev's 33 GB at ~25 GB/s is ~1.3 s) beside tens of seconds of
	// denoising (28 steps at 1024 px): about 10 % (diffusers docs, "Reduce memory usage":
	// model offloading has a "negligible impact" compared with sequential offload).
	modelOffloadSlowdown = 1.1
)

func timeModel(modelled float64, _, _ *Result, _ *Model) float64 { return orOne(modelled) }

func orOne(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	return x
}

func fixedSlow(f float64) func(float64, *Result, *Result, *Model) float64 {
	return func(float64, *Result, *Result, *Model) float64 { return f }
}

func causalLM(m *Model) bool {
	return m.Kind == KindCausalLM || m.Kind == KindSeq2Seq || m.Kind == KindParams
}

// trainingRungs, in the seeds' order of effort: configuration switches first, then
// changes to the recipe, then to the method, then to the hardware layout.
var trainingRungs = []rung{
	{"SDPA/flash attention instead of eager", func(c rungCtx) []flagVal {
		if c.res.Job.Attention != "eager" {
			return nil
		}
		return fv("attention", "sdpa")
	}, "same results; fused kernels never materialise the s×s attention scores (FlashAttention, Dao et al. 2022) and run faster", timeModel},
	{"fused AdamW step", func(c rungCtx) []flagVal {
		if c.res.Job.Optimizer != "adamw" || c.res.Job.OptimizerStep != "foreach" {
			return nil
		}
		return fv("optimizer-step", "fused")
	}, "torch.optim.AdamW(fused=True): same update, no step temporaries; helps when the optimizer step sets the peak", timeModel},
	{"8-bit AdamW (bitsandbytes)", func(c rungCtx) []flagVal {
		if c.res.Job.Optimizer != "adamw" {
			return nil
		}
		return fv("optimizer", "adamw-8bit")
	}, "bnb.optim.AdamW8bit: m and v in 8-bit blocks, 2 instead of 8 bytes per trainable parameter; matches 32-bit Adam on fine-tuning (Dettmers et al. 2021); paged-adamw-8bit also survives memory spikes", timeModel},
	{"fused linear cross-entropy", func(c rungCtx) []flagVal {
		if !causalLM(c.m) || c.res.Job.Loss == "fused-linear" {
			return nil
		}
		return fv("loss", "fused-linear")
	}, "Liger-Kernel LigerFusedLinearCrossEntropyLoss: same loss, the LM head's logits and their gradient computed a chunk at a time in the forward pass (large vocabularies, long sequences)", timeModel},
	{"bf16 mixed precision", func(c rungCtx) []flagVal {
		if c.res.Job.Precision != "fp32" {
			return nil
		}
		return fv("precision", "bf16-mixed")
	}, "tensor-core speed; needs bf16 (Ampere or newer; fp16-mixed with loss scaling elsewhere); usually no quality loss", timeModel},
	{"pure bf16 weights and optimizer states", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Task != TaskFullFT || !(j.Precision.Mixed() || j.Precision == "fp32") {
			return nil
		}
		return fv("precision", "bf16")
	}, "numerics: updates below bf16's 8-bit mantissa round away over long runs; use Kahan summation or stochastic rounding (torchao AdamW bf16_stochastic_round, LitGPT bf16-true recipes) and check the loss curve", timeModel},
	{"frozen base in bf16 for LoRA", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Task != TaskLoRA || !j.Precision.Mixed() {
			return nil
		}
		return fv("precision", "bf16")
	}, "the frozen weights loaded in bf16 instead of fp32, as PEFT/TRL recipes do (the framework's adapter dtype applies); same adapters, no quality loss", timeModel},
	{"micro-batch 1 with gradient accumulation", func(c rungCtx) []flagVal {
		if c.res.Job.Batch <= 1 {
			return nil
		}
		return fv("batch", "1")
	}, "same effective batch through gradient_accumulation_steps; same FLOPs in smaller matmuls", timeModel},
	{"gradient checkpointing", func(c rungCtx) []flagVal {
		if c.res.Job.GradCkpt {
			return nil
		}
		return fv("grad-ckpt", "true")
	}, "recomputes each layer's forward in the backward pass (Chen et al. 2016): one more forward pass", timeModel},
	{"LoRA instead of a full fine-tune", func(c rungCtx) []flagVal {
		if c.res.Job.Task != TaskFullFT {
			return nil
		}
		return fv("task", "lora")
	}, "trains low-rank adapters only (Hu et al. 2021); close to full fine-tuning for most adaptation tasks, weaker for large domain shifts", timeModel},
	{"QLoRA (4-bit NF4 base weights)", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Task != TaskFullFT && j.Task != TaskLoRA {
			return nil
		}
		f := fv("task", "qlora")
		if j.Quant.Quantized() && !j.Quant.FourBit() {
			f = append(f, fv("quant", "nf4")...)
		}
		if j.Precision == "fp32" {
			f = append(f, fv("precision", "bf16-mixed")...)
		}
		return f
	}, "bitsandbytes dequantizes the base weights every micro-batch; slightly less accurate than LoRA on 16-bit weights (Dettmers et al. 2023)", timeModel},
	{"ZeRO-2 across the instance's GPUs", func(c rungCtx) []flagVal {
		if !c.multiGPU || c.res.Job.Shard.Sharded() {
			return nil
		}
		return fv("shard", "zero2")
	}, "gradients and optimizer states split across the GPUs; same communication volume as DDP (Rajbhandari et al. 2020, §7)", timeModel},
	{"ZeRO-3 / FSDP across the instance's GPUs", func(c rungCtx) []flagVal {
		s := c.res.Job.Shard
		if !c.multiGPU || s == "zero3" || s == "fsdp" {
			return nil
		}
		return fv("shard", "zero3")
	}, "parameters split too, gathered layer by layer: 1.5× DDP's communication (Rajbhandari et al. 2020, §7), hidden behind compute on NVLink, not over PCIe", timeModel},
	{"CPU offload of optimizer states (ZeRO-Offload)", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Offload.Enabled() {
			return nil
		}
		if !j.Shard.Sharded() {
			return fv("shard", "zero2", "offload", "optimizer")
		}
		return fv("offload", "optimizer")
	}, "optimizer states and the step on the host (DeepSpeed CPU-Adam): needs host RAM; gradients and parameters cross PCIe every step", timeModel},
	{"CPU offload of parameters too (ZeRO-Infinity / FSDP CPU offload)", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Offload == "optimizer+params" {
			return nil
		}
		if j.Shard != "zero3" && j.Shard != "fsdp" {
			return fv("shard", "zero3", "offload", "optimizer+params")
		}
		return fv("offload", "optimizer+params")
	}, "parameters also wait in host RAM and stream in layer by layer in the forward and backward passes: PCIe-bound", timeModel},
}

// inferenceRungs for language models.
var inferenceRungs = []rung{
	{"SDPA/flash attention instead of eager", trainingRungs[0].flags, trainingRungs[0].tradeoff, timeModel},
	{"fp8 KV cache", func(c rungCtx) []flagVal {
		return fv("kv-cache-dtype", "fp8") // applies where the fp8 change (issue 13) adds the flag
	}, "vLLM kv_cache_dtype=fp8: half the KV cache; small accuracy cost, needs fp8 support (Ada, Hopper, Blackwell)", timeModel},
	{"smaller batch", func(c rungCtx) []flagVal {
		if c.res.Job.Batch <= 1 {
			return nil
		}
		return fv("batch", fmt.Sprint(c.res.Job.Batch/2))
	}, "half the sequences at once: half the KV cache, lower throughput", timeModel},
	{"shorter context", func(c rungCtx) []flagVal {
		if c.res.Job.SeqLen < 1024 {
			return nil
		}
		return fv("seq-len", fmt.Sprint(c.res.Job.SeqLen/2))
	}, "prompt + output limited to half the tokens: half the KV cache", timeModel},
	{"fp8 weights", func(c rungCtx) []flagVal {
		if c.res.Job.Quant.Quantized() {
			return nil
		}
		return fv("quant", "fp8") // applies where the fp8 change (issue 13) adds --quant fp8
	}, "fp8 e4m3 weights (vLLM, TensorRT-LLM): half the weight memory, near-bf16 quality; needs Ada, Hopper or Blackwell", timeModel},
	{"int8 weights (LLM.int8)", func(c rungCtx) []flagVal {
		if c.res.Job.Quant.Quantized() {
			return nil
		}
		return fv("quant", "int8")
	}, "bitsandbytes LLM.int8: half the weight memory, quality close to bf16, slower matmuls (outlier decomposition)", fixedSlow(int8Slowdown)},
	{"4-bit weights (AWQ/GPTQ int4)", func(c rungCtx) []flagVal {
		if c.res.Job.Quant.FourBit() {
			return nil
		}
		return fv("quant", "int4")
	}, "a quarter of the weight memory; a small quality loss; decoding reads fewer bytes per token (AWQ/Marlin kernels)", timeModel},
}

// imageRungs for diffusion pipelines.
var imageRungs = []rung{
	{"SDPA attention instead of eager", trainingRungs[0].flags, "same images; diffusers' AttnProcessor2_0 never materialises the token×token scores", timeModel},
	{"VAE slicing and tiling", func(c rungCtx) []flagVal {
		if c.res.Job.VAETiling {
			return nil
		}
		return fv("vae-tiling", "true")
	}, "decodes one image at a time in overlapping tiles (enable_vae_slicing, enable_vae_tiling); decode is a small part of the generation time", fixedSlow(1)},
	{"bf16 pipeline (no fp32 VAE upcast)", func(c rungCtx) []flagVal {
		if c.res.Job.Precision != "fp16" || !c.m.pipe.VAE.UpcastFP16 {
			return nil
		}
		return fv("precision", "bf16")
	}, "SDXL's VAE overflows in fp16 and decodes in fp32; bf16 (or the fp16-fix VAE) does not; needs bf16 (Ampere or newer)", fixedSlow(1)},
	{"model CPU offload", func(c rungCtx) []flagVal {
		if c.res.Job.Offload.Enabled() {
			return nil
		}
		return fv("offload", "model")
	}, "pipe.enable_model_cpu_offload(): components wait in host RAM and move to the GPU one at a time; needs host RAM for the whole pipeline", fixedSlow(modelOffloadSlowdown)},
	{"fp8 transformer", func(c rungCtx) []flagVal {
		if c.res.Job.Quant.Quantized() {
			return nil
		}
		return fv("quant", "fp8") // applies where the fp8 change (issue 13) adds --quant fp8
	}, "fp8 denoiser weights (torchao/optimum-quanto): half the weight memory, needs Ada, Hopper or Blackwell", timeModel},
	{"nf4 transformer and text encoder", func(c rungCtx) []flagVal {
		if c.res.Job.Quant.FourBit() {
			return nil
		}
		return fv("quant", "nf4")
	}, "bitsandbytes NF4 denoiser and T5 (diffusers BitsAndBytesConfig): about a quarter of their memory, slightly softer images, slower steps", fixedSlow(nf4ComputeSlowdown)},
}

// trial is a job judged on the offers: its best offer and what it costs.
type trial struct {
	flags []flagVal
	job   Job
	ev    *evaluator
	best  *Fit
	res   *Result // at best's GPU count, or at the reference count when nothing fits
	cost  float64 // the ranking's figure with the slow-down applied; +Inf when nothing fits
	err   error
	// flagErr: this build has no such flag or value (a rung for another change's flag).
	flagErr error
}

// ladderRun evaluates rungs and plans for one Recommend call.
type ladderRun struct {
	in     *RecommendInput
	caps   []*gpuCaps
	base   trial
	rungs  []rung
	ctx    rungCtx
	trials map[string]*trial
	// narrowed: only offers cheaper than the job's best are judged (cheaperOnly).
	narrowed bool
}

func newLadderRun(in *RecommendInput, caps []*gpuCaps, baseEv *evaluator, baseFits []Fit, baseRes *Result) *ladderRun {
	lr := &ladderRun{in: in, caps: caps, trials: map[string]*trial{}}
	lr.base = trial{job: in.Job, ev: baseEv, res: baseRes, cost: math.Inf(1)}
	if len(baseFits) > 0 {
		b := baseFits[0]
		lr.base.best = &b
		lr.base.res = baseEv.variant(b.vk).res
		lr.base.cost = lr.costOf(&b, 1)
	}
	switch {
	case in.Job.IsTraining():
		lr.rungs = trainingRungs
	case in.Model.IsImageModel():
		lr.rungs = imageRungs
	default:
		lr.rungs = inferenceRungs
	}
	lr.ctx = rungCtx{m: in.Model, res: baseRes, multiGPU: !in.PinGPUs || in.Job.GPUs > 1}
	lr.cheaperOnly(in, caps)
	return lr
}

// cheaperOnly narrows the offers the rungs are judged on, when ranking by the hour and
// the job fits somewhere, to those cheaper than its best offer: only they can make a
// rung save, and a rung's best offer, when it saves, is among them (so its answer is
// the one `picker recommend` with its flags gives over every offer). The ladder then
// evaluates a few offers instead of every one for each of its rungs and plan steps.
func (lr *ladderRun) cheaperOnly(in *RecommendInput, caps []*gpuCaps) {
	if lr.base.best == nil || in.Rank == RankJob {
		return
	}
	sub := *in
	sub.Offers, sub.facts = nil, nil
	lr.caps = nil
	for i := range in.Offers {
		if in.Offers[i].PriceUSDHr < lr.base.best.PriceUSDHr {
			sub.Offers = append(sub.Offers, in.Offers[i])
			lr.caps = append(lr.caps, caps[i])
		}
	}
	lr.in = &sub
	lr.narrowed = true
}

// costOf is a fit's figure in the ranking in use, with the slow-down the time model does
// not see (extra) applied to the job cost.
func (lr *ladderRun) costOf(f *Fit, extra float64) float64 {
	if lr.in.Rank == RankJob {
		if f.EstCostUSD == nil {
			return math.Inf(1)
		}
		return *f.EstCostUSD * extra
	}
	return f.PriceUSDHr
}

// try judges the job with flags fs added, memoised by the flags.
func (lr *ladderRun) try(fs []flagVal) *trial {
	key := flagString(fs)
	if t, ok := lr.trials[key]; ok {
		return t
	}
	t := &trial{flags: fs, cost: math.Inf(1)}
	lr.trials[key] = t
	j, err := applyFlags(lr.in.Job, fs)
	if err != nil {
		t.flagErr = err
		return t
	}
	t.job = j
	probe := j
	probe.NodesAuto = false
	if !lr.in.PinGPUs {
		probe.GPUs = 0
	}
	if t.res, t.err = Estimate(lr.in.Model, probe); t.err != nil {
		return t
	}
	t.ev = newEvaluator(lr.in, j, lr.caps)
	if best := rankFits(t.ev, 1); len(best) > 0 {
		t.best = &best[0]
		t.res = t.ev.variant(t.best.vk).res
	}
	return t
}

// hoursOn is the time model's run hours for ev's job at vk on offer f (an H100 when f's
// GPU lacks the figures); 0 when unknown (image generation is not timed).
func (lr *ladderRun) hoursOn(ev *evaluator, f *Fit) float64 {
	v := ev.variant(f.vk)
	if v.err != nil || v.res.Job.Task == TaskImageGen {
		return 0
	}
	spec, known := pricing.LookupGPU(f.GPUModel)
	if !known || spec.BandwidthGBs == nil {
		spec, _ = pricing.LookupGPU("H100")
	}
	c := &gpuCaps{known: true, spec: spec}
	g, ok := c.timeGPU(v.res.Job.Precision)
	if !ok {
		return 0
	}
	g.Count = float64(f.vk.gpus)
	if g.Count > 1 && InstanceGPULink(f.Provider, f.InstanceType) == 0 {
		g.LinkGBs = 0
	}
	tm := ev.timeModel(v)
	t, ok := tm.Estimate(&g)
	if !ok {
		return 0
	}
	tokens := lr.in.Tokens
	if tokens <= 0 {
		tokens = 1e9 // only ratios are used
	}
	return tm.JobSeconds(t, tokens, lr.in.Requests) / 3600
}

// path judges rungs applied in order: the combined job, its offer, and its slow-down as
// the product of each rung's factor over the time model's ratio for that step.
func (lr *ladderRun) path(idx []int) (*trial, []flagVal, float64, float64) {
	var fs []flagVal
	evs := []*evaluator{lr.base.ev}
	ctx := lr.ctx
	for k, i := range idx {
		add := lr.rungs[i].flags(ctx)
		if add == nil {
			return nil, nil, 0, 0
		}
		fs = mergeFlags(fs, add)
		t := lr.try(fs)
		if t.flagErr != nil || (t.err != nil && k < len(idx)-1) {
			return nil, nil, 0, 0
		}
		if t.err != nil {
			return t, fs, 0, 0
		}
		ctx.res = t.res
		evs = append(evs, t.ev)
	}
	final := lr.try(fs)
	if final.best == nil {
		return final, fs, 0, 0
	}
	// Slow-down per step on the final offer: the time model's ratio, times the rung's
	// factor where the rung says the model misses part of it.
	slow, extra := 1.0, 1.0
	prevH := lr.hoursOn(evs[0], final.best)
	prevRes := lr.base.res
	if v := evs[0].variant(final.best.vk); v.err == nil {
		prevRes = v.res
	}
	for k, i := range idx {
		ev := evs[k+1]
		v := ev.variant(final.best.vk)
		if v.err != nil {
			continue
		}
		h := lr.hoursOn(ev, final.best)
		modelled := 0.0
		if prevH > 0 && h > 0 {
			modelled = h / prevH
		}
		f := lr.rungs[i].slow(modelled, prevRes, v.res, lr.in.Model)
		slow *= f
		extra *= f / orOne(modelled)
		prevH, prevRes = h, v.res
	}
	return final, fs, slow, extra
}

// judge turns a path into a step and whether it saves money (with the reason when not).
func (lr *ladderRun) judge(name, tradeoff string, idx []int) (LadderStep, bool, string, bool) {
	t, fs, slow, extra := lr.path(idx)
	if t == nil {
		return LadderStep{}, false, "", false // not applicable
	}
	step := LadderStep{Change: name, Flags: flagString(fs), Tradeoff: tradeoff, Slowdown: round3(slow)}
	if t.err != nil {
		return step, false, "not a valid job: " + t.err.Error(), true
	}
	if t.best == nil {
		g := max(t.job.GPUs, 1)
		if !lr.in.PinGPUs && lr.ctx.multiGPU {
			g = maxLadderGPUs
		}
		if v := t.ev.variant(variantKey{g, false, 1}); v.err == nil {
			step.DeviceTotalGiB = v.res.DeviceTotalGiB
		}
		if lr.narrowed {
			// Judged where the job's best offer runs it: the same GPU count.
			bk := lr.base.best.vk
			if v, bv := t.ev.variant(bk), lr.base.ev.variant(bk); v.err == nil && bv.err == nil {
				step.DeviceTotalGiB = v.res.DeviceTotalGiB
				if round3(v.need) >= round3(bv.need)-1e-6 {
					return step, false, fmt.Sprintf("does not lower the need per GPU (%s GiB with it, %s without, %s)", num1(v.need), num1(bv.need), gpuCount(bk.gpus)), true
				}
				return step, false, fmt.Sprintf("no offer under the job's $%s/h fits with it (%s GiB per GPU %s)", num2(lr.base.cost), num1(v.need), gpuCount(bk.gpus)), true
			}
			return step, false, fmt.Sprintf("no offer under the job's $%s/h fits with it", num2(lr.base.cost)), true
		}
		return step, false, fmt.Sprintf("nothing fits even with it (%s GiB per GPU %s)", num1(step.DeviceTotalGiB), gpuCount(g)), true
	}
	b := *t.best
	step.Cheapest = &b
	step.DeviceTotalGiB = t.res.DeviceTotalGiB
	step.NeedPerGPUGiB = b.NeedPerGPUGiB
	cost := lr.costOf(&b, extra)
	if lr.in.Rank == RankJob && !math.IsInf(cost, 1) {
		c := round3(cost)
		step.JobCostUSD = &c
	}
	// The need per GPU, compared at the step's GPU count.
	if bv := lr.base.ev.variant(b.vk); bv.err == nil && b.NeedPerGPUGiB >= round3(bv.need)-1e-6 {
		return step, false, fmt.Sprintf("does not lower the need per GPU (%s GiB with it, %s without, %s)", num1(b.NeedPerGPUGiB), num1(bv.need), gpuCount(b.vk.gpus)), true
	}
	if lr.base.best == nil {
		return step, true, "", true // makes an unfittable job fit
	}
	if math.IsInf(lr.base.cost, 1) || math.IsInf(cost, 1) {
		return step, false, "job cost unknown (no datasheet figure for the GPU)", true
	}
	if !(cost < lr.base.cost-1e-9) {
		unit := "$/h"
		if lr.in.Rank == RankJob {
			unit = "job $"
		}
		return step, false, fmt.Sprintf("no cheaper offer: %s %s with it, %s without", unit, num2(cost), num2(lr.base.cost)), true
	}
	s := math.Round((lr.base.cost-cost)/lr.base.cost*1000) / 10
	if s <= 0 {
		return step, false, fmt.Sprintf("saves under 0.05 %% (%s vs %s)", num2(cost), num2(lr.base.cost)), true
	}
	step.SavingPct = &s
	return step, true, "", true
}

// ladder builds the helpful rungs, the rejected ones and the plan.
func ladder(in *RecommendInput, caps []*gpuCaps, baseEv *evaluator, baseFits []Fit, baseRes *Result) ([]LadderStep, []RejectedStep, *Plan) {
	lr := newLadderRun(in, caps, baseEv, baseFits, baseRes)
	steps, rejected := []LadderStep{}, []RejectedStep{}
	var applicable []int
	for i, r := range lr.rungs {
		step, ok, why, applies := lr.judge(r.name, r.tradeoff, []int{i})
		switch {
		case !applies:
			continue
		case ok:
			steps = append(steps, step)
		default:
			rejected = append(rejected, RejectedStep{Change: r.name, Flags: step.Flags, Reason: why})
		}
		applicable = append(applicable, i)
	}
	if len(steps) == 0 {
		return steps, rejected, nil
	}
	// A rung that saves nothing alone (checkpointing on a job whose optimizer states
	// dominate) can still save with others, so the plan searches every applicable rung.
	return steps, rejected, lr.plan(applicable)
}

// plan searches combinations of the applicable rungs greedily: add the rung that lowers the
// cost most while one does, then drop any rung the plan costs no more without. Ties go
// to the smaller slow-down, then to the earlier (less effort) rung.
func (lr *ladderRun) plan(applicable []int) *Plan {
	if len(applicable) == 0 {
		return nil
	}
	type cand struct {
		idx  []int
		step LadderStep
		cost float64
	}
	eval := func(idx []int) (cand, bool) {
		sorted := slices.Clone(idx)
		slices.Sort(sorted)
		step, ok, _, applies := lr.judge("", "", sorted)
		if !applies || !ok {
			return cand{}, false
		}
		c := math.Inf(1)
		if step.Cheapest != nil {
			c = lr.costOf(step.Cheapest, 1)
			if step.JobCostUSD != nil {
				c = *step.JobCostUSD
			}
		}
		return cand{sorted, step, c}, true
	}
	better := func(a, b cand) bool {
		if a.cost != b.cost {
			return a.cost < b.cost
		}
		return a.step.Slowdown < b.step.Slowdown
	}
	var cur *cand
	for {
		var next *cand
		for _, i := range applicable {
			if cur != nil && slices.Contains(cur.idx, i) {
				continue
			}
			var idx []int
			if cur != nil {
				idx = append(idx, cur.idx...)
			}
			c, ok := eval(append(idx, i))
			if !ok || (cur != nil && !(c.cost < cur.cost-1e-9)) {
				continue
			}
			if next == nil || better(c, *next) {
				next = &c
			}
		}
		if next == nil {
			break
		}
		cur = next
	}
	if cur == nil {
		return nil
	}
	// Drop rungs the plan does not need.
	for k := 0; k < len(cur.idx); {
		rest := slices.Delete(slices.Clone(cur.idx), k, k+1)
		if len(rest) > 0 {
			if c, ok := eval(rest); ok && c.cost <= cur.cost+1e-9 && c.step.Slowdown <= cur.step.Slowdown+1e-9 {
				cur = &c
				continue
			}
		}
		k++
	}
	p := &Plan{LadderStep: cur.step}
	for _, i := range cur.idx {
		p.Changes = append(p.Changes, lr.rungs[i].name)
	}
	p.Change = strings.Join(p.Changes, " + ")
	var trade []string
	for _, i := range cur.idx {
		trade = append(trade, lr.rungs[i].name+": "+lr.rungs[i].tradeoff)
	}
	p.Tradeoff = strings.Join(trade, "; ")
	return p
}

func gpuCount(g int) string {
	if g == 1 {
		return "on 1 GPU"
	}
	return fmt.Sprintf("at %d GPUs", g)
}
