package recommend

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// rungCtx is what a rung decides from: the model and the job resolved at one GPU count.
type rungCtx struct {
	m   *model.Model
	res *fit.Result // the job as asked, resolved
	// multiGPU: offers with several GPUs can run the job sharded (not pinned to one GPU).
	multiGPU bool
}

// rung is one technique: the flags that ask for it on this job (nil: not applicable), its
// trade-off, and its slow-down given the time model's ratio (0 when unknown).
type rung struct {
	name     string
	flags    func(c rungCtx) []flagVal
	tradeoff string
	slow     func(modelled float64, base, step *fit.Result, m *model.Model) float64
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

func timeModel(modelled float64, _, _ *fit.Result, _ *model.Model) float64 { return orOne(modelled) }

func orOne(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	return x
}

func fixedSlow(f float64) func(float64, *fit.Result, *fit.Result, *model.Model) float64 {
	return func(float64, *fit.Result, *fit.Result, *model.Model) float64 { return f }
}

func causalLM(m *model.Model) bool {
	return m.Kind == model.KindCausalLM || m.Kind == model.KindSeq2Seq || m.Kind == model.KindParams
}

// sdpaRung swaps eager attention for fused kernels, in training and inference alike.
var sdpaRung = rung{"SDPA/flash attention instead of eager", func(c rungCtx) []flagVal {
	if c.res.Job.Attention != "eager" {
		return nil
	}
	return fv("attention", "sdpa")
}, "same results; fused kernels never materialise the s×s attention scores (FlashAttention, Dao et al. 2022) and run faster", timeModel}

// trainingRungs, in the order of effort of the standard recipe (a smaller micro-batch with
// gradient accumulation, mixed precision, gradient checkpointing, LoRA, ZeRO/FSDP
// sharding or CPU offload, QLoRA), with picker's other rungs where they belong: the
// precision variants beside mixed precision, the drop-in kernel and optimizer swaps
// (attention, fused or 8-bit AdamW, fused cross-entropy) before checkpointing, which
// costs a forward pass.
var trainingRungs = []rung{
	{"micro-batch 1 with gradient accumulation", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Batch <= 1 {
			return nil
		}
		return fv("batch", "1", "grad-accum", strconv.Itoa(j.Batch*max(j.GradAccum, 1)))
	}, "same effective batch through gradient_accumulation_steps (the gradients are kept across micro-batches); same FLOPs in smaller matmuls, the optimizer step once per effective batch", timeModel},
	{"bf16 mixed precision", func(c rungCtx) []flagVal {
		if c.res.Job.Precision != "fp32" {
			return nil
		}
		return fv("precision", "bf16-mixed")
	}, "tensor-core speed; needs bf16 (Ampere or newer; fp16-mixed with loss scaling elsewhere); usually no quality loss", timeModel},
	{"pure bf16 weights and optimizer states", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Task != fit.TaskFullFT || !(j.Precision.Mixed() || j.Precision == "fp32") {
			return nil
		}
		return fv("precision", "bf16")
	}, "numerics: updates below bf16's 8-bit mantissa round away over long runs; use Kahan summation or stochastic rounding (torchao AdamW bf16_stochastic_round, LitGPT bf16-true recipes) and check the loss curve", timeModel},
	{"frozen base in bf16 for LoRA", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Task != fit.TaskLoRA || !j.Precision.Mixed() {
			return nil
		}
		return fv("precision", "bf16")
	}, "the frozen weights loaded in bf16 instead of fp32, as PEFT/TRL recipes do (the framework's adapter dtype applies); same adapters, no quality loss", timeModel},
	sdpaRung,
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
	{"gradient checkpointing", func(c rungCtx) []flagVal {
		if c.res.Job.GradCkpt {
			return nil
		}
		return fv("grad-ckpt", "true")
	}, "recomputes each layer's forward in the backward pass (Chen et al. 2016): one more forward pass", timeModel},
	{"LoRA instead of a full fine-tune", func(c rungCtx) []flagVal {
		if c.res.Job.Task != fit.TaskFullFT {
			return nil
		}
		return fv("task", "lora")
	}, "trains low-rank adapters only (Hu et al. 2021); close to full fine-tuning for most adaptation tasks, weaker for large domain shifts", timeModel},
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
	{"QLoRA (4-bit NF4 base weights)", func(c rungCtx) []flagVal {
		j := c.res.Job
		if j.Task != fit.TaskFullFT && j.Task != fit.TaskLoRA {
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
}

// inferenceRungs for language models.
var inferenceRungs = []rung{
	sdpaRung,
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
		j := c.res.Job
		if s := c.res.Serving; s != nil && s.MaxModelLenDefault && s.Engine.Spec().OneFullSequence && s.MaxModelLen > j.Batch*j.SeqLen {
			// vLLM's pool holds one default max_model_len sequence: reserve only the
			// workload's (serving.go).
			return fv("max-model-len", fmt.Sprint((j.SeqLen+15)/16*16))
		}
		if j.SeqLen < 1024 || j.PromptTokens+j.OutputTokens > 0 {
			return nil // the workload fixes the lengths (--prompt-tokens, --output-tokens)
		}
		return fv("seq-len", fmt.Sprint(j.SeqLen/2))
	}, "a shorter context per sequence (--seq-len, or vLLM's --max-model-len down to the workload's): a smaller KV cache", timeModel},
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
	{"SDPA attention instead of eager", sdpaRung.flags, "same images; diffusers' AttnProcessor2_0 never materialises the token×token scores", timeModel},
	{"VAE slicing and tiling", func(c rungCtx) []flagVal {
		if c.res.Job.VAETiling {
			return nil
		}
		return fv("vae-tiling", "true")
	}, "decodes one image at a time in overlapping tiles (enable_vae_slicing, enable_vae_tiling); decode is a small part of the generation time", fixedSlow(1)},
	{"bf16 pipeline (no fp32 VAE upcast)", func(c rungCtx) []flagVal {
		if c.res.Job.Precision != "fp16" || !c.m.Pipe.VAE.UpcastFP16 {
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
