package model

import (
	"sort"

	"github.com/pickergpu/picker/pricing"
)

// Kinds of model the estimator distinguishes.
const (
	KindCausalLM  = "causal-lm" // decoder-only language model: KV cache, vocabulary logits
	KindSeq2Seq   = "seq2seq"   // encoder-decoder (T5): two stacks, cross attention
	KindEncoder   = "encoder"   // encoder-only (BERT): no KV cache, no causal LM head
	KindDiffusion = "diffusion" // image pipeline: denoiser + text encoders + VAE
	KindParams    = "params"    // only a parameter count is known (--params)
)

// Model is everything the estimator needs to know about a model, derived once from its
// config.json (or the catalog) so that Estimate does arithmetic only. A *Model is
// immutable after resolution and safe to share between goroutines.
//
// Its exported fields are the derived facts the memory model (fit), the time model
// (jobtime) and the recommender read; they are set once by the builders here and never
// written elsewhere. Construct a Model with ModelFromConfig, ModelFromParams or
// CatalogModel, never as a literal.
type Model struct {
	Name         string // catalog short name, or the Hub id / file name when not in the catalog
	HFID         string // Hugging Face id, "" when unknown
	Architecture string // config.json model_type ("llama", "t5", ...) or "diffusion"
	Kind         string // one of the Kind* constants
	// Source says where the model came from: "catalog", "hub", "hub-cache", "file", "params".
	Source string
	// Notes are assumptions made while resolving (fetched from the Hub, shape guessed, ...);
	// Estimate copies them into Result.Assumptions.
	Notes []string

	// ParamCount and ActiveCount back Params and ActiveParams.
	ParamCount, ActiveCount int64

	Hidden, Vocab, MaxPos int64
	Dec                   Stack  // decoder (or the only) stack
	Enc                   *Stack // encoder stack of a seq2seq model
	// Parameter classes, used for quantization (only linear weights inside blocks are
	// quantized by bitsandbytes; embeddings, lm_head, norms and biases stay in the compute
	// dtype) and for optimizers that treat matrices specially (Adafactor).
	EmbedParams, HeadParams, LinearParams, OtherParams int64
	LargestTensor                                      int64 // elements of the largest single tensor (load transient)
	Modules                                            []Module
	defaultTargets                                     []string
	KVPerToken                                         int64 // KV-cache elements per token, all layers
	kvPerTokenCross                                    int64 // seq2seq: cross-attention K/V per encoder token
	LogitSoftcap                                       bool  // gemma2 final_logit_softcapping: extra vocab-sized tensors
	// PyGELU is the MLP's intermediate size when transformers writes the activation out in
	// Python (gelu_new / gelu_fast: NewGELUActivation), 0 otherwise; see ActEntry.
	PyGELU              int64
	AttnSoftcap         bool // gemma2 attn_logit_softcapping: fused SDPA kernels cannot apply it
	MoEExperts, MoETopK int64
	// Sliding-window / chunked attention (window.go): KV elements per token of the
	// windowed layers, all of them, and the window in tokens; kvPerToken then counts only
	// the full-attention layers.
	kvWindowed, kvWindow int64
	visionParams         int64            // vision tower + projector of a multimodal checkpoint (in params and otherParams)
	Ckpt                 *CheckpointQuant // quantization_config of a pre-quantized checkpoint (quantcfg.go)
	overflow             bool             // a parameter count saturated (overflow.go)

	Pipe *Pipeline // diffusion pipelines only
}

// Params is the total parameter count: every weight the GPU must hold (all MoE experts).
func (m *Model) Params() int64 { return m.ParamCount }

// ActiveParams is the parameter count used per token: for a mixture of experts only the
// shared weights plus the routed top-k experts; equal to Params for dense models. Compute
// (time) estimates scale with it, memory with Params.
func (m *Model) ActiveParams() int64 { return m.ActiveCount }

// IsImageModel reports whether the model is a diffusion pipeline (task image-gen only).
func (m *Model) IsImageModel() bool { return m.Kind == KindDiffusion }

// LoRAModules lists the linear module names a --lora-targets list may name.
func (m *Model) LoRAModules() []string {
	seen := map[string]bool{}
	var out []string
	for _, mod := range m.Modules {
		if !seen[mod.Name] {
			seen[mod.Name] = true
			out = append(out, mod.Name)
		}
	}
	sort.Strings(out)
	return out
}

// DefaultLoRATargets is PEFT's default target_modules for the architecture
// (peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
func (m *Model) DefaultLoRATargets() []string { return append([]string(nil), m.defaultTargets...) }

// Module is one kind of linear layer: in x out weights, count copies in the whole model.
type Module struct {
	Name    string
	In, Out int64
	Count   int64
	Routed  bool // a routed MoE expert: only top-k of the experts see each token
	router  bool // an MoE router: never quantized (AutoGPTQ, AutoAWQ and MXFP4 keep it 16-bit)
}

// Activation functions keep only their input for backward (one ActEntry of the
// intermediate size). gelu_new / gelu_fast written out in Python
// (transformers' NewGELUActivation, 0.5*x*(1+tanh(c*(x+0.044715*x^3)))) would keep tanh's
// output, 0.5*x and (1+tanh): 3 more. The estimator assumes the fused kernel instead:
// PyTorch's F.gelu(approximate="tanh") computes the same function keeping only its input,
// and it is what LitGPT, torchtune and compiled or kernel-fused HF training (Liger, Unsloth,
// torch.compile) run. Every activation therefore keeps only its input.
//
// Plain Hugging Face transformers does keep the 3 extra tensors: on an H200 (issue 8,
// calibration/measured_gpu.csv, transformers 5.17) phi-2 LoRA r=8 at seq 1024 allocated
// 10.10 GiB against 7.92 estimated, and GPT-2 / GPT-2 medium full fine-tunes came out 12 %
// and 8 % low; 3 tensors x 1024 tokens x 10240 x 2 B x 32 layers = 1.9 GiB is the phi-2
// gap. The job's framework says which runs: --framework hf (the default) counts the 3
// extra tensors for configs naming gelu_new or gelu_fast (Model.pyGELU, in layerBytes);
// litgpt and torchtune run the fused kernel.
//
// ActEntry is one tensor an architecture's layer keeps for the backward pass, in elements
// per token. Counting saved tensors op by op is the method of Korthikanti et al. 2022
// ("Reducing Activation Recomputation in Large Transformer Models", section 4.1); the
// entries follow the Hugging Face implementations rather than Megatron's.
type ActEntry struct {
	Elems int64
	FP32  bool     // kept in fp32 whatever the compute dtype (upcast RMSNorm inputs)
	Mask  bool     // dropout mask: 1 byte per element, only when the dropout is active
	Mods  []string // saved only when one of these linear modules needs its input for a weight gradient
}

// Stack is a sequence of identical transformer layers.
type Stack struct {
	Layers      int64
	Entries     []ActEntry
	QDim, KVDim int64 // query width (heads x head_dim) and key/value width per layer
	Heads       int64
	SoftmaxFP32 bool  // eager attention upcasts the scores to fp32 before softmax
	AttnDropout bool  // eager attention applies dropout to the probabilities in training
	Cross       bool  // has cross attention over the encoder (seq2seq decoder)
	LayerParams int64 // parameters of one layer (FSDP/ZeRO-3 gather granularity)
	Hidden      int64
	// PlainMLP: one up projection and an activation (GPT-style), so a prefill holds two
	// intermediate-size tensors at once, not a gated MLP's three (estimateInference).
	PlainMLP bool
}

// builder accumulates parameters and modules while an architecture is parsed.
type builder struct {
	m *Model
}

func (b *builder) linear(name string, in, out, count int64, bias bool) {
	m := b.m
	m.Modules = append(m.Modules, Module{Name: name, In: in, Out: out, Count: count})
	m.LinearParams = m.addCount(m.LinearParams, m.mulCount(in, out, count))
	if bias {
		m.OtherParams = m.addCount(m.OtherParams, m.mulCount(out, count))
	}
	m.LargestTensor = max(m.LargestTensor, m.mulCount(in, out))
}

// expert adds routed MoE expert weights.
func (b *builder) expert(name string, in, out, count int64) {
	b.linear(name, in, out, count, false)
	b.m.Modules[len(b.m.Modules)-1].Routed = true
}

func (b *builder) other(n int64) { b.m.OtherParams = b.m.addCount(b.m.OtherParams, n) }

// otherN adds the product of factors to the non-linear parameters (checked).
func (b *builder) otherN(factors ...int64) { b.other(b.m.mulCount(factors...)) }

func (b *builder) embed(rows, cols int64) {
	m := b.m
	n := m.mulCount(rows, cols)
	m.EmbedParams = m.addCount(m.EmbedParams, n)
	m.LargestTensor = max(m.LargestTensor, n)
}

func (b *builder) head(rows, cols int64, bias bool) {
	m := b.m
	n := m.mulCount(rows, cols)
	m.HeadParams = m.addCount(m.HeadParams, n)
	if bias {
		b.other(rows)
	}
	m.LargestTensor = max(m.LargestTensor, n)
}

func (b *builder) finish() {
	m := b.m
	m.ParamCount = m.addCount(m.EmbedParams, m.HeadParams, m.LinearParams, m.OtherParams)
	if m.ActiveCount == 0 {
		m.ActiveCount = m.ParamCount
	}
}

type archBuilder func(c *hfConfig, m *Model) error

var builders = map[string]archBuilder{
	"llama": buildLlama, "mistral": buildLlama, "mixtral": buildLlama, "qwen2": buildLlama,
	"gemma": buildLlama, "gemma2": buildLlama, "phi3": buildLlama,
	"qwen3": buildLlama, "gemma3_text": buildLlama, "gemma3": buildGemma3,
	"qwen3_moe": buildQwen3MoE, "llama4": buildLlama4, "llama4_text": buildLlama4, "gpt_oss": buildGptOss,
	"deepseek_v2": buildDeepseekV2, "deepseek_v3": buildDeepseekV3,
	"phi":    buildPhi,
	"falcon": buildFalcon, "RefinedWeb": buildFalcon, "RefinedWebModel": buildFalcon,
	"gpt2": buildGPT2, "gpt_bigcode": buildGPT2,
	"gpt_neox": buildNeoX,
	"bloom":    buildBloom,
	"opt":      buildOPT,
	"t5":       buildT5, "mt5": buildT5,
	"bert": buildBERT,
}

// ModelFromConfig parses a Hugging Face config.json. src names the file in error
// messages. Name and HFID are left for the caller to fill.
func ModelFromConfig(src string, data []byte) (*Model, error) {
	c, err := parseHFConfig(src, data)
	if err != nil {
		return nil, err
	}
	mt, err := c.modelType()
	if err != nil {
		return nil, err
	}
	build, ok := builders[mt]
	if !ok {
		return nil, unsupportedArch(src, mt)
	}
	m := &Model{Architecture: mt, Kind: KindCausalLM}
	if mt == "RefinedWeb" || mt == "RefinedWebModel" {
		m.Architecture = "falcon"
	}
	if err := build(c, m); err != nil {
		return nil, err
	}
	if m.Dec.Layers == 0 {
		return nil, pricing.Errorf(pricing.Internal, "%s: no layers parsed", src)
	}
	if err := m.checkCounts(src); err != nil {
		return nil, err
	}
	if err := m.readQuantConfig(c); err != nil {
		return nil, err
	}
	return m, nil
}

// llamaLayer appends the saved tensors of a pre-norm decoder layer with RMSNorm (upcast to
// fp32 as the HF implementations do) and a gated MLP, e.g. Llama/Mistral/Qwen2/Gemma.
func llamaEntries(h, qDim, inter, topK int64, qkvMods, oMods, upMods, downMods []string, norms int64) []ActEntry {
	e := []ActEntry{
		{Elems: h, FP32: true},          // input_layernorm keeps its fp32 input
		{Elems: h, Mods: qkvMods},       // normalised hidden: input of q/k/v
		{Elems: qDim, Mods: oMods},      // attention output reshaped for o_proj
		{Elems: h, FP32: true},          // post_attention_layernorm's fp32 input
		{Elems: h * topK, Mods: upMods}, // normalised hidden (gathered per expert)
		{Elems: inter * topK},           // gate projection (activation input)
		{Elems: inter * topK},           // act(gate), kept by the product
		{Elems: inter * topK},           // up projection, kept by the product
		{Elems: inter * topK, Mods: downMods},
	}
	if norms > 2 { // gemma2: post-attention and post-feedforward norms too
		e = append(e, ActEntry{Elems: (norms - 2) * h, FP32: true})
	}
	return e
}

// llamaShape is what a Llama-family config.json says about the model's shape.
type llamaShape struct {
	h, L, nh, kv, hd, I, V int64
	tie, attnBias, mlpBias bool
	norms                  int64 // RMSNorms per layer (gemma2 has four)
}

// readLlamaShape reads the shape and the model-wide fields (context, soft-capping).
func readLlamaShape(c *hfConfig, m *Model) (llamaShape, error) {
	rd := &cfgReader{c: c}
	mt := m.Architecture
	s := llamaShape{norms: 2}
	s.h = rd.int("hidden_size")
	s.L = rd.int("num_hidden_layers")
	s.nh = rd.int("num_attention_heads")
	s.kv = rd.optInt(s.nh, "num_key_value_heads")
	if rd.err != nil {
		return s, rd.err
	}
	if s.kv == 0 || s.nh%s.kv != 0 {
		return s, fieldErr(c.src, "num_key_value_heads", "%d does not divide num_attention_heads %d", s.kv, s.nh)
	}
	s.hd = rd.optInt(s.h/s.nh, "head_dim")
	s.I = rd.int("intermediate_size")
	s.V = rd.int("vocab_size")
	s.tie = rd.optBool(mt == "gemma" || mt == "gemma2" || mt == "gemma3_text", "tie_word_embeddings")
	s.attnBias = rd.optBool(mt == "qwen2", "attention_bias")
	s.mlpBias = rd.optBool(false, "mlp_bias")
	m.MaxPos = rd.optInt(0, "max_position_embeddings")
	if mt == "gemma3_text" {
		s.norms = 4 // input, post-attention, pre- and post-feedforward RMSNorms
	}
	if mt == "gemma2" {
		s.norms = 4
		sc := rd.optFloat(0, "attn_logit_softcapping")
		fc := rd.optFloat(0, "final_logit_softcapping")
		m.AttnSoftcap, m.LogitSoftcap = sc > 0, fc > 0
	}
	if s.hd == 0 {
		s.hd = s.h / s.nh
	}
	return s, rd.err
}

func buildLlama(c *hfConfig, m *Model) error {
	s, err := readLlamaShape(c, m)
	if err != nil {
		return err
	}
	b := &builder{m: m}
	h, L := s.h, s.L
	m.Hidden, m.Vocab = h, s.V
	qDim, kvDim := s.nh*s.hd, s.kv*s.hd
	b.embed(s.V, h)
	if !s.tie {
		b.head(s.V, h, false)
	}
	b.other(L*s.norms*h + h) // RMSNorm weights per layer + final norm
	qkvMods := llamaAttention(b, s, qDim, kvDim)
	if m.Architecture == "qwen3" || m.Architecture == "gemma3_text" {
		b.otherN(2, s.hd, L) // q_norm and k_norm: one RMSNorm weight of head_dim each per layer
	}
	upMods, downMods, topK, err := llamaMLP(c, b, s)
	if err != nil {
		return err
	}
	b.finish()
	m.Dec = Stack{
		Layers: L, QDim: qDim, KVDim: kvDim, Heads: s.nh, SoftmaxFP32: true, Hidden: h,
		Entries:     llamaEntries(h, qDim, s.I, topK, qkvMods, []string{"o_proj"}, upMods, downMods, s.norms),
		LayerParams: (m.LinearParams + m.OtherParams) / L,
	}
	m.KVPerToken = 2 * L * kvDim
	return m.setWindows(c, L, 2*kvDim) // window.go
}

// llamaAttention adds the attention projections and returns the modules that read the
// normalised hidden state.
func llamaAttention(b *builder, s llamaShape, qDim, kvDim int64) []string {
	m, h, L := b.m, s.h, s.L
	var qkvMods []string
	if m.Architecture == "phi3" {
		b.linear("qkv_proj", h, qDim+2*kvDim, L, false)
		qkvMods = []string{"qkv_proj"}
		m.defaultTargets = []string{"qkv_proj"}
	} else {
		// Qwen2 has biases on q, k, v (not o): attention_bias defaults true for it.
		b.linear("q_proj", h, qDim, L, s.attnBias)
		b.linear("k_proj", h, kvDim, L, s.attnBias)
		b.linear("v_proj", h, kvDim, L, s.attnBias)
		qkvMods = []string{"q_proj", "k_proj", "v_proj"}
		m.defaultTargets = []string{"q_proj", "v_proj"}
	}
	b.linear("o_proj", qDim, h, L, s.attnBias && m.Architecture != "qwen2")
	return qkvMods
}

// llamaMLP adds the gated MLP (Mixtral's routed experts, phi3's fused gate_up_proj) and
// returns the modules reading its input and the one reading the product, and how many
// experts see each token.
func llamaMLP(c *hfConfig, b *builder, s llamaShape) (upMods, downMods []string, topK int64, err error) {
	m, h, I, L := b.m, s.h, s.I, s.L
	switch m.Architecture {
	case "mixtral":
		rd := &cfgReader{c: c}
		E := rd.int("num_local_experts")
		k := rd.int("num_experts_per_tok")
		if rd.err != nil {
			return nil, nil, 0, rd.err
		}
		if k > E {
			return nil, nil, 0, fieldErr(c.src, "num_experts_per_tok", "%d exceeds num_local_experts %d", k, E)
		}
		b.router("gate", h, E, L, false)
		b.expert("w1", h, I, L*E)
		b.expert("w3", h, I, L*E)
		b.expert("w2", I, h, L*E)
		m.MoEExperts, m.MoETopK = E, k
		b.finish()
		m.ActiveCount = m.ParamCount - (E-k)*3*h*I*L
		return []string{"w1", "w3"}, []string{"w2"}, k, nil
	case "phi3":
		b.linear("gate_up_proj", h, 2*I, L, s.mlpBias)
		b.linear("down_proj", I, h, L, s.mlpBias)
		return []string{"gate_up_proj"}, []string{"down_proj"}, 1, nil
	}
	b.linear("gate_proj", h, I, L, s.mlpBias)
	b.linear("up_proj", h, I, L, s.mlpBias)
	b.linear("down_proj", I, h, L, s.mlpBias)
	return []string{"gate_proj", "up_proj"}, []string{"down_proj"}, 1, nil
}
