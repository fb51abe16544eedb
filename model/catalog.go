package model

import (
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// The catalog is data: catalog/models.json names each model and points at a Hugging Face
// config.json under catalog/configs/ (image pipelines list their components instead).
// Both are embedded so that picker works offline and the repository builds from its own
// tree. tools/measure_vram.py reads the same configs to build models on a GPU machine.
//
//go:embed catalog/models.json catalog/configs/*.json
var catalogFS embed.FS

// CatalogEntry is one built-in model as listed in catalog/models.json.
type CatalogEntry struct {
	Name     string    `json:"name"`
	HFID     string    `json:"hf_id"`
	Aliases  []string  `json:"aliases,omitempty"`
	Config   string    `json:"config,omitempty"`
	Note     string    `json:"note,omitempty"`
	Pipeline *Pipeline `json:"pipeline,omitempty"`
}

type catalogIndex struct {
	entries []CatalogEntry
	byKey   map[string]int // lower-cased name, hf id and aliases -> entry
	models  sync.Map       // entry index -> *Model, built on first use
}

var (
	catalogOnce sync.Once
	catalogIdx  *catalogIndex
	catalogErr  error
)

func loadCatalog() (*catalogIndex, error) {
	catalogOnce.Do(func() {
		data, err := catalogFS.ReadFile("catalog/models.json")
		if err != nil {
			catalogErr = pricing.Errorf(pricing.Internal, "embedded catalog: %v", err)
			return
		}
		var doc struct {
			Models []CatalogEntry `json:"models"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			catalogErr = pricing.Errorf(pricing.Internal, "embedded catalog: %v", err)
			return
		}
		idx := &catalogIndex{entries: doc.Models, byKey: map[string]int{}}
		for i, e := range doc.Models {
			for _, k := range append([]string{e.Name, e.HFID}, e.Aliases...) {
				k = strings.ToLower(k)
				if k == "" {
					continue
				}
				if j, dup := idx.byKey[k]; dup && j != i {
					catalogErr = pricing.Errorf(pricing.Internal, "embedded catalog: %q names both %s and %s", k, doc.Models[j].Name, e.Name)
					return
				}
				idx.byKey[k] = i
			}
		}
		catalogIdx = idx
	})
	return catalogIdx, catalogErr
}

// Catalog returns the built-in models in catalog order.
func Catalog() []CatalogEntry {
	idx, err := loadCatalog()
	if err != nil {
		return nil
	}
	return append([]CatalogEntry(nil), idx.entries...)
}

// CatalogModel looks a name, Hub id or alias up in the built-in catalog, case-insensitively.
// ok is false when the catalog does not hold it.
func CatalogModel(ref string) (m *Model, ok bool, err error) {
	idx, err := loadCatalog()
	if err != nil {
		return nil, false, err
	}
	i, found := idx.byKey[strings.ToLower(strings.TrimSpace(ref))]
	if !found {
		return nil, false, nil
	}
	if v, ok := idx.models.Load(i); ok {
		return v.(*Model), true, nil
	}
	m, err = idx.build(idx.entries[i])
	if err != nil {
		return nil, true, err
	}
	v, _ := idx.models.LoadOrStore(i, m)
	return v.(*Model), true, nil
}

func (idx *catalogIndex) build(e CatalogEntry) (*Model, error) {
	var m *Model
	if e.Pipeline != nil {
		var err error
		m, err = buildPipeline(e)
		if err != nil {
			return nil, err
		}
	} else {
		data, err := catalogFS.ReadFile("catalog/configs/" + e.Config)
		if err != nil {
			return nil, pricing.Errorf(pricing.Internal, "catalog entry %s: %v", e.Name, err)
		}
		m, err = ModelFromConfig("catalog/configs/"+e.Config, data)
		if err != nil {
			return nil, err
		}
	}
	m.Name, m.HFID, m.Source = e.Name, e.HFID, "catalog"
	if e.Note != "" {
		m.Notes = append(m.Notes, e.Name+": "+e.Note)
	}
	return m, nil
}

// catalogNames returns every lookup key, for "did you mean" suggestions.
func catalogNames() []string {
	idx, err := loadCatalog()
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(idx.entries)*2)
	for _, e := range idx.entries {
		out = append(out, e.Name, e.HFID)
		out = append(out, e.Aliases...)
	}
	return out
}

// ClosestCatalogNames returns up to n catalog names nearest to ref by edit distance, for
// "did you mean" messages.
func ClosestCatalogNames(ref string, n int) []string {
	ref = strings.ToLower(ref)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	for _, name := range catalogNames() {
		if seen[name] {
			continue
		}
		seen[name] = true
		d := levenshtein(ref, strings.ToLower(name))
		// A query that is a substring of a name (e.g. "llama-2") is close whatever its length.
		if strings.Contains(strings.ToLower(name), ref) && len(ref) >= 3 {
			d = min(d, (len(name)-len(ref))/2)
		}
		cs = append(cs, cand{name, d})
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for _, c := range cs {
		if len(out) == n {
			break
		}
		out = append(out, c.name)
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Pipeline describes a diffusion pipeline in catalog/models.json.
type Pipeline struct {
	DefaultResolution int         `json:"default_resolution"`
	CFG               bool        `json:"classifier_free_guidance"` // guidance doubles the denoiser batch
	TextTokens        int64       `json:"text_tokens"`
	Denoiser          DenoiserRef `json:"denoiser"`
	Components        []Component `json:"components"`
	VAE               VAESpec     `json:"vae"`

	// What the time model (jobtime) needs, which the memory model does not.
	//
	// DefaultSteps is num_inference_steps' default in the pipeline class's __call__
	// (diffusers StableDiffusionPipeline and StableDiffusionXLPipeline 50, FluxPipeline 28).
	DefaultSteps int `json:"default_steps,omitempty"`
	// DenoiserGMACs and DenoiserAttnGMACs are one denoiser pass over one image at
	// DefaultResolution in billions of multiply-accumulates: the linear and convolution
	// layers (they grow with the sequence: latent pixels for a UNet, image plus joint text
	// tokens for a DiT) and the attention scores and values (QKᵀ and AV: they grow with its
	// square). They are counted from the denoiser's config.json by the structure of its
	// diffusers class (UNet2DConditionModel, FluxTransformer2DModel), and jobtime's tests
	// count them again from the config; the UNet count of SD 1.x agrees with BK-SDM's
	// (Kim et al. 2023, arXiv:2305.15798: 339 GMACs at 512², attention products not
	// counted).
	DenoiserGMACs     float64 `json:"denoiser_gmacs,omitempty"`
	DenoiserAttnGMACs float64 `json:"denoiser_attention_gmacs,omitempty"`
	// DenoiserLayers is the transformer layers one denoiser pass runs (UNet: the
	// BasicTransformerBlocks of all its Transformer2DModels; FLUX: 19 double- and 38
	// single-stream blocks).
	DenoiserLayers int `json:"denoiser_layers,omitempty"`
	// VAEDecodeGMACs is the VAE decoder for one image at DefaultResolution, counted the
	// same way (AutoencoderKL with block_out_channels [128, 256, 512, 512] and
	// layers_per_block 2, the vae/config.json of all three catalog pipelines), less its
	// one mid-block attention's products (5 % at 1024²).
	VAEDecodeGMACs float64 `json:"vae_decode_gmacs,omitempty"`

	// derived from the denoiser config
	Attn []AttnLevel
	Dit  *DiTSpec
}

type DenoiserRef struct {
	Type   string `json:"type"` // "unet" or "dit"
	Config string `json:"config"`
	Patch  int64  `json:"patch,omitempty"`
}

type Component struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Params int64  `json:"params"`
	// LinearFraction is the share of parameters in nn.Linear layers, the only ones
	// bitsandbytes quantizes (convolutions, embeddings and norms stay in the compute dtype).
	LinearFraction float64 `json:"linear_fraction,omitempty"`
	Quantize       bool    `json:"quantize,omitempty"` // --quant applies to it (as in diffusers' quantization examples)
}

type VAESpec struct {
	// DecodeChannels is the widest channel count the decoder runs at full output
	// resolution (diffusers AutoencoderKL: the last up block upsamples 256 channels to the
	// full size before narrowing to 128).
	DecodeChannels  int64 `json:"decode_channels"`
	LatentDownscale int64 `json:"latent_downscale"`
	// UpcastFP16: the VAE overflows in fp16 and the pipeline decodes in fp32 (SDXL's
	// force_upcast).
	UpcastFP16 bool `json:"upcast_fp16"`
}

type AttnLevel struct {
	Downscale int64 // latent pixels per token side
	Heads     int64
	Channels  int64
}

type DiTSpec struct {
	Heads, Dim, Patch int64
}

func buildPipeline(e CatalogEntry) (*Model, error) {
	p := *e.Pipeline
	data, err := catalogFS.ReadFile("catalog/configs/" + p.Denoiser.Config)
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "catalog entry %s: %v", e.Name, err)
	}
	c, err := parseHFConfig(p.Denoiser.Config, data)
	if err != nil {
		return nil, err
	}
	switch p.Denoiser.Type {
	case "unet":
		p.Attn, err = unetAttention(c)
	case "dit":
		var heads, hd int64
		if heads, err = c.int("num_attention_heads"); err == nil {
			hd, err = c.int("attention_head_dim")
		}
		patch := p.Denoiser.Patch
		if patch == 0 {
			patch = 2
		}
		p.Dit = &DiTSpec{Heads: heads, Dim: heads * hd, Patch: patch}
	default:
		err = fmt.Errorf("unknown denoiser type %q", p.Denoiser.Type)
	}
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "catalog entry %s: %v", e.Name, err)
	}
	m := &Model{Architecture: "diffusion", Kind: KindDiffusion, Pipe: &p}
	for _, comp := range p.Components {
		m.ParamCount += comp.Params
	}
	m.ActiveCount = m.ParamCount
	return m, nil
}

// unetAttention derives the attention levels of a diffusers UNet2DConditionModel config:
// every CrossAttn block runs self-attention over the latent at its resolution. diffusers
// reads attention_head_dim as the number of heads when num_attention_heads is null (a
// known naming quirk kept for SD 1.x/SDXL configs).
func unetAttention(c *hfConfig) ([]AttnLevel, error) {
	blocks, ok := c.m["down_block_types"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: missing down_block_types", c.src)
	}
	chans, ok := c.m["block_out_channels"].([]any)
	if !ok || len(chans) != len(blocks) {
		return nil, fmt.Errorf("%s: block_out_channels does not match down_block_types", c.src)
	}
	headsAt := func(i int) int64 {
		v := c.m["num_attention_heads"]
		if v == nil {
			v = c.m["attention_head_dim"]
		}
		switch x := v.(type) {
		case json.Number:
			n, _ := x.Int64()
			return n
		case []any:
			if i < len(x) {
				if n, ok := x[i].(json.Number); ok {
					k, _ := n.Int64()
					return k
				}
			}
		}
		return 8
	}
	var out []AttnLevel
	for i, bt := range blocks {
		s, _ := bt.(string)
		if !strings.Contains(s, "CrossAttn") {
			continue
		}
		ch, _ := chans[i].(json.Number).Int64()
		out = append(out, AttnLevel{Downscale: 1 << i, Heads: headsAt(i), Channels: ch})
	}
	return out, nil
}
