package jobtime

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// imageTime resolves an image job, times it on count GPUs of gpu (fp16 where the GPU has
// no bf16, as the recommender does) and returns the seconds per image over all of them.
func imageTime(t *testing.T, name, gpu string, count float64, job fit.Job, tweak func(*TimeModel)) (float64, Timing, *TimeModel, TimeGPU) {
	t.Helper()
	spec, ok := pricing.LookupGPU(gpu)
	if !ok {
		t.Fatalf("no GPU %s", gpu)
	}
	job.Task = fit.TaskImageGen
	if !spec.SupportsBF16 {
		job = job.WithFP16()
	}
	tim, tm, g := timeOn(t, name, gpu, count, job, tweak)
	if tim.ImagesPerSec <= 0 {
		t.Fatalf("%s on %s: no images per second", name, gpu)
	}
	return 1 / tim.ImagesPerSec, tim, tm, g
}

// readConfig reads a catalog config.json (the files the catalog's figures are counted
// from).
func readConfig(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "model", "catalog", "configs", file))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func ints(v any, n int) []float64 {
	out := make([]float64, n)
	switch x := v.(type) {
	case []any:
		for i := range out {
			out[i] = x[min(i, len(x)-1)].(float64)
		}
	case float64:
		for i := range out {
			out[i] = x
		}
	default:
		for i := range out {
			out[i] = 1
		}
	}
	return out
}

// unetMACs counts a diffusers UNet2DConditionModel's multiply-accumulates for one image
// on an h x w latent: 3x3 convolutions of the ResnetBlock2Ds (and 1x1 shortcuts), the
// down- and upsamplers, the Transformer2DModels' projections and BasicTransformerBlocks
// (self-attention q, k, v, out; cross-attention q, out and k, v over the text tokens;
// GEGLU feed-forward 8C + 4C wide), and apart from them the attention products QKᵀ and
// AV. A second count, independent of the catalog's figures.
func unetMACs(c map[string]any, h, w float64) (lin, attn float64, layers int) {
	ch := ints(c["block_out_channels"], len(c["block_out_channels"].([]any)))
	n := len(ch)
	per := int(c["layers_per_block"].(float64))
	tl := ints(c["transformer_layers_per_block"], n)
	cross := c["cross_attention_dim"].(float64)
	text := 77.0
	P := func(i int) float64 { return h / math.Pow(2, float64(i)) * w / math.Pow(2, float64(i)) }
	res := func(i int, in, out float64) float64 {
		m := P(i) * (in*out*9 + out*out*9)
		if in != out {
			m += P(i) * in * out
		}
		return m
	}
	tr := func(i int, c, T float64) {
		p := P(i)
		lin += 2*p*c*c + T*(p*18*c*c+2*cross*c*text)
		attn += T * (2*p*p*c + 2*p*text*c)
		layers += int(T)
	}
	down := c["down_block_types"].([]any)
	up := c["up_block_types"].([]any)
	cross2 := func(bt any) bool { s, _ := bt.(string); return len(s) > 9 && s[:9] == "CrossAttn" }
	lin += P(0) * c["in_channels"].(float64) * ch[0] * 9
	prev := ch[0]
	for i, bt := range down {
		for j := 0; j < per; j++ {
			in := ch[i]
			if j == 0 {
				in = prev
			}
			lin += res(i, in, ch[i])
			if cross2(bt) {
				tr(i, ch[i], tl[i])
			}
		}
		prev = ch[i]
		if i < n-1 {
			lin += P(i+1) * ch[i] * ch[i] * 9
		}
	}
	lin += 2 * res(n-1, ch[n-1], ch[n-1])
	tr(n-1, ch[n-1], tl[n-1])
	out := ch[n-1]
	for k, bt := range up {
		lvl := n - 1 - k
		prevOut := out
		out = ch[lvl]
		in := ch[max(lvl-1, 0)]
		for j := 0; j <= per; j++ {
			skip := out
			if j == per {
				skip = in
			}
			rin := out
			if j == 0 {
				rin = prevOut
			}
			lin += res(lvl, rin+skip, out)
			if cross2(bt) {
				tr(lvl, out, tl[lvl])
			}
		}
		if k < n-1 {
			lin += P(lvl-1) * out * out * 9
		}
	}
	lin += P(0) * ch[0] * c["out_channels"].(float64) * 9
	return lin, attn, layers
}

// fluxMACs counts FluxTransformer2DModel for img image and txt text tokens: every token
// passes 12·d² of weights in each block (double-stream blocks: its own stream's q, k, v,
// out and 4x MLP; single-stream blocks: fused q, k, v and MLP in, d+4d out), the
// embedders, the per-image adaLN modulation, and the joint attention's products.
func fluxMACs(c map[string]any, img, txt float64) (lin, attn float64, layers int) {
	d := c["num_attention_heads"].(float64) * c["attention_head_dim"].(float64)
	blocks := c["num_layers"].(float64) + c["num_single_layers"].(float64)
	N := img + txt
	lin = img*c["in_channels"].(float64)*d + txt*c["joint_attention_dim"].(float64)*d + blocks*12*d*d*N + img*d*c["in_channels"].(float64)
	lin += (c["num_layers"].(float64)*2*6 + c["num_single_layers"].(float64)*3 + 2) * d * d
	attn = blocks * 2 * N * N * d
	return lin, attn, int(blocks)
}

// The catalog's compute figures are the configs' counts, and SD 1.x's agrees with the
// published one (BK-SDM, arXiv:2305.15798: 339 GMACs per U-Net pass at 512²).
func TestPipelineComputeFigures(t *testing.T) {
	for _, c := range []struct {
		name, config string
		dit          bool
	}{
		{"sd-1.5", "runwayml__stable-diffusion-v1-5__unet.json", false},
		{"sdxl-base", "stabilityai__stable-diffusion-xl-base-1.0__unet.json", false},
		{"flux.1-dev", "black-forest-labs__FLUX.1-dev__transformer.json", true},
	} {
		m, _, _ := model.CatalogModel(c.name)
		p := m.Pipe
		cfg := readConfig(t, c.config)
		lat := float64(p.DefaultResolution) / float64(p.VAE.LatentDownscale)
		var lin, attn float64
		var layers int
		if c.dit {
			lin, attn, layers = fluxMACs(cfg, lat*lat/4, float64(p.TextTokens))
		} else {
			lin, attn, layers = unetMACs(cfg, lat, lat)
		}
		if !near(p.DenoiserGMACs*1e9, lin, 0.001) || !near(p.DenoiserAttnGMACs*1e9, attn, 0.001) || p.DenoiserLayers != layers {
			t.Errorf("%s: catalog %.1f + %.1f GMACs, %d layers; the config counts %.1f + %.1f, %d", c.name,
				p.DenoiserGMACs, p.DenoiserAttnGMACs, p.DenoiserLayers, lin/1e9, attn/1e9, layers)
		}
		if p.DefaultSteps <= 0 || p.VAEDecodeGMACs <= 0 {
			t.Errorf("%s: default steps %d, VAE %.0f GMACs; want both", c.name, p.DefaultSteps, p.VAEDecodeGMACs)
		}
	}
	m, _, _ := model.CatalogModel("sd-1.5")
	if !near(m.Pipe.DenoiserGMACs, 339, 0.005) {
		t.Errorf("SD 1.5 U-Net %.1f GMACs at 512²; BK-SDM publishes 339", m.Pipe.DenoiserGMACs)
	}
}

// diffusers' num_inference_steps defaults, as the CLI shows them.
func TestDefaultSteps(t *testing.T) {
	for _, c := range []struct {
		name string
		want int
	}{{"sd-1.5", 50}, {"sdxl-base", 50}, {"flux.1-dev", 28}, {"llama-3.1-8b", 0}} {
		m, _, _ := model.CatalogModel(c.name)
		if got := DefaultSteps(m); got != c.want {
			t.Errorf("%s: %d default steps; want %d", c.name, got, c.want)
		}
	}
	if DefaultSteps(nil) != 0 {
		t.Error("DefaultSteps(nil) != 0")
	}
}

// An image's time is its FLOPs over the diffusion share of the peak: steps x (CFG batch)
// x denoiser FLOPs, plus the text encoders and the VAE once per image.
func TestImageTime(t *testing.T) {
	secs, tim, tm, _ := imageTime(t, "flux.1-dev", "H100", 1, fit.Job{}, nil)
	w := tm.Image
	eff := effHopper * ditShare
	want := (28*w.DenoiserFLOPs+w.TextFLOPs)/(989.5e12*eff) + w.VAEFLOPs/(989.5e12*effHopper*unetShare)
	if !near(secs, want, 1e-9) || tim.Bound != "compute" || tm.ImageSteps() != 28 {
		t.Errorf("FLUX.1-dev on an H100: %.3f s per image (%s, %v steps); want %.3f s compute-bound over 28 steps", secs, tim.Bound, tm.ImageSteps(), want)
	}
	// The denoiser pass at 1024²: (4096 + 512 text) tokens; 74 TFLOP per step.
	if w.DenoiserFLOPs < 7.0e13 || w.DenoiserFLOPs > 7.8e13 {
		t.Errorf("FLUX.1-dev denoiser %.3g FLOPs per pass; want ~7.4e13", w.DenoiserFLOPs)
	}

	for _, c := range []struct {
		name  string
		gpus  float64
		tweak func(*TimeModel)
		ratio float64 // seconds per image over the base case's
		tol   float64
	}{
		// Twice the steps: twice the denoising, the same text and VAE work.
		{"56 steps", 1, func(m *TimeModel) { m.Steps = 56 }, 2, 0.02},
		// Four GPUs run four pipelines: a quarter of the time per image.
		{"4 GPUs", 4, nil, 0.25, 1e-9},
	} {
		got, _, _, _ := imageTime(t, "flux.1-dev", "H100", c.gpus, fit.Job{GPUs: int(c.gpus)}, c.tweak)
		if r := got / secs; !near(r, c.ratio, c.tol) {
			t.Errorf("FLUX.1-dev, %s: %.3fx the seconds per image; want %.2fx", c.name, r, c.ratio)
		}
	}
}

// Resolution: UNet convolutions and linear layers grow with the latent's pixels,
// self-attention products with their square; a DiT's joint sequence keeps its text
// tokens. Classifier-free guidance doubles the denoiser batch.
func TestImageScaling(t *testing.T) {
	m, _, _ := model.CatalogModel("sdxl-base")
	_, _, base, _ := imageTime(t, "sdxl-base", "A100-80GB", 1, fit.Job{}, nil)
	_, _, half, _ := imageTime(t, "sdxl-base", "A100-80GB", 1, fit.Job{Resolution: fit.Resolution{Width: 512, Height: 512}}, nil)
	p := m.Pipe
	if want := 2e9 * (p.DenoiserGMACs/4 + p.DenoiserAttnGMACs/16); !near(half.Image.DenoiserFLOPs, want, 1e-9) {
		t.Errorf("SDXL at 512²: %.4g FLOPs; want a quarter of the layers' and a 16th of attention's %.4g", half.Image.DenoiserFLOPs, want)
	}
	if !near(half.Image.VAEFLOPs*4, base.Image.VAEFLOPs, 1e-9) {
		t.Errorf("VAE at 512² %.3g vs %.3g at 1024²; want a quarter", half.Image.VAEFLOPs, base.Image.VAEFLOPs)
	}
	f, _, _ := model.CatalogModel("flux.1-dev")
	_, _, flux, _ := imageTime(t, "flux.1-dev", "H100", 1, fit.Job{Resolution: fit.Resolution{Width: 512, Height: 512}}, nil)
	s := (1024.0 + 512) / (4096 + 512) // image tokens at 512² plus the 512 text tokens
	if want := 2e9 * (f.Pipe.DenoiserGMACs*s + f.Pipe.DenoiserAttnGMACs*s*s); !near(flux.Image.DenoiserFLOPs, want, 1e-9) {
		t.Errorf("FLUX at 512²: %.4g FLOPs; want %.4g (the text tokens stay)", flux.Image.DenoiserFLOPs, want)
	}

	// A big batch makes SDXL's step compute-bound; with CFG its denoiser runs 2x images.
	secs, tim, tm, _ := imageTime(t, "sdxl-base", "A100-80GB", 1, fit.Job{Images: 8}, nil)
	per := tm.Image
	if tim.Bound != "compute" || !per.CFG {
		t.Fatalf("SDXL x8 on an A100: %s-bound, CFG %v; want compute-bound with CFG", tim.Bound, per.CFG)
	}
	eff := effAmpere * unetShare
	want := (50*2*per.DenoiserFLOPs + per.TextFLOPs + per.VAEFLOPs) / (312e12 * eff)
	if !near(secs, want, 1e-9) {
		t.Errorf("SDXL x8: %.3f s per image; want %.3f (50 steps x 2 CFG passes)", secs, want)
	}
}

// Floors and fp16: a small UNet at batch 1 on a fast GPU waits for Python's dispatch of
// its transformer layers; a GPU without bf16 runs SDXL in fp16 and its VAE in fp32
// (force_upcast), at the FP32 rate where there are no TF32 tensor cores.
func TestImageFloorsAndUpcast(t *testing.T) {
	secs, tim, tm, _ := imageTime(t, "sd-1.5", "H100", 1, fit.Job{}, nil)
	w := tm.Image
	if tim.Bound != "dispatch" {
		t.Errorf("SD 1.5 x1 on an H100 is %s-bound; want dispatch", tim.Bound)
	}
	if want := 50 * 16 * hfLayerDispatchSec; secs < want || secs > want*1.1 {
		t.Errorf("SD 1.5 x1 on an H100: %.3f s; want the 50 steps' dispatch %.3f s plus text and VAE", secs, want)
	}
	if w.DenoiserLayers != 16 {
		t.Errorf("SD 1.5 runs %v transformer layers; want 16", w.DenoiserLayers)
	}

	_, _, v, g := imageTime(t, "sdxl-base", "V100", 1, fit.Job{}, nil)
	if !v.Image.VAEFP32 || fp32Peak(&g) != 15.7 {
		t.Errorf("SDXL on a V100: VAE fp32 %v at %.1f TFLOPS; want fp32 at the 15.7 TFLOPS FP32 rate", v.Image.VAEFP32, fp32Peak(&g))
	}
	_, _, a, ga := imageTime(t, "sdxl-base", "A10G", 1, fit.Job{}, nil)
	if a.Image.VAEFP32 || fp32Peak(&ga) != 70 {
		t.Errorf("SDXL on an A10G (bf16): VAE fp32 %v; TF32 rate %.1f; want bf16, TF32 at 70", a.Image.VAEFP32, fp32Peak(&ga))
	}
}

// diffusers' model CPU offload copies every component over the host link once a call;
// a pipeline the catalog has no compute figures for is not timed.
func TestImageOffloadAndUntimed(t *testing.T) {
	on, _, tm, g := imageTime(t, "sdxl-base", "L4", 1, fit.Job{Offload: fit.OffloadModel}, nil)
	off, _, _, _ := imageTime(t, "sdxl-base", "L4", 1, fit.Job{}, nil)
	if want := tm.Image.WeightBytes / (g.HostLinkGBs * 1e9 * linkEfficiency); !near(on-off, want, 1e-6) {
		t.Errorf("model offload adds %.3f s; want the weights over PCIe, %.3f s", on-off, want)
	}
	tm.Image = nil
	if _, ok := tm.Estimate(&g); ok {
		t.Error("an image job without compute figures was timed")
	}
}
