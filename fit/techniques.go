package fit

import (
	"math"
	"math/bits"
	"slices"

	"github.com/pickergpu/picker/model"
)

// The memory techniques a job can name beyond the basic knobs: the optimizer step's
// implementation (--optimizer-step), a chunked loss (--loss), VAE tiling (--vae-tiling)
// and diffusers' model CPU offload (--offload model); and the one rule for flags that
// do not apply to the task: a flag the job gives but its task ignores is an error that
// names the flag and the task, so a value never silently does nothing.

// resolveApplicable rejects job flags the task does not use. It runs before defaults are
// filled, so it sees only what the caller set.
func resolveApplicable(m *model.Model, r *resolved) error {
	training := r.IsTraining()
	lora := r.Task == TaskLoRA || r.Task == TaskQLoRA
	diffusion := m.Kind == model.KindDiffusion
	notFor := func(flag, why string) error {
		return invalid(flag, "--%s does not apply to --task %s: %s", flag, r.Task, why)
	}
	switch {
	case !lora && r.LoRARank != 0:
		return notFor("lora-r", "it sets the LoRA rank (--task lora or qlora)")
	case !lora && r.LoRATargets != nil:
		return notFor("lora-targets", "it picks the LoRA modules (--task lora or qlora)")
	case !training && r.Optimizer != "":
		return notFor("optimizer", "inference keeps no optimizer states")
	case !training && r.OptimizerStep != "":
		return notFor("optimizer-step", "inference runs no optimizer step")
	case !training && r.Loss != "":
		return notFor("loss", "inference computes no training loss")
	case !training && r.Norm != "":
		return notFor("norm", "inference keeps no activations for a backward pass")
	case (r.Loss == "chunked" || r.Loss == "fused-linear") && m.Kind == model.KindEncoder:
		return invalid("loss", "--loss %s: %s is an encoder trained with a classification head; there are no vocabulary logits to chunk", r.Loss, m.Name)
	case diffusion && r.Batch != 0:
		return notFor("batch", "image generation takes --images (images per batch)")
	case !diffusion && r.VAETiling:
		return invalid("vae-tiling", "--vae-tiling applies to image generation; %s is a language model", m.Name)
	}
	return nil
}

// resolveTechniques fills the defaults of the technique flags and checks the LoRA rank
// against the adapted layers.
func resolveTechniques(m *model.Model, r *resolved) error {
	if r.IsTraining() {
		// The framework's defaults (framework.go) fill what the flags leave unset; an
		// explicit flag overrides them.
		switch {
		case r.OptimizerStep == "" && r.fusedOptim:
			r.OptimizerStep = "fused"
		case r.OptimizerStep == "":
			r.OptimizerStep = "foreach"
		}
		r.fusedOptim = r.OptimizerStep == "fused"
		if r.Norm == "fused" {
			r.addNote("--norm fused: each norm keeps its 16-bit input and the row statistics for backward (Liger LigerRMSNorm, Apex FusedRMSNorm, torchtitan fused_rmsnorm), not the fp32 copy the framework's norm keeps")
		}
		switch {
		case r.Loss == "" && r.chunkedLoss:
			r.Loss = "chunked"
		case r.Loss == "":
			r.Loss = "standard"
		}
		r.chunkedLoss = r.Loss == "chunked"
	}
	if r.IsTraining() && r.Shard.Sharded() && r.GPUs == 1 && !r.Offload.Enabled() {
		r.addWarning("--shard " + string(r.Shard) + " on 1 GPU shards nothing: the states are laid out as ZeRO keeps them, on one GPU; give --gpus N, or add --offload (ZeRO-Offload on one GPU)")
	}
	if r.Task == TaskLoRA || r.Task == TaskQLoRA {
		// A rank above min(d_in, d_out) of a layer adds parameters but no expressiveness:
		// the update B·A has rank at most min(d_in, d_out) (Hu et al. 2021, LoRA, §4.1).
		var lim int64
		var at string
		for _, mod := range m.Modules {
			if slices.Contains(r.targets, mod.Name) {
				if d := min(mod.In, mod.Out); lim == 0 || d < lim {
					lim, at = d, mod.Name
				}
			}
		}
		if lim > 0 && int64(r.LoRARank) > lim {
			return invalid("lora-r", "--lora-r %d: larger than %s's smallest dimension (%d); a LoRA update's rank is at most min(d_in, d_out), so use --lora-r %d or less", r.LoRARank, at, lim, lim)
		}
	}
	return nil
}

// stepTempBytes is what the AdamW step allocates beyond its states, by implementation
// (PyTorch torch.optim docs, "Algorithms": foreach implementations "use more peak memory
// … because the intermediates are a tensorlist vs just one tensor"; fused implementations
// do the update in one kernel per parameter group without materialised intermediates):
// foreach materialises sqrt(v) (one state-sized tensor) for all parameters at once; the
// for-loop only for the largest parameter; fused not at all.
func stepTempBytes(m *model.Model, r *resolved, stateB float64) float64 {
	switch r.OptimizerStep {
	case "fused":
		return 0
	case "for-loop":
		if r.Task == TaskFullFT {
			return stateB * float64(m.LargestTensor)
		}
		var big int64
		for _, mod := range m.Modules {
			if slices.Contains(r.targets, mod.Name) {
				big = max(big, int64(r.LoRARank)*max(mod.In, mod.Out))
			}
		}
		return stateB * float64(big)
	}
	return stateB * float64(r.trainable)
}

// lossTokens is the number of tokens whose full-vocabulary logits are live at once. The
// standard and the chunked loss (LitGPT, torchtune: see activations) keep them for every
// token. Liger-Kernel's fused linear cross-entropy (Hsu et al. 2024, arXiv:2410.10989
// §3.2) computes the LM head, the loss and its gradient chunk by chunk inside the forward
// pass, so only one chunk's logits ever exist; it sizes a chunk as
// next_power_of_2(ceil(BT / ceil(V / H))) tokens, so a chunk's logits are about the size
// of the hidden states.
func lossTokens(m *model.Model, r *resolved, tokens float64) float64 {
	if r.Loss != "fused-linear" || m.Hidden <= 0 {
		return tokens
	}
	inc := math.Ceil(float64(m.Vocab) / float64(m.Hidden))
	c := uint64(math.Ceil(tokens / math.Max(inc, 1)))
	chunk := float64(uint64(1) << bits.Len64(max(c, 1)-1))
	return math.Min(tokens, chunk)
}

// vaeDecodeSize is the batch and size the VAE decodes at once. With --vae-tiling
// (diffusers enable_vae_slicing + enable_vae_tiling) it decodes one image at a time, in
// tiles of the VAE's sample_size (tile_sample_min_size; the pipeline's default
// resolution: 512 for SD 1.5, 1024 for SDXL and FLUX), so larger images decode at tile
// size (the 25 % tile overlap is recomputed, not kept).
func vaeDecodeSize(m *model.Model, r *resolved, imgs, w, h float64) (float64, float64, float64) {
	if !r.VAETiling {
		return imgs, w, h
	}
	tile := float64(m.Pipe.DefaultResolution)
	return 1, math.Min(w, tile), math.Min(h, tile)
}

// addWarning records a Result warning (built without fmt, as the notes are).
func (r *resolved) addWarning(s string) { r.warns = append(r.warns, s) }

// appendTechniqueNotes appends the assumptions the technique flags add to a Result.
func appendTechniqueNotes(out []string, m *model.Model, r *resolved) []string {
	switch r.OptimizerStep {
	case "fused":
		out = append(out, "fused AdamW step (torch.optim fused=True): no step temporaries beyond the states")
	case "for-loop":
		out = append(out, "for-loop AdamW step (foreach=False): step temporaries for one parameter at a time")
	}
	switch r.Loss {
	case "chunked":
		out = append(out, "chunked LM head and loss: no fp32 copy of the logits; every chunk's logits and their gradients are live at once")
	case "fused-linear":
		out = append(out, "fused linear cross-entropy (Liger): logits live for one chunk of tokens at a time")
	}
	if r.VAETiling {
		out = append(out, "VAE slicing and tiling: decodes one image at a time in tiles of at most "+itoa(m.Pipe.DefaultResolution)+" px")
	}
	if r.Offload == OffloadModel {
		out = append(out, "model CPU offload: components wait in host memory; the GPU holds the largest one at a time")
	}
	return out
}
