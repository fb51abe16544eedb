package fit

import (
	"fmt"

	"github.com/pickergpu/picker/model"
)

// Framework values (CONTRACT --framework): the stack whose defaults fill what a job leaves
// unset. Every default below is taken from the stack's own code or recipes, cited where it
// is applied; an explicit flag always wins.
const (
	// FrameworkHF is Transformers Trainer + PEFT + TRL (as of 2026: transformers v5,
	// PEFT 0.17+, TRL 0.2x).
	FrameworkHF Framework = "hf"
	// FrameworkLitGPT is Lightning AI's LitGPT finetune/generate scripts and config_hub
	// recipes.
	FrameworkLitGPT Framework = "litgpt"
	// FrameworkTorchtune is PyTorch's torchtune recipes (single-device and distributed
	// LoRA/QLoRA/full fine-tune configs).
	FrameworkTorchtune Framework = "torchtune"
)

func (f Framework) orHF() Framework {
	if f == "" {
		return FrameworkHF
	}
	return f
}

// Gradient accumulation per framework, when --grad-accum is not given.
const (
	// litgptGlobalBatch: LitGPT's config_hub finetune recipes set global_batch_size: 16
	// and accumulate micro_batch_size batches up to it.
	litgptGlobalBatch = 16
	// torchtuneLoRAGradAccum: torchtune's LoRA/QLoRA configs set
	// gradient_accumulation_steps: 8 (full fine-tune configs 1).
	torchtuneLoRAGradAccum = 8
)

// Default LoRA dropout per framework.
const (
	// PEFT LoraConfig.lora_dropout defaults to 0.0 (peft/tuners/lora/config.py).
	hfLoRADropout = 0.0
	// LitGPT finetune/lora.py: lora_dropout: float = 0.05 (also every config_hub lora.yaml).
	litgptLoRADropout = 0.05
	// torchtune's LoRA component builders (lora_llama3_1_8b etc.): lora_dropout: float = 0.0,
	// and the recipes' configs set 0.0.
	torchtuneLoRADropout = 0.0
)

// resolveFramework fills the defaults the job's framework applies, before the precision,
// quantization and runtime steps fill the framework-independent ones, and records each
// applied default as an assumption (framework defaults are named "<framework> default:").
func resolveFramework(m *model.Model, r *resolved) error {
	r.Framework = r.Framework.orHF()
	asked := r.GradAccum // --grad-accum, 0 when not given
	lora := r.Task == TaskLoRA || r.Task == TaskQLoRA
	training := r.IsTraining()
	switch r.Framework {
	case FrameworkHF:
		if r.Task == TaskLoRA && r.Precision == "" && !r.Quant.Quantized() {
			// transformers v5 from_pretrained loads the checkpoint's dtype (dtype="auto" is
			// the default; bf16 for current LLM checkpoints), and PEFT/TRL's SFT recipes pass
			// torch_dtype=torch.bfloat16; Trainer bf16=True autocasts the adapters' matmuls.
			r.Precision = "bf16"
			r.addNote("hf default: LoRA loads the frozen base in bf16 (2 bytes/param; fp16 on GPUs without bf16), as transformers v5 from_pretrained(dtype=\"auto\") and TRL's SFT recipes do; use --precision bf16-mixed for an fp32 base under autocast")
		}
		if lora {
			// PEFT get_peft_model(autocast_adapter_dtype=True, the default since PEFT 0.12)
			// casts the adapters to fp32 even over a bf16/fp16 base.
			r.adapterFP32 = true
		}
		if r.Task == TaskQLoRA && !r.gradCkptSet {
			// peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=True):
			// the QLoRA recipes (PEFT docs, TRL SFT with a quantization config) call it, which
			// enables gradient checkpointing.
			r.GradCkpt = true
			r.addNote("hf default: QLoRA turns on gradient checkpointing (peft.prepare_model_for_kbit_training(use_gradient_checkpointing=True)); --grad-ckpt=false to turn it off")
		}
		if r.Task == TaskFullFT && r.Precision == "" {
			r.addNote("hf default: full fine-tune with Trainer bf16=True: PyTorch AMP over fp32 weights (bf16-mixed)")
		}
		if training && r.GradAccum == 0 {
			// TrainingArguments.gradient_accumulation_steps = 1 and Trainer's
			// model.zero_grad() (set_to_none=True): no gradient exists during the forward
			// pass; they replace the activations during backward.
			r.GradAccum = 1
			r.addNote("hf default: no gradient accumulation (Trainer gradient_accumulation_steps=1): gradients replace the activations in backward; the peak is the larger of the start of backward and the optimizer step")
		}
		if lora && r.LoRADropout == nil {
			r.setDropout(hfLoRADropout)
			r.addNote(hfDropoutNote)
		}
	case FrameworkLitGPT:
		// config_hub recipes: global_batch_size 16 over micro_batch_size 1-4: gradients
		// accumulate across micro-batches.
		r.gradAccum = training
		if training && r.GradAccum == 0 {
			r.GradAccum = (litgptGlobalBatch + max(r.Batch, 1) - 1) / max(r.Batch, 1)
		}
		if r.Precision == "" {
			// config_hub/finetune/*/{full,lora,qlora}.yaml: precision: bf16-true; generate
			// and chat default to bf16-true too.
			r.Precision = "bf16"
			if lora {
				r.addNote("litgpt default: bf16-true: weights, adapters, gradients and optimizer states in bf16 (config_hub precision: bf16-true)")
			} else {
				r.addNote("litgpt default: bf16-true: weights, gradients and optimizer states in bf16 (config_hub precision: bf16-true)")
			}
		}
		if training && r.Task != TaskImageGen && m.Kind != model.KindEncoder {
			// litgpt/finetune/*.py: model(input_ids, lm_head_chunk_size=128) with
			// chunked_cross_entropy(..., chunk_size=128).
			r.chunkedLoss = true
			r.addNote("litgpt default: chunked LM head and cross-entropy (lm_head_chunk_size=128): no full fp32 copy of the logits")
		}
		if lora && r.LoRADropout == nil {
			r.setDropout(litgptLoRADropout)
			r.addNote(litgptDropoutNote)
		}
		if r.Task == TaskQLoRA && r.Optimizer == "" {
			r.addNote("litgpt default: QLoRA swaps AdamW for bitsandbytes PagedAdamW (32-bit states in CUDA unified memory; counted as adamw here)")
		}
	case FrameworkTorchtune:
		// LoRA/QLoRA configs: gradient_accumulation_steps: 8 (full single-device configs use 1
		// with optimizer_in_bwd: True, and hold no gradients to accumulate).
		r.gradAccum = training
		if training && r.GradAccum == 0 {
			r.GradAccum = 1
			if lora {
				r.GradAccum = torchtuneLoRAGradAccum
			}
		}
		if r.Precision == "" {
			// recipes/configs/*: dtype: bf16 (torchtune trains in pure bf16; fp16 is rejected).
			r.Precision = "bf16"
			r.addNote("torchtune default: dtype bf16: weights, adapters, gradients and optimizer states in bf16 (configs' dtype: bf16)")
		}
		if training && !r.gradCkptSet {
			// enable_activation_checkpointing: True in the LoRA, QLoRA and full configs.
			r.GradCkpt = true
			r.addNote("torchtune default: activation checkpointing on (enable_activation_checkpointing: True)")
		}
		if training && m.Kind != model.KindEncoder {
			// loss: torchtune.modules.loss.CEWithChunkedOutputLoss (num_output_chunks=8).
			r.chunkedLoss = true
			r.addNote("torchtune default: chunked output and cross-entropy (CEWithChunkedOutputLoss, 8 chunks): the fp32 upcast is per chunk")
		}
		if r.Task == TaskQLoRA && !r.doubleQuantSet {
			// torchao NF4Tensor (used by torchtune's QLoRA) always quantizes its per-block
			// scalers: block_size=64, scaler_block_size=256, as QLoRA's double quantization.
			r.DoubleQuant = true
			r.addNote("torchtune default: NF4 via torchao's NF4Tensor, whose scalers are double-quantized (scaler_block_size=256)")
		}
		if r.Optimizer == "" {
			switch {
			case r.Task == TaskFullFT && r.GPUs <= 1:
				// llama3_1/8B_full_single_device.yaml: bitsandbytes.optim.PagedAdamW8bit with
				// optimizer_in_bwd: True (each gradient is applied and freed in backward).
				r.Optimizer = "paged-adamw-8bit"
				r.optimInBwd = true
				r.addNote("torchtune default: single-device full fine-tune: bitsandbytes PagedAdamW8bit with optimizer_in_bwd (no full set of gradients)")
			case training:
				// LoRA/QLoRA and distributed full configs: torch.optim.AdamW(fused=True).
				r.Optimizer = "adamw"
				r.fusedOptim = true
				r.addNote("torchtune default: torch.optim.AdamW(fused=True): no foreach temporaries in the step")
			}
		}
		if lora && r.LoRADropout == nil {
			r.setDropout(torchtuneLoRADropout)
			r.addNote(torchtuneDropoutNote)
		}
	}
	if !lora {
		r.LoRADropout = nil
	}
	if asked > 0 {
		// Gradients accumulated over micro-batches outlive each one (trainGrads), whatever
		// the framework; --grad-accum 1 is one micro-batch per step.
		r.gradAccum = asked > 1
	}
	return nil
}

func (r *resolved) setDropout(p float64) { r.LoRADropout = &p }

// The frameworks' dropout defaults as notes, formatted once.
var (
	hfDropoutNote        = fmt.Sprintf("hf default: lora_dropout %.2g (PEFT LoraConfig default)", hfLoRADropout)
	litgptDropoutNote    = fmt.Sprintf("litgpt default: lora_dropout %.2g (litgpt/finetune/lora.py)", litgptLoRADropout)
	torchtuneDropoutNote = fmt.Sprintf("torchtune default: lora_dropout %.2g (torchtune LoRA builders)", torchtuneLoRADropout)
)

// WantsGradCkpt reports whether the job, once resolved, checkpoints activations: asked
// for, or a default of its framework (hf QLoRA, torchtune training).
func (j Job) WantsGradCkpt() bool {
	if j.GradCkpt || j.gradCkptSet {
		return j.GradCkpt
	}
	switch j.Framework.orHF() {
	case FrameworkHF:
		return j.Task == TaskQLoRA
	case FrameworkTorchtune:
		return j.IsTraining()
	}
	return false
}

// FrameworkDefaults is the CONTRACT's table of framework defaults, one row per (framework,
// what), for docs and `picker estimate --help`-style listings. Kept beside the code that
// applies them so the two cannot drift (framework_test.go checks each row is applied).
var FrameworkDefaults = []struct{ Framework, Applies, Default, Source string }{
	{"hf", "lora", "base in bf16 (fp16 without bf16), adapters fp32, Trainer bf16 autocast", "transformers v5 from_pretrained dtype=\"auto\"; PEFT autocast_adapter_dtype=True"},
	{"hf", "qlora", "gradient checkpointing on; bf16-mixed compute over NF4", "peft.prepare_model_for_kbit_training(use_gradient_checkpointing=True)"},
	{"hf", "lora, qlora", "lora_dropout 0.0", "PEFT LoraConfig"},
	{"hf", "full-ft", "bf16-mixed (AMP over fp32 weights)", "Trainer bf16=True"},
	{"hf", "training", "no gradient accumulation: the peak is the start of backward or the optimizer step", "TrainingArguments gradient_accumulation_steps=1, zero_grad(set_to_none=True)"},
	{"hf", "gpt2, phi (gelu_new)", "Python GELU keeps 3 extra intermediate-size tensors", "transformers NewGELUActivation"},
	{"litgpt", "all", "bf16-true (weights, adapters, gradients, optimizer states bf16)", "config_hub/finetune/*.yaml precision: bf16-true"},
	{"litgpt", "training", "chunked LM head and cross-entropy (chunk 128)", "litgpt/finetune/*.py lm_head_chunk_size=128"},
	{"litgpt", "lora, qlora", "lora_dropout 0.05", "litgpt/finetune/lora.py"},
	{"litgpt", "training", "gradients accumulate across micro-batches", "config_hub global_batch_size 16 over micro_batch_size 1-4"},
	{"litgpt", "all", "a separate lm_head also for tied checkpoints (a second vocab x hidden matrix)", "litgpt/model.py GPT.__init__"},
	{"torchtune", "all", "dtype bf16 (everything bf16)", "recipes/configs dtype: bf16"},
	{"torchtune", "training", "activation checkpointing on; chunked output loss (8 chunks)", "enable_activation_checkpointing: True; CEWithChunkedOutputLoss"},
	{"torchtune", "lora, qlora, multi-GPU full-ft", "AdamW fused=True", "recipes/configs optimizer"},
	{"torchtune", "single-GPU full-ft", "PagedAdamW8bit with optimizer_in_bwd", "llama3_1/8B_full_single_device.yaml"},
	{"torchtune", "qlora", "NF4 with double-quantized scalers", "torchao NF4Tensor scaler_block_size=256"},
	{"torchtune", "lora, qlora", "lora_dropout 0.0", "torchtune LoRA builders"},
	{"torchtune", "training", "gradients accumulate across micro-batches", "LoRA configs gradient_accumulation_steps: 8 (optimizer_in_bwd configs: 1, no gradients held)"},
}

// frameworkHead is the LM head's parameter count as the framework holds it. LitGPT's GPT
// keeps a separate lm_head Linear next to transformer.wte even for checkpoints that tie
// them (litgpt/model.py: GPT.__init__ creates both, never shares the weight), so a tied
// checkpoint's head costs a second vocab x hidden matrix there. The head stays in the
// compute dtype when the blocks are quantized: transformers' bitsandbytes integration
// skips the output embedding (get_keys_to_not_convert), and LitGPT's quantized tables
// agree with that reading (lit-q-02/06, lit-inf-03/05 in testdata/vram_cases.csv come
// within 6 % with a 16-bit head and 11-16 % low with a quantized one).
func frameworkHead(m *model.Model, r *resolved) float64 {
	head := float64(m.HeadParams)
	if r.Framework == FrameworkLitGPT && m.Kind != model.KindDiffusion && m.Kind != model.KindEncoder && head == 0 {
		head = float64(m.Vocab * m.Hidden)
	}
	return head
}

// peakWithoutAccumulation is the training peak when no gradient outlives its step (hf:
// Trainer's gradient_accumulation_steps=1 with zero_grad(set_to_none=True)). The breakdown
// then describes the peak moment: the start of backward (every activation and the loss
// buffers alive, no gradient yet), or the optimizer step (gradients and the step's
// temporaries, activations and autocast's casts freed), whichever is larger. Measured on an
// H200 (calibration/measured_gpu.csv, no accumulation): TinyLlama full-ft bf16-mixed peaks
// at 20.55 GiB for b4 s512, b1 s2048 and b4 s2048 with checkpointing alike, which is fp32
// weights + gradients + AdamW m, v + foreach sqrt(v) = 4 x 4.1 + 4.1: the step.
func (t *trainMem) peakWithoutAccumulation(bd Breakdown) Breakdown {
	backward := bd
	backward.Gradients = 0
	step := bd
	// ZeRO-3/FSDP have freed the gathered layers by then: FULL_SHARD "reshards after the
	// backward computation" (torch.distributed.fsdp.ShardingStrategy docs), and DeepSpeed
	// ZeRO-3 releases each module's parameters in its post-backward hook, so the step sees
	// only the shards.
	step.Weights -= t.autocastCache + t.gathered
	step.Activations = 0
	step.Workspace = t.stepTemp
	if sum(step) > sum(backward) {
		return step
	}
	return backward
}

func sum(b Breakdown) float64 {
	return b.Weights + b.Gradients + b.Optimizer + b.Activations + b.KVCache + b.Workspace
}
