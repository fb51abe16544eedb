package fit

import (
	"sort"
	"strings"

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

	params, active int64

	hidden, vocab, maxPos int64
	dec                   stack  // decoder (or the only) stack
	enc                   *stack // encoder stack of a seq2seq model
	// Parameter classes, used for quantization (only linear weights inside blocks are
	// quantized by bitsandbytes; embeddings, lm_head, norms and biases stay in the compute
	// dtype) and for optimizers that treat matrices specially (Adafactor).
	embedParams, headParams, linearParams, otherParams int64
	largestTensor                                      int64 // elements of the largest single tensor (load transient)
	modules                                            []module
	defaultTargets                                     []string
	kvPerToken                                         int64 // KV-cache elements per token, all layers
	kvPerTokenCross                                    int64 // seq2seq: cross-attention K/V per encoder token
	logitSoftcap                                       bool  // gemma2 final_logit_softcapping: extra vocab-sized tensors
	// pyGELU is the MLP's intermediate size when transformers writes the activation out in
	// Python (gelu_new / gelu_fast: NewGELUActivation), 0 otherwise; see actEntry.
	pyGELU              int64
	attnSoftcap         bool // gemma2 attn_logit_softcapping: fused SDPA kernels cannot apply it
	moeExperts, moeTopK int64
	// Sliding-window / chunked attention (window.go): KV elements per token of the
	// windowed layers, all of them, and the window in tokens; kvPerToken then counts only
	// the full-attention layers.
	kvWindowed, kvWindow int64
	visionParams         int64      // vision tower + projector of a multimodal checkpoint (in params and otherParams)
	ckpt                 *ckptQuant // quantization_config of a pre-quantized checkpoint (quantcfg.go)
	overflow             bool       // a parameter count saturated (overflow.go)

	pipe *pipeline // diffusion pipelines only
}

// Params is the total parameter count: every weight the GPU must hold (all MoE experts).
func (m *Model) Params() int64 { return m.params }

// ActiveParams is the parameter count used per token: for a mixture of experts only the
// shared weights plus the routed top-k experts; equal to Params for dense models. Compute
// (time) estimates scale with it, memory with Params.
func (m *Model) ActiveParams() int64 { return m.active }

// IsImageModel reports whether the model is a diffusion pipeline (task image-gen only).
func (m *Model) IsImageModel() bool { return m.Kind == KindDiffusion }

// LoRAModules lists the linear module names a --lora-targets list may name.
func (m *Model) LoRAModules() []string {
	seen := map[string]bool{}
	var out []string
	for _, mod := range m.modules {
		if !seen[mod.name] {
			seen[mod.name] = true
			out = append(out, mod.name)
		}
	}
	sort.Strings(out)
	return out
}

// DefaultLoRATargets is PEFT's default target_modules for the architecture
// (peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
func (m *Model) DefaultLoRATargets() []string { return append([]string(nil), m.defaultTargets...) }

// module is one kind of linear layer: in x out weights, count copies in the whole model.
type module struct {
	name    string
	in, out int64
	count   int64
	routed  bool // a routed MoE expert: only top-k of the experts see each token
	router  bool // an MoE router: never quantized (AutoGPTQ, AutoAWQ and MXFP4 keep it 16-bit)
}

// Activation functions keep only their input for backward (one actEntry of the
// intermediate size). gelu_new / gelu_fast written out in Python
// (transformers' NewGELUActivation, 0.5*x*(1+tanh(c*(x+0.044715*x^3)))) would keep tanh's
// output, 0.5*x and (1+tanh): 3 more. The estimator assumes the fused kernel instead:
// PyTorch's F.gelu(approximate="tanh") computes the same function keeping only its input,
// and it is what LitGPT, torchtune and compiled or kernel-fused HF training (Liger, Unsloth,
// torch.compile) run. Every activation therefore keeps only its input.
//
// Plain Hugging Face transformers does keep the 3 extra tensors: on an H200 (issue 8,
// fit/testdata/measured_gpu.csv, transformers 5.17) phi-2 LoRA r=8 at seq 1024 allocated
// 10.10 GiB against 7.92 estimated, and GPT-2 / GPT-2 medium full fine-tunes came out 12 %
// and 8 % low; 3 tensors x 1024 tokens x 10240 x 2 B x 32 layers = 1.9 GiB is the phi-2
// gap. The job's framework says which runs: --framework hf (the default) counts the 3
// extra tensors for configs naming gelu_new or gelu_fast (Model.pyGELU, in layerBytes);
// litgpt and torchtune run the fused kernel.
//
// actEntry is one tensor an architecture's layer keeps for the backward pass, in elements
// per token. Counting saved tensors op by op is the method of Korthikanti et al. 2022
// ("Reducing Activation Recomputation in Large Transformer Models", section 4.1); the
// entries follow the Hugging Face implementations rather than Megatron's.
type actEntry struct {
	elems int64
	fp32  bool     // kept in fp32 whatever the compute dtype (upcast RMSNorm inputs)
	mask  bool     // dropout mask: 1 byte per element, only when the dropout is active
	mods  []string // saved only when one of these linear modules needs its input for a weight gradient
}

// stack is a sequence of identical transformer layers.
type stack struct {
	layers      int64
	entries     []actEntry
	qDim, kvDim int64 // query width (heads x head_dim) and key/value width per layer
	heads       int64
	softmaxFP32 bool  // eager attention upcasts the scores to fp32 before softmax
	attnDropout bool  // eager attention applies dropout to the probabilities in training
	cross       bool  // has cross attention over the encoder (seq2seq decoder)
	layerParams int64 // parameters of one layer (FSDP/ZeRO-3 gather granularity)
	hidden      int64
	// plainMLP: one up projection and an activation (GPT-style), so a prefill holds two
	// intermediate-size tensors at once, not a gated MLP's three (estimateInference).
	plainMLP bool
}

// builder accumulates parameters and modules while an architecture is parsed.
type builder struct {
	m *Model
}

func (b *builder) linear(name string, in, out, count int64, bias bool) {
	m := b.m
	m.modules = append(m.modules, module{name: name, in: in, out: out, count: count})
	m.linearParams = m.addCount(m.linearParams, m.mulCount(in, out, count))
	if bias {
		m.otherParams = m.addCount(m.otherParams, m.mulCount(out, count))
	}
	m.largestTensor = max(m.largestTensor, m.mulCount(in, out))
}

// expert adds routed MoE expert weights.
func (b *builder) expert(name string, in, out, count int64) {
	b.linear(name, in, out, count, false)
	b.m.modules[len(b.m.modules)-1].routed = true
}

func (b *builder) other(n int64) { b.m.otherParams = b.m.addCount(b.m.otherParams, n) }

// otherN adds the product of factors to the non-linear parameters (checked).
func (b *builder) otherN(factors ...int64) { b.other(b.m.mulCount(factors...)) }

func (b *builder) embed(rows, cols int64) {
	m := b.m
	n := m.mulCount(rows, cols)
	m.embedParams = m.addCount(m.embedParams, n)
	m.largestTensor = max(m.largestTensor, n)
}

func (b *builder) head(rows, cols int64, bias bool) {
	m := b.m
	n := m.mulCount(rows, cols)
	m.headParams = m.addCount(m.headParams, n)
	if bias {
		b.other(rows)
	}
	m.largestTensor = max(m.largestTensor, n)
}

func (b *builder) finish() {
	m := b.m
	m.params = m.addCount(m.embedParams, m.headParams, m.linearParams, m.otherParams)
	if m.active == 0 {
		m.active = m.params
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
	if m.dec.layers == 0 {
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
func llamaEntries(h, qDim, inter, topK int64, qkvMods, oMods, upMods, downMods []string, norms int64) []actEntry {
	e := []actEntry{
		{elems: h, fp32: true},          // input_layernorm keeps its fp32 input
		{elems: h, mods: qkvMods},       // normalised hidden: input of q/k/v
		{elems: qDim, mods: oMods},      // attention output reshaped for o_proj
		{elems: h, fp32: true},          // post_attention_layernorm's fp32 input
		{elems: h * topK, mods: upMods}, // normalised hidden (gathered per expert)
		{elems: inter * topK},           // gate projection (activation input)
		{elems: inter * topK},           // act(gate), kept by the product
		{elems: inter * topK},           // up projection, kept by the product
		{elems: inter * topK, mods: downMods},
	}
	if norms > 2 { // gemma2: post-attention and post-feedforward norms too
		e = append(e, actEntry{elems: (norms - 2) * h, fp32: true})
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
	m.maxPos = rd.optInt(0, "max_position_embeddings")
	if mt == "gemma3_text" {
		s.norms = 4 // input, post-attention, pre- and post-feedforward RMSNorms
	}
	if mt == "gemma2" {
		s.norms = 4
		sc := rd.optFloat(0, "attn_logit_softcapping")
		fc := rd.optFloat(0, "final_logit_softcapping")
		m.attnSoftcap, m.logitSoftcap = sc > 0, fc > 0
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
	m.hidden, m.vocab = h, s.V
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
	m.dec = stack{
		layers: L, qDim: qDim, kvDim: kvDim, heads: s.nh, softmaxFP32: true, hidden: h,
		entries:     llamaEntries(h, qDim, s.I, topK, qkvMods, []string{"o_proj"}, upMods, downMods, s.norms),
		layerParams: (m.linearParams + m.otherParams) / L,
	}
	m.kvPerToken = 2 * L * kvDim
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
		m.moeExperts, m.moeTopK = E, k
		b.finish()
		m.active = m.params - (E-k)*3*h*I*L
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

func buildDeepseekV2(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	ints := map[string]int64{}
	for _, k := range []string{"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
		"vocab_size", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "moe_intermediate_size",
		"n_routed_experts", "num_experts_per_tok"} {
		v, err := c.int(k)
		if err != nil {
			return err
		}
		ints[k] = v
	}
	h, L, nh, I, V := ints["hidden_size"], ints["num_hidden_layers"], ints["num_attention_heads"], ints["intermediate_size"], ints["vocab_size"]
	kvr, nope, rope, vhd := ints["kv_lora_rank"], ints["qk_nope_head_dim"], ints["qk_rope_head_dim"], ints["v_head_dim"]
	moeI, E, k := ints["moe_intermediate_size"], ints["n_routed_experts"], ints["num_experts_per_tok"]
	shared := rd.optInt(0, "n_shared_experts")
	firstDense := rd.optInt(0, "first_k_dense_replace")
	freq := rd.optInt(1, "moe_layer_freq")
	if rd.err != nil {
		return rd.err
	}
	if freq == 0 {
		freq = 1
	}
	qr := rd.optInt(0, "q_lora_rank")
	tie := rd.optBool(false, "tie_word_embeddings")
	if rd.err != nil {
		return rd.err
	}
	m.maxPos = rd.optInt(0, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	m.hidden, m.vocab = h, V
	b.embed(V, h)
	if !tie {
		b.head(V, h, false)
	}
	qHead := nope + rope
	deepseekAttention(b, h, L, nh, qr, kvr, nope, rope, vhd)
	b.other(2*h*L + h)
	moeLayers := deepseekMLP(b, h, L, I, moeI, E, shared, firstDense, freq)
	dense := L - moeLayers
	b.finish()
	m.active = m.params - (E-k)*3*h*moeI*moeLayers
	m.moeExperts, m.moeTopK = E, k
	// Activation width per token of an average layer's MLP: routed top-k plus shared.
	actI := (dense*I + moeLayers*(k+shared)*moeI) / L
	qDim := nh * qHead
	m.dec = stack{
		layers: L, qDim: qDim, kvDim: qDim, heads: nh, softmaxFP32: true, hidden: h,
		entries: llamaEntries(h, nh*vhd, actI, 1, []string{"q_proj", "q_a_proj", "kv_a_proj_with_mqa"},
			[]string{"o_proj"}, []string{"gate_proj", "up_proj"}, []string{"down_proj"}, 2),
		layerParams: (m.linearParams + m.otherParams) / L,
	}
	// Multi-head latent attention caches the compressed latent (kv_lora_rank) plus the
	// shared rotary key per token and layer (DeepSeek-V2 paper, section 2.1.2), not
	// per-head keys and values.
	m.kvPerToken = L * (kvr + rope)
	m.defaultTargets = []string{"q_proj", "kv_b_proj"}
	if qr > 0 {
		m.defaultTargets = []string{"q_b_proj", "kv_b_proj"}
	}
	return nil
}

// deepseekAttention adds multi-head latent attention: an optional low-rank query, the
// compressed KV latent with its shared rotary key, and their up-projections.
func deepseekAttention(b *builder, h, L, nh, qr, kvr, nope, rope, vhd int64) {
	qHead := nope + rope
	if qr > 0 { // low-rank query (DeepSeek-V2 full); V2-Lite projects directly
		b.linear("q_a_proj", h, qr, L, false)
		b.other(qr * L) // q_a_layernorm
		b.linear("q_b_proj", qr, nh*qHead, L, false)
	} else {
		b.linear("q_proj", h, nh*qHead, L, false)
	}
	b.linear("kv_a_proj_with_mqa", h, kvr+rope, L, false)
	b.other(kvr * L) // kv_a_layernorm
	b.linear("kv_b_proj", kvr, nh*(nope+vhd), L, false)
	b.linear("o_proj", nh*vhd, h, L, false)
}

// deepseekMLP adds the dense MLPs of the first layers and the routed and shared experts
// of every freq-th layer after them; it returns the number of MoE layers.
func deepseekMLP(b *builder, h, L, I, moeI, E, shared, firstDense, freq int64) int64 {
	var moeLayers int64
	for i := int64(0); i < L; i++ {
		if i >= firstDense && i%freq == 0 {
			moeLayers++
		}
	}
	if dense := L - moeLayers; dense > 0 {
		b.linear("gate_proj", h, I, dense, false)
		b.linear("up_proj", h, I, dense, false)
		b.linear("down_proj", I, h, dense, false)
	}
	if moeLayers > 0 {
		b.expert("gate_proj", h, moeI, moeLayers*E) // routed experts
		b.expert("up_proj", h, moeI, moeLayers*E)
		b.expert("down_proj", moeI, h, moeLayers*E)
		if shared > 0 {
			b.linear("gate_proj", h, moeI*shared, moeLayers, false)
			b.linear("up_proj", h, moeI*shared, moeLayers, false)
			b.linear("down_proj", moeI*shared, h, moeLayers, false)
		}
		b.otherN(E, h, moeLayers) // MoEGate.weight is a Parameter, not an nn.Linear
	}
	return moeLayers
}

func buildPhi(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	h := rd.int("hidden_size", "n_embd")
	L := rd.int("num_hidden_layers", "n_layer")
	nh := rd.int("num_attention_heads", "n_head")
	kv := rd.optInt(nh, "num_key_value_heads")
	I := rd.optInt(4*h, "intermediate_size", "n_inner")
	V := rd.int("vocab_size")
	tie := rd.optBool(false, "tie_word_embeddings")
	act := rd.optString("gelu_new", "hidden_act", "activation_function")
	if rd.err != nil {
		return rd.err
	}
	m.pyGELU = pythonGELU(act, I)
	m.maxPos = rd.optInt(0, "max_position_embeddings", "n_positions")
	if rd.err != nil {
		return rd.err
	}
	m.hidden, m.vocab = h, V
	hd := h / nh
	b.embed(V, h)
	if !tie {
		b.head(V, h, true) // phi's lm_head has a bias
	}
	b.linear("q_proj", h, nh*hd, L, true)
	b.linear("k_proj", h, kv*hd, L, true)
	b.linear("v_proj", h, kv*hd, L, true)
	b.linear("dense", nh*hd, h, L, true)
	b.linear("fc1", h, I, L, true)
	b.linear("fc2", I, h, L, true)
	b.other(2*h*L + 2*h) // one LayerNorm (weight+bias) per layer (parallel block) + final
	b.finish()
	m.dec = stack{
		layers: L, qDim: nh * hd, kvDim: kv * hd, heads: nh, softmaxFP32: true, hidden: h,
		entries: []actEntry{
			{elems: h}, // LayerNorm input
			{elems: h, mods: []string{"q_proj", "k_proj", "v_proj", "fc1"}},
			{elems: nh * hd, mods: []string{"dense"}},
			{elems: I},
			{elems: I, mods: []string{"fc2"}},
		},
		layerParams: (m.linearParams + m.otherParams) / L,
	}
	m.kvPerToken = 2 * L * kv * hd
	m.defaultTargets = []string{"q_proj", "v_proj"}
	return nil
}

func buildFalcon(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	h := rd.int("hidden_size", "n_embd")
	L := rd.int("num_hidden_layers", "n_layer")
	nh := rd.int("num_attention_heads", "n_head")
	V := rd.int("vocab_size")
	newArch := rd.optBool(false, "new_decoder_architecture")
	mq := rd.optBool(true, "multi_query")
	parallel := rd.optBool(true, "parallel_attn")
	bias := rd.optBool(false, "bias")
	tie := rd.optBool(true, "tie_word_embeddings")
	ffn := rd.optInt(4*h, "ffn_hidden_size")
	if rd.err != nil {
		return rd.err
	}
	hd := h / nh
	var kv int64
	switch {
	case newArch:
		var err error
		if kv, err = c.int("num_kv_heads", "n_head_kv"); err != nil {
			return err
		}
	case mq:
		kv = 1 // multi-query attention: one shared key/value head
	default:
		kv = nh
	}
	m.maxPos = rd.optInt(2048, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	m.hidden, m.vocab = h, V
	b.embed(V, h)
	if !tie {
		b.head(V, h, false)
	}
	b.linear("query_key_value", h, (nh+2*kv)*hd, L, bias)
	b.linear("dense", h, h, L, bias)
	b.linear("dense_h_to_4h", h, ffn, L, bias)
	b.linear("dense_4h_to_h", ffn, h, L, bias)
	var lns int64
	switch {
	case newArch:
		if lns = rd.optInt(2, "num_ln_in_parallel_attn"); rd.err != nil {
			return rd.err
		}
		if lns == 0 {
			lns = 2
		}
	case parallel:
		lns = 1
	default:
		lns = 2
	}
	b.other(L*lns*2*h + 2*h)
	b.finish()
	qkvMods := []string{"query_key_value"}
	if lns == 1 { // one LayerNorm feeds both attention and MLP
		qkvMods = append(qkvMods, "dense_h_to_4h")
	}
	entries := []actEntry{
		{elems: lns * h}, // LayerNorm inputs
		{elems: h, mods: qkvMods},
		{elems: h, mods: []string{"dense"}},
		{elems: ffn}, // GELU input
		{elems: ffn, mods: []string{"dense_4h_to_h"}},
	}
	if lns > 1 {
		entries = append(entries, actEntry{elems: h, mods: []string{"dense_h_to_4h"}})
	}
	m.dec = stack{layers: L, qDim: nh * hd, kvDim: kv * hd, heads: nh, softmaxFP32: false, hidden: h,
		entries: entries, layerParams: (m.linearParams + m.otherParams) / L}
	m.kvPerToken = 2 * L * kv * hd
	m.defaultTargets = []string{"query_key_value"}
	return nil
}

// buildGPT2 covers gpt2 and gpt_bigcode (same layout; bigcode adds multi-query attention).
func buildGPT2(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	h := rd.int("n_embd", "hidden_size")
	L := rd.int("n_layer", "num_hidden_layers")
	nh := rd.int("n_head", "num_attention_heads")
	V := rd.int("vocab_size")
	P := rd.int("n_positions", "max_position_embeddings")
	I := rd.optInt(4*h, "n_inner")
	act := rd.optString("gelu_new", "activation_function")
	if rd.err != nil {
		return rd.err
	}
	if I == 0 {
		I = 4 * h
	}
	m.pyGELU = pythonGELU(act, I)
	mq := false
	if m.Architecture == "gpt_bigcode" {
		if mq = rd.optBool(true, "multi_query"); rd.err != nil {
			return rd.err
		}
	}
	tie, err := c.optBool(true, "tie_word_embeddings")
	if err != nil {
		return err
	}
	resid := rd.optFloat(0.1, "resid_pdrop")
	attnDrop := rd.optFloat(0.1, "attn_pdrop")
	if rd.err != nil {
		return rd.err
	}
	hd := h / nh
	kv := nh
	if mq {
		kv = 1
	}
	m.maxPos, m.hidden, m.vocab = P, h, V
	b.embed(V, h)
	b.embed(P, h)
	if !tie {
		b.head(V, h, false)
	}
	b.linear("c_attn", h, h+2*kv*hd, L, true)
	b.linear("c_proj", h, h, L, true)
	b.linear("c_fc", h, I, L, true)
	b.linear("c_proj", I, h, L, true)
	b.other(L*4*h + 2*h) // ln_1, ln_2 (weight+bias) + ln_f
	b.finish()
	entries := []actEntry{
		{elems: 2 * h}, // ln_1 and ln_2 inputs
		{elems: h, mods: []string{"c_attn"}},
		{elems: h, mods: []string{"c_proj"}},
		{elems: h, mods: []string{"c_fc"}},
		{elems: I},
		{elems: I, mods: []string{"c_proj"}},
	}
	if resid > 0 {
		entries = append(entries, actEntry{elems: 2 * h, mask: true})
	}
	m.dec = stack{layers: L, qDim: h, kvDim: kv * hd, heads: nh, attnDropout: attnDrop > 0, hidden: h,
		entries: entries, layerParams: (m.linearParams + m.otherParams) / L}
	m.kvPerToken = 2 * L * kv * hd
	m.defaultTargets = []string{"c_attn"}
	return nil
}

func buildNeoX(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	h := rd.int("hidden_size")
	L := rd.int("num_hidden_layers")
	nh := rd.int("num_attention_heads")
	I := rd.int("intermediate_size")
	V := rd.int("vocab_size")
	tie := rd.optBool(false, "tie_word_embeddings")
	bias := rd.optBool(true, "attention_bias")
	if rd.err != nil {
		return rd.err
	}
	m.maxPos = rd.optInt(0, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	m.hidden, m.vocab = h, V
	b.embed(V, h)
	if !tie {
		b.head(V, h, false)
	}
	b.linear("query_key_value", h, 3*h, L, bias)
	b.linear("dense", h, h, L, bias)
	b.linear("dense_h_to_4h", h, I, L, true)
	b.linear("dense_4h_to_h", I, h, L, true)
	b.other(L*4*h + 2*h)
	b.finish()
	m.dec = stack{layers: L, qDim: h, kvDim: h, heads: nh, softmaxFP32: true, hidden: h,
		entries: []actEntry{
			{elems: 2 * h}, // two LayerNorm inputs (parallel residual still normalises twice)
			{elems: h, mods: []string{"query_key_value"}},
			{elems: h, mods: []string{"dense"}},
			{elems: h, mods: []string{"dense_h_to_4h"}},
			{elems: I},
			{elems: I, mods: []string{"dense_4h_to_h"}},
		},
		layerParams: (m.linearParams + m.otherParams) / L}
	m.kvPerToken = 2 * L * h
	m.defaultTargets = []string{"query_key_value"}
	return nil
}

func buildBloom(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	h := rd.int("hidden_size", "n_embed")
	L := rd.int("n_layer", "num_hidden_layers")
	nh := rd.int("n_head", "num_attention_heads")
	V := rd.int("vocab_size")
	if rd.err != nil {
		return rd.err
	}
	hdrop := rd.optFloat(0, "hidden_dropout")
	adrop := rd.optFloat(0, "attention_dropout")
	if rd.err != nil {
		return rd.err
	}
	m.maxPos, m.hidden, m.vocab = 2048, h, V
	b.embed(V, h)
	b.other(2 * h) // word_embeddings_layernorm
	b.linear("query_key_value", h, 3*h, L, true)
	b.linear("dense", h, h, L, true)
	b.linear("dense_h_to_4h", h, 4*h, L, true)
	b.linear("dense_4h_to_h", 4*h, h, L, true)
	b.other(L*4*h + 2*h)
	b.finish()
	entries := []actEntry{
		{elems: 2 * h},
		{elems: h, mods: []string{"query_key_value"}},
		{elems: h, mods: []string{"dense"}},
		{elems: h, mods: []string{"dense_h_to_4h"}},
		{elems: 4 * h},
		// BloomGelu is a custom autograd function over the tanh formula; it keeps its input
		// and the output is kept by the next linear.
		{elems: 4 * h, mods: []string{"dense_4h_to_h"}},
	}
	if hdrop > 0 {
		entries = append(entries, actEntry{elems: 2 * h, mask: true})
	}
	// BLOOM's eager attention adds the ALiBi bias with baddbmm and softmaxes in fp32
	// (attention_softmax_in_fp32).
	m.dec = stack{layers: L, qDim: h, kvDim: h, heads: nh, softmaxFP32: true, attnDropout: adrop > 0, hidden: h,
		entries: entries, layerParams: (m.linearParams + m.otherParams) / L}
	m.kvPerToken = 2 * L * h
	m.defaultTargets = []string{"query_key_value"}
	return nil
}

func buildOPT(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	h := rd.int("hidden_size")
	L := rd.int("num_hidden_layers")
	nh := rd.int("num_attention_heads")
	F := rd.int("ffn_dim")
	V := rd.int("vocab_size")
	P := rd.int("max_position_embeddings")
	wep := rd.optInt(h, "word_embed_proj_dim")
	bias := rd.optBool(true, "enable_bias")
	before := rd.optBool(true, "do_layer_norm_before")
	removeFinal := rd.optBool(false, "_remove_final_layer_norm")
	tie := rd.optBool(true, "tie_word_embeddings")
	if rd.err != nil {
		return rd.err
	}
	drop := rd.optFloat(0.1, "dropout")
	if rd.err != nil {
		return rd.err
	}
	m.maxPos, m.hidden, m.vocab = P, h, V
	b.embed(V, wep)
	b.embed(P+2, h) // OPT's learned positions are offset by 2
	if !tie {
		b.head(V, wep, false)
	}
	if wep != h {
		b.linear("project_in", wep, h, 1, false)
		b.linear("project_out", h, wep, 1, false)
	}
	for _, n := range []string{"q_proj", "k_proj", "v_proj"} {
		b.linear(n, h, h, L, bias)
	}
	b.linear("out_proj", h, h, L, bias)
	b.linear("fc1", h, F, L, bias)
	b.linear("fc2", F, h, L, bias)
	b.other(L * 4 * h)
	if before && !removeFinal {
		b.other(2 * h)
	}
	b.finish()
	entries := []actEntry{
		{elems: 2 * h},
		{elems: h, mods: []string{"q_proj", "k_proj", "v_proj"}},
		{elems: h, mods: []string{"out_proj"}},
		{elems: h, mods: []string{"fc1"}},
		{elems: F}, // ReLU keeps its output, which is also fc2's input
	}
	if drop > 0 {
		entries = append(entries, actEntry{elems: 2 * h, mask: true})
	}
	m.dec = stack{layers: L, qDim: h, kvDim: h, heads: nh, softmaxFP32: true, hidden: h,
		entries: entries, layerParams: (m.linearParams + m.otherParams) / L}
	m.kvPerToken = 2 * L * h
	m.defaultTargets = []string{"q_proj", "v_proj"}
	return nil
}

func buildT5(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	d := rd.int("d_model")
	dkv := rd.int("d_kv")
	nh := rd.int("num_heads")
	dff := rd.int("d_ff")
	Le := rd.int("num_layers")
	Ld := rd.optInt(Le, "num_decoder_layers")
	V := rd.int("vocab_size")
	buckets := rd.optInt(32, "relative_attention_num_buckets")
	ffp := rd.optString("relu", "feed_forward_proj")
	tie := rd.optBool(true, "tie_word_embeddings")
	if rd.err != nil {
		return rd.err
	}
	drop := rd.optFloat(0.1, "dropout_rate")
	if rd.err != nil {
		return rd.err
	}
	gated := strings.HasPrefix(ffp, "gated-")
	m.Kind = KindSeq2Seq
	m.hidden, m.vocab, m.maxPos = d, V, 512
	inner := nh * dkv
	b.embed(V, d) // shared by encoder and decoder
	if !tie {
		b.head(V, d, false)
	}
	for _, n := range []string{"q", "k", "v"} {
		b.linear(n, d, inner, Le+2*Ld, false) // encoder self, decoder self + cross
	}
	b.linear("o", inner, d, Le+2*Ld, false)
	if gated {
		b.linear("wi_0", d, dff, Le+Ld, false)
		b.linear("wi_1", d, dff, Le+Ld, false)
	} else {
		b.linear("wi", d, dff, Le+Ld, false)
	}
	b.linear("wo", dff, d, Le+Ld, false)
	b.other(2*buckets*nh + 2*Le*d + 3*Ld*d + 2*d)
	b.finish()
	wi := []string{"wi", "wi_0", "wi_1"}
	ff := []actEntry{{elems: d, fp32: true}, {elems: d, mods: wi}, {elems: dff}, {elems: dff, mods: []string{"wo"}}}
	if gated {
		ff = append(ff, actEntry{elems: 2 * dff}) // gelu_new(wi_0) and wi_1 kept by the product
	}
	attn := []actEntry{{elems: d, fp32: true}, {elems: d, mods: []string{"q", "k", "v"}}, {elems: inner, mods: []string{"o"}}}
	encE := append(append([]actEntry{}, attn...), ff...)
	decE := append(append(append([]actEntry{}, attn...), attn...), ff...)
	if drop > 0 {
		encE = append(encE, actEntry{elems: 2 * d, mask: true})
		decE = append(decE, actEntry{elems: 3 * d, mask: true})
	}
	lp := (m.linearParams + m.otherParams) / (Le + Ld)
	m.enc = &stack{layers: Le, qDim: inner, kvDim: inner, heads: nh, softmaxFP32: true, attnDropout: drop > 0, hidden: d, entries: encE, layerParams: lp}
	m.dec = stack{layers: Ld, qDim: inner, kvDim: inner, heads: nh, softmaxFP32: true, attnDropout: drop > 0, cross: true, hidden: d, entries: decE, layerParams: lp}
	m.kvPerToken = 2 * Ld * inner
	m.kvPerTokenCross = 2 * Ld * inner
	m.defaultTargets = []string{"q", "v"}
	return nil
}

func buildBERT(c *hfConfig, m *Model) error {
	rd := &cfgReader{c: c}
	b := &builder{m: m}
	h := rd.int("hidden_size")
	L := rd.int("num_hidden_layers")
	nh := rd.int("num_attention_heads")
	I := rd.int("intermediate_size")
	V := rd.int("vocab_size")
	P := rd.int("max_position_embeddings")
	T := rd.optInt(2, "type_vocab_size")
	if rd.err != nil {
		return rd.err
	}
	hdrop := rd.optFloat(0.1, "hidden_dropout_prob")
	adrop := rd.optFloat(0.1, "attention_probs_dropout_prob")
	if rd.err != nil {
		return rd.err
	}
	m.Kind = KindEncoder
	m.maxPos, m.hidden, m.vocab = P, h, V
	b.embed(V, h)
	b.embed(P, h)
	b.embed(T, h)
	b.other(2 * h) // embeddings LayerNorm
	for _, n := range []string{"query", "key", "value"} {
		b.linear(n, h, h, L, true)
	}
	b.linear("dense", h, h, L, true) // attention.output.dense
	b.linear("dense", h, I, L, true) // intermediate.dense
	b.linear("dense", I, h, L, true) // output.dense
	b.other(L * 4 * h)
	b.linear("dense", h, h, 1, true) // pooler (BertModel includes it)
	b.finish()
	entries := []actEntry{
		{elems: 2 * h}, // post-LN: both LayerNorm inputs
		{elems: h, mods: []string{"query", "key", "value"}},
		{elems: h, mods: []string{"dense"}}, // attention context, input of attention.output.dense
		{elems: h, mods: []string{"dense"}}, // first LayerNorm output, input of intermediate.dense
		{elems: I},                          // GELU input
		{elems: I, mods: []string{"dense"}},
	}
	if hdrop > 0 {
		entries = append(entries, actEntry{elems: 2 * h, mask: true})
	}
	m.dec = stack{layers: L, qDim: h, kvDim: h, heads: nh, attnDropout: adrop > 0, hidden: h,
		entries: entries, layerParams: (m.linearParams + m.otherParams) / L}
	m.defaultTargets = []string{"query", "value"}
	return nil
}

// pythonGELU is the intermediate size when transformers' ACT2FN maps the config's
// activation to a Python-written module (gelu_new, gelu_fast), else 0.
func pythonGELU(act string, inter int64) int64 {
	switch act {
	case "gelu_new", "gelu_fast":
		return inter
	}
	return 0
}
