package jobtime

import (
	"math"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// Image generation (diffusers pipelines). A pipeline call encodes the prompt, runs the
// denoiser Steps times over the batch of latents (twice the batch under classifier-free
// guidance: the conditional and unconditional halves run as one batch) and decodes each
// latent with the VAE. Each is compute-bound: FLOPs over a share of the tensor peak. A
// denoiser step also takes at least one read of its weights over the bandwidth, and at
// least the Python dispatch of its transformer layers (eager diffusers). Image pipelines
// run one per GPU: N GPUs give N times the images.

const (
	// Share of the generation's GEMM efficiency (archEfficiency) diffusion inference
	// sustains, per denoiser family, from published eager-PyTorch timings whose FLOPs are
	// counted as here (none is a calibration row's source):
	//
	// unetShare: SDXL, 1024², 30 steps, batch 1, bf16 with SDPA on an 80 GB 400 W A100:
	// 3.31 s (diffusers docs, tutorials/fast_diffusion.md) = 416 TFLOP at 126 TFLOPS = 40 %
	// of the peak = 0.81 of effAmpere; SD 1.5, 512², batch 16, fp16 with SDPA, torch 2.0
	// without compile on an A100: 3.04 it/s (diffusers docs, optimization/torch2.0.md) =
	// 25 % = 0.50 of effAmpere. 0.65 is the middle: SD 1.5's UNet spends more of its step
	// in memory-bound GroupNorm and SiLU over its 64x64 level than SDXL's.
	unetShare = 0.65
	// ditShare: FLUX.1-dev, 1024², 28 steps, bf16, no optimizations, on an NVIDIA L20
	// (Ada, 119.5 dense BF16 TFLOPS): 26.36 s (diffusers docs, optimization/para_attn.md)
	// = 2.10 PFLOP at 80 TFLOPS = 67 % of the peak = 1.33 of effAmpere: a DiT's GEMMs are
	// large (4608 tokens x 3072 wide) and inference has no backward to stall on.
	ditShare = 1.33
)

// ImageWork is an image pipeline's work for one image at the job's resolution, from the
// catalog's compute figures (model.Pipeline).
type ImageWork struct {
	// DenoiserFLOPs is one denoiser pass over one image (attention included).
	DenoiserFLOPs float64
	// DenoiserLayers is its transformer layers (dispatch floor); DiT selects ditShare.
	DenoiserLayers float64
	DiT            bool
	// DenoiserWeightBytes is read once per step; QuantParams are its linear weights
	// dequantized per pass (bitsandbytes formats), 0 when unquantized or fp8.
	DenoiserWeightBytes, QuantParams float64
	// TextFLOPs (all text encoders, negative prompt included under CFG) and VAEFLOPs
	// (decoder) per image; VAEFP32: the VAE decodes in fp32 (SDXL's force_upcast in fp16).
	TextFLOPs, VAEFLOPs float64
	VAEFP32             bool
	// WeightBytes is every component's weights, copied over the host link per call under
	// --offload model.
	WeightBytes float64
	CFG         bool
	Images      float64 // images per pipeline call (--images)
	// DefaultSteps is the pipeline's num_inference_steps default.
	DefaultSteps float64
}

// DefaultSteps is the denoising steps a model's pipeline runs by default (diffusers'
// num_inference_steps default), 0 for a model that is not an image pipeline.
func DefaultSteps(mod *model.Model) int {
	if mod == nil || mod.Pipe == nil {
		return 0
	}
	return mod.Pipe.DefaultSteps
}

// ImageSteps is the denoising steps the model times per image: Steps, or the pipeline's
// default.
func (m *TimeModel) ImageSteps() float64 {
	if m.Steps > 0 || m.Image == nil {
		return m.Steps
	}
	return m.Image.DefaultSteps
}

// imageWorkFor is the pipeline's work for a resolved image job; nil when the catalog lacks
// its compute figures.
func imageWorkFor(p *model.Pipeline, r *fit.Result, computeBytes float64, qb float64) *ImageWork {
	if p == nil || p.DenoiserGMACs <= 0 || p.DefaultResolution <= 0 || p.VAE.LatentDownscale <= 0 {
		return nil
	}
	j := &r.Job // read only: the resolved job is not copied
	res := j.Resolution
	if res.IsZero() {
		res = fit.Resolution{Width: p.DefaultResolution, Height: p.DefaultResolution}
	}
	ds := float64(p.VAE.LatentDownscale)
	pixels := float64(res.Width) / ds * float64(res.Height) / ds
	pixels0 := math.Pow(float64(p.DefaultResolution)/ds, 2)
	// The sequence the denoiser runs over: latent pixels (UNet), or 2x2 latent patches
	// joined with the text tokens (FLUX's joint attention). Linear and convolution work
	// grows with it, attention products with its square.
	seq, seq0 := pixels, pixels0
	if p.Dit != nil {
		patch := math.Pow(float64(p.Dit.Patch), 2)
		seq, seq0 = pixels/patch+float64(p.TextTokens), pixels0/patch+float64(p.TextTokens)
	}
	s := seq / seq0
	w := &ImageWork{
		DenoiserFLOPs:  2e9 * (p.DenoiserGMACs*s + p.DenoiserAttnGMACs*s*s),
		DenoiserLayers: float64(p.DenoiserLayers),
		DiT:            p.Dit != nil,
		VAEFLOPs:       2e9 * p.VAEDecodeGMACs * pixels / pixels0,
		VAEFP32:        p.VAE.UpcastFP16 && j.Precision == "fp16",
		CFG:            p.CFG,
		Images:         float64(max(j.Images, 1)),
		DefaultSteps:   float64(p.DefaultSteps),
	}
	prompts := 1.0
	if p.CFG {
		prompts = 2 // the negative prompt is encoded too
	}
	for _, c := range p.Components {
		n := float64(c.Params)
		bytes := n * computeBytes
		quantized := qb > 0 && c.Quantize
		if quantized {
			bytes = n*c.LinearFraction*qb + n*(1-c.LinearFraction)*computeBytes
		}
		w.WeightBytes += bytes
		switch c.Role {
		case "denoiser":
			w.DenoiserWeightBytes = bytes
			if quantized && j.Quant != "fp8" {
				w.QuantParams = n * c.LinearFraction
			}
		case "text_encoder":
			// An encoder-only transformer: 2 FLOPs per parameter per token (embedding
			// lookups counted too, an upper bound under 1 % of an image's work).
			w.TextFLOPs += 2 * n * float64(p.TextTokens) * prompts
		}
	}
	return w
}

// diffusionEfficiency is the share of the tensor peak the pipeline sustains on g.
func (m *TimeModel) diffusionEfficiency(g *TimeGPU, dit bool) float64 {
	if m.MFU > 0 {
		return m.MFU
	}
	if dit {
		return archEfficiency(g.Arch) * ditShare
	}
	return archEfficiency(g.Arch) * unetShare
}

// fp32Peak is the rate of an fp32 pass: TF32 tensor cores at half the 16-bit dense rate
// from Ampere on (cuDNN convolutions allow TF32 by default: torch.backends.cudnn.allow_tf32;
// NVIDIA A100 datasheet 156 vs 312, H100 495 vs 989.5), else the FP32 rate.
func fp32Peak(g *TimeGPU) float64 {
	switch g.Arch {
	case "Volta", "Turing", "Pascal", "Maxwell", "Kepler", "":
		if g.FP32TFLOPS > 0 {
			return g.FP32TFLOPS
		}
	}
	return g.PeakTFLOPS / 2
}

// image times a pipeline call on one GPU and scales it to the GPUs used.
func (m *TimeModel) image(g *TimeGPU) Timing {
	w := m.Image
	slice := math.Min(g.Count, 1)
	if slice <= 0 {
		slice = 1
	}
	peak := g.PeakTFLOPS * 1e12 * slice
	bw := g.BandwidthGBs * 1e9 * slice * bwEfficiency
	eff := m.diffusionEfficiency(g, w.DiT)

	batch := w.Images
	if w.CFG {
		batch *= 2
	}
	compute := batch * w.DenoiserFLOPs / (peak * eff)
	weights := w.DenoiserWeightBytes / bw
	dispatch := w.DenoiserLayers * hfLayerDispatchSec
	step, bound := compute, "compute"
	if weights > step {
		step, bound = weights, "memory"
	}
	if dispatch > step {
		step, bound = dispatch, "dispatch"
	}
	// bitsandbytes dequantizes each quantized weight before its matmul, every pass
	// (diffusers' bitsandbytes integration, as QLoRA's forward: dequantBytesPerParam).
	step += w.QuantParams * dequantBytesPerParam / bw

	vaePeak := peak
	if w.VAEFP32 {
		vaePeak = fp32Peak(g) * 1e12 * slice
	}
	call := m.ImageSteps()*step +
		w.Images*w.TextFLOPs/(peak*eff) +
		w.Images*w.VAEFLOPs/(vaePeak*m.diffusionEfficiency(g, false)) // the VAE is a conv net, like a UNet
	if m.Offload == fit.OffloadModel {
		// diffusers enable_model_cpu_offload moves each whole component to the GPU when
		// its forward is called and back when the next one runs (diffusers docs,
		// optimization/memory.md): a call copies every weight over the host link once.
		host := math.Max(g.HostLinkGBs, 16) * 1e9 * linkEfficiency
		call += w.WeightBytes / host
	}
	return Timing{ImagesPerSec: w.Images * math.Max(g.Count, 1) / call, Bound: bound}
}
