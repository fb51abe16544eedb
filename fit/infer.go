package fit

import (
	"fmt"
	"math"
	"strings"

	"github.com/pickergpu/picker/model"
)

func estimateInference(m *model.Model, r *resolved) Breakdown {
	var bd Breakdown
	g := float64(r.GPUs)
	// resolveSplit set Split for inference divided across GPUs, and only then.
	tp, layer := r.Split == SplitTensor, r.Split == SplitLayer
	weights := weightBytes(m, r)
	B, S := float64(r.Batch), float64(r.SeqLen)
	tokens := B * S
	// KV cache: keys and values for every layer and token. Grouped-query and multi-query
	// attention store only the KV heads; MLA stores its compressed latent.
	// Windowed layers keep at most their window (window.go).
	kv := m.KVElems(B, S) * r.kvB
	if m.Kind == model.KindEncoder {
		kv = 0
	}
	// Prefill temporaries of one layer at a time (nothing is kept for backward): the widest
	// of the attention block (normed input, q, k, v, output) and the MLP (normed input and
	// the intermediate tensors of the activation).
	s := &m.Dec
	inter := float64(0)
	for _, e := range s.Entries {
		if e.Elems > s.Hidden*2 && !e.FP32 && !e.Mask {
			inter = math.Max(inter, float64(e.Elems))
		}
	}
	attnW := float64(s.Hidden + 2*s.QDim + 2*s.QDim)
	mlpW := float64(s.Hidden) + 3*inter
	if s.PlainMLP {
		mlpW = float64(s.Hidden) + 2*inter // the up projection's output and the activation's
	}
	ws := tokens * math.Max(attnW, mlpW) * r.b
	if r.Attention == "eager" || m.AttnSoftcap {
		per := 2 * r.b
		if s.SoftmaxFP32 && r.b < 4 {
			// softmax(scores, dtype=float32) first casts its half-precision input to fp32 and
			// then writes an fp32 output, so three copies of the s x s scores are live at
			// once: half + fp32 input + fp32 output. Measured on an H200 (issue 8,
			// measured_gpu.csv): TinyLlama eager prefill b8 s2048 12.71 GiB allocated (9.0
			// estimated with 4+2 bytes, 12.9 with 4+4+2); Llama-2-7B b1 s4096 19.69 (17.8
			// before, 19.8 after).
			per = r.b + 4 + 4
		}
		ws += B * float64(s.Heads) * S * S * per
	}
	// Logits of the last position only (generate() slices before the LM head), upcast to fp32.
	if m.Kind != model.KindEncoder {
		ws += B * float64(m.Vocab) * (r.b + 4)
	}
	if tokens > 1 {
		ws += dequantTransient(m, r) // the prefill's 4-bit matmuls dequantize (decode uses gemv_4bit)
	}
	switch {
	case layer:
		// Whole layers per GPU: weights and KV cache divide by the GPU count; a layer's
		// prefill temporaries and the logits live whole on the GPU that computes them.
		weights, kv = weights/g, kv/g
	case tp:
		weights /= g
		kvHeads := float64(s.KVDim) / (float64(s.QDim) / float64(s.Heads))
		if m.Architecture == "deepseek_v2" || m.Architecture == "deepseek_v3" {
			kvHeads = 1 // the MLA latent is shared by all heads: replicated
		}
		kv /= math.Max(1, math.Min(g, kvHeads))
		ws /= g
	}
	// Loading copies each checkpoint tensor into its parameter; the largest one briefly
	// exists twice. Inference is small enough beside the weights for this to set the peak.
	load := float64(m.LargestTensor) * r.store
	if tp {
		load /= g
	}
	if pp := float64(r.Nodes); pp > 1 { // pipeline stages across nodes hold 1/pp of the layers (nodes.go)
		weights, kv = weights/pp, kv/pp
	}
	if r.Engine.Paged() || r.Engine == EngineLlamaCpp {
		// The engine's own budget (engine.go): a chunked step's activations per token of
		// the widest block, the KV cache per token as split above.
		bd, r.servingTotal, r.serving = estimateServing(m, r, weights, kv, math.Max(attnW, mlpW), load)
		return bd
	}
	bd.Weights = weights
	bd.KVCache = kv
	bd.Workspace = math.Max(ws, load-kv)
	return bd
}

func estimateImage(m *model.Model, r *resolved) (Breakdown, float64) {
	var bd Breakdown
	p := m.Pipe
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
	if p.Dit != nil {
		// Diffusion transformer: image tokens are 2x2 latent patches, joined with the text
		// tokens. A block keeps ~16 hidden-width tensors alive (q, k, v, output, the 4x MLP
		// and its activation, the fused single-stream projection).
		t := (lw/float64(p.Dit.Patch))*(lh/float64(p.Dit.Patch)) + float64(p.TextTokens)
		den = batch * t * float64(p.Dit.Dim) * 16 * b
		if eager {
			den += batch * float64(p.Dit.Heads) * t * t * 2 * b
		}
	} else {
		for _, a := range p.Attn {
			n := (lw / float64(a.Downscale)) * (lh / float64(a.Downscale))
			// Transformer block: q, k, v, output and the GEGLU feed-forward (8x channels in,
			// 4x out) ~ 12 channel-widths per token.
			x := batch * n * float64(a.Channels) * 12 * b
			if eager {
				// diffusers' classic AttnProcessor: baddbmm scores and their softmax coexist.
				x += batch * float64(a.Heads) * n * n * 2 * b
			}
			den = math.Max(den, x)
		}
		// ResNet blocks and the skip connections kept for the up path at full latent size.
		if len(p.Attn) > 0 {
			den += batch * lw * lh * float64(p.Attn[0].Channels) * 10 * b
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

// joinInts lists whole numbers as "1, 2, 4" for messages.
func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}
