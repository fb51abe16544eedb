package model

// Mixture-of-experts decoders: Qwen3-MoE, Llama 4 and gpt-oss. Every expert's weights are
// resident on the GPUs (Params counts them all); each token runs through its top-k routed
// experts only, so ActiveParams (compute, tokens/s) and the activations and routing
// buffers scale with k, not with the expert count (Fedus et al. 2021, "Switch
// Transformers", section 2; Mixtral paper arXiv:2401.04088, section 2.1).

// router adds an MoE router (a linear layer from the hidden state to one logit per expert).
func (b *builder) router(name string, in, out, count int64, bias bool) {
	b.linear(name, in, out, count, bias)
	b.m.Modules[len(b.m.Modules)-1].router = true
}

// decoderDims are the config fields every decoder-only transformer here has.
type decoderDims struct {
	h, L, nh, kv, hd, V int64
}

func readDecoderDims(c *hfConfig) (decoderDims, error) {
	rd := &cfgReader{c: c}
	d := decoderDims{h: rd.int("hidden_size"), L: rd.int("num_hidden_layers"), nh: rd.int("num_attention_heads"), V: rd.int("vocab_size")}
	d.kv = rd.optInt(d.nh, "num_key_value_heads")
	if rd.err != nil {
		return d, rd.err
	}
	if d.kv == 0 || d.nh%d.kv != 0 {
		return d, fieldErr(c.src, "num_key_value_heads", "%d does not divide num_attention_heads %d", d.kv, d.nh)
	}
	if d.hd = rd.optInt(0, "head_dim"); rd.err != nil {
		return d, rd.err
	}
	if d.hd == 0 {
		d.hd = d.h / d.nh
	}
	return d, nil
}

// gqaAttention adds grouped-query attention's q, k, v and o projections to every layer.
func (b *builder) gqaAttention(d decoderDims, bias bool) (qDim, kvDim int64) {
	qDim, kvDim = d.nh*d.hd, d.kv*d.hd
	b.linear("q_proj", d.h, qDim, d.L, bias)
	b.linear("k_proj", d.h, kvDim, d.L, bias)
	b.linear("v_proj", d.h, kvDim, d.L, bias)
	b.linear("o_proj", qDim, d.h, d.L, bias)
	return qDim, kvDim
}

// embedAndHead adds the token embedding, the untied lm_head and the RMSNorm weights
// (norms per layer plus the final norm).
func (b *builder) embedAndHead(d decoderDims, tie bool, norms int64) {
	b.embed(d.V, d.h)
	if !tie {
		b.head(d.V, d.h, false)
	}
	b.other(b.m.addCount(b.m.mulCount(norms, d.h, d.L), d.h))
}

// gatedMLP adds SwiGLU gate/up/down projections of width inter to count layers (or
// experts when routed).
func (b *builder) gatedMLP(h, inter, count int64, routed bool) {
	add := b.linear
	if routed {
		add = func(name string, in, out, count int64, _ bool) { b.expert(name, in, out, count) }
	}
	add("gate_proj", h, inter, count, false)
	add("up_proj", h, inter, count, false)
	add("down_proj", inter, h, count, false)
}

// moeStack sets the decoder stack of an MoE model: the MLP activations are those of the
// average layer (dense layers' width, MoE layers' top-k experts plus shared experts), and
// every MoE layer keeps its fp32 router logits.
func (m *Model) moeStack(d decoderDims, qDim, kvDim, actInter, routerPerTok int64, upMods []string) {
	e := llamaEntries(d.h, qDim, actInter, 1, []string{"q_proj", "k_proj", "v_proj"}, []string{"o_proj"},
		upMods, []string{"down_proj"}, 2)
	e = append(e, ActEntry{Elems: routerPerTok, FP32: true})
	m.Dec = Stack{Layers: d.L, QDim: qDim, KVDim: kvDim, Heads: d.nh, SoftmaxFP32: true, Hidden: d.h,
		Entries: e, LayerParams: (m.LinearParams + m.OtherParams) / d.L}
	m.KVPerToken = 2 * d.L * kvDim
	m.defaultTargets = []string{"q_proj", "v_proj"}
}

// buildQwen3MoE: transformers Qwen3MoeDecoderLayer uses a sparse MLP when the layer is
// not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0.
func buildQwen3MoE(c *hfConfig, m *Model) error {
	d, err := readDecoderDims(c)
	if err != nil {
		return err
	}
	rd := &cfgReader{c: c}
	E, k := rd.int("num_experts"), rd.int("num_experts_per_tok")
	moeI := rd.int("moe_intermediate_size")
	I := rd.optInt(0, "intermediate_size")
	step := rd.optInt(1, "decoder_sparse_step")
	tie := rd.optBool(false, "tie_word_embeddings")
	bias := rd.optBool(false, "attention_bias")
	maxPos := rd.optInt(0, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	if k > E {
		return fieldErr(c.src, "num_experts_per_tok", "%d exceeds num_experts %d", k, E)
	}
	dense, err := intList(c, "mlp_only_layers")
	if err != nil {
		return err
	}
	var moe int64
	for i := int64(0); i < d.L; i++ {
		if !dense[i] && (step <= 1 || (i+1)%step == 0) {
			moe++
		}
	}
	if moe < d.L && I == 0 {
		return fieldErr(c.src, "intermediate_size", "needed by the %d dense layers", d.L-moe)
	}
	b := &builder{m: m}
	b.embedAndHead(d, tie, 2)
	qDim, kvDim := b.gqaAttention(d, bias)
	b.otherN(2, d.hd, d.L) // q_norm, k_norm
	b.gatedMLP(d.h, I, d.L-moe, false)
	b.router("gate", d.h, E, moe, false)
	b.gatedMLP(d.h, moeI, m.mulCount(moe, E), true)
	b.finish()
	m.ActiveCount = m.ParamCount - m.mulCount(E-k, 3, d.h, moeI, moe)
	m.MoEExperts, m.MoETopK = E, k
	m.Hidden, m.Vocab = d.h, d.V
	m.moeStack(d, qDim, kvDim, ((d.L-moe)*I+moe*k*moeI)/d.L, E*moe/d.L, []string{"gate_proj", "up_proj"})
	m.MaxPos = maxPos
	return nil
}

// buildLlama4 reads a Llama 4 config (the multimodal wrapper with text_config and
// vision_config, or a bare llama4_text config). MoE layers are those in moe_layers, by
// default every interleave_moe_layer_step-th (indices step-1, 2·step-1, …); each has a
// router, num_local_experts routed experts and one shared expert of intermediate_size;
// dense layers use intermediate_size_mlp. RoPE layers attend within chunks of
// attention_chunk_size tokens; every fourth layer (no_rope_layers) is a global NoPE layer.
func buildLlama4(c *hfConfig, m *Model) error {
	tc := c
	if c.has("text_config") {
		var err error
		if tc, err = c.sub("text_config"); err != nil {
			return err
		}
	}
	d, err := readDecoderDims(tc)
	if err != nil {
		return err
	}
	rd := &cfgReader{c: tc}
	E, k := rd.int("num_local_experts"), rd.int("num_experts_per_tok")
	I, Imlp := rd.int("intermediate_size"), rd.optInt(0, "intermediate_size_mlp")
	step := rd.optInt(1, "interleave_moe_layer_step")
	tie := rd.optBool(false, "tie_word_embeddings")
	bias := rd.optBool(false, "attention_bias")
	chunk := rd.optInt(0, "attention_chunk_size")
	maxPos := rd.optInt(0, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	if k > E {
		return fieldErr(tc.src, "num_experts_per_tok", "%d exceeds num_local_experts %d", k, E)
	}
	isMoE, err := intList(tc, "moe_layers")
	if err != nil {
		return err
	}
	if len(isMoE) == 0 && step > 0 {
		for i := step - 1; i < d.L; i += step {
			isMoE[i] = true
		}
	}
	moe := int64(len(isMoE))
	if moe < d.L && Imlp == 0 {
		return fieldErr(tc.src, "intermediate_size_mlp", "needed by the %d dense layers", d.L-moe)
	}
	b := &builder{m: m}
	b.embedAndHead(d, tie, 2)
	qDim, kvDim := b.gqaAttention(d, bias) // use_qk_norm is a parameter-free L2 norm
	b.gatedMLP(d.h, Imlp, d.L-moe, false)
	b.router("router", d.h, E, moe, false)
	b.gatedMLP(d.h, I, m.mulCount(moe, E), true)
	b.gatedMLP(d.h, I, moe, false) // shared expert
	b.finish()
	m.ActiveCount = m.ParamCount - m.mulCount(E-k, 3, d.h, I, moe)
	m.MoEExperts, m.MoETopK = E, k
	m.Hidden, m.Vocab = d.h, d.V
	m.moeStack(d, qDim, kvDim, ((d.L-moe)*Imlp+moe*(k+1)*I)/d.L, E*moe/d.L, []string{"gate_proj", "up_proj"})
	m.MaxPos = maxPos
	if chunk > 0 {
		rope, err := llama4RopeLayers(tc, d.L)
		if err != nil {
			return err
		}
		m.setWindowed(chunk, rope, 2*kvDim)
		m.Notes = append(m.Notes, "Llama 4: the RoPE layers attend within chunks of attention_chunk_size tokens, so their KV cache is capped at one chunk (vLLM's chunked local attention); the NoPE layers keep every token")
	}
	if c != tc && c.has("vision_config") {
		vc, err := c.sub("vision_config")
		if err != nil {
			return err
		}
		n, err := llama4VisionParams(vc, d.h)
		if err != nil {
			return err
		}
		m.addVision(n)
	}
	return nil
}

// llama4RopeLayers counts the layers that use RoPE (and chunked attention):
// no_rope_layers[i] is 1 for them; an empty list means transformers' default, every
// fourth layer (index 3, 7, …) without RoPE.
func llama4RopeLayers(c *hfConfig, L int64) (int64, error) {
	raw, _ := c.m["no_rope_layers"].([]any)
	if len(raw) == 0 {
		return L - L/4, nil
	}
	if int64(len(raw)) != L {
		return 0, fieldErr(c.src, "no_rope_layers", "has %d entries for %d layers", len(raw), L)
	}
	var n int64
	for _, v := range raw {
		if toInt(v) == 1 {
			n++
		}
	}
	return n, nil
}

// buildGptOss: transformers GptOssForCausalLM. Attention has biases on q, k, v, o and one
// learned sink logit per head; each layer's router has a bias; each expert has a fused
// gate_up_proj (hidden → 2·intermediate, with bias) and down_proj (with bias).
// layer_types alternates banded (sliding_window 128) and full attention.
func buildGptOss(c *hfConfig, m *Model) error {
	d, err := readDecoderDims(c)
	if err != nil {
		return err
	}
	rd := &cfgReader{c: c}
	E := rd.int("num_local_experts")
	k := rd.int("num_experts_per_tok", "experts_per_token")
	I := rd.int("intermediate_size")
	tie := rd.optBool(false, "tie_word_embeddings")
	bias := rd.optBool(true, "attention_bias")
	maxPos := rd.optInt(0, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	if k > E {
		return fieldErr(c.src, "num_experts_per_tok", "%d exceeds num_local_experts %d", k, E)
	}
	b := &builder{m: m}
	b.embedAndHead(d, tie, 2)
	qDim, kvDim := b.gqaAttention(d, bias)
	b.otherN(d.nh, d.L) // attention sinks
	b.router("router", d.h, E, d.L, true)
	nExp := m.mulCount(E, d.L)
	b.expert("gate_up_proj", d.h, 2*I, nExp)
	b.expert("down_proj", I, d.h, nExp)
	expertBias := 2*I + d.h
	b.otherN(expertBias, nExp)
	b.finish()
	perExpert := m.addCount(m.mulCount(3, d.h, I), expertBias)
	m.ActiveCount = m.ParamCount - m.mulCount(E-k, d.L, perExpert)
	m.MoEExperts, m.MoETopK = E, k
	m.Hidden, m.Vocab = d.h, d.V
	m.moeStack(d, qDim, kvDim, k*I, E, []string{"gate_up_proj"})
	m.MaxPos = maxPos
	return m.setWindows(c, d.L, 2*kvDim)
}

// intList reads an optional list of layer indices as a set.
func intList(c *hfConfig, key string) (map[int64]bool, error) {
	out := map[int64]bool{}
	v, ok := c.m[key]
	if !ok || v == nil {
		return out, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fieldErr(c.src, key, "want a list of layer indices, got %v", v)
	}
	for _, x := range list {
		i := toInt(x)
		if i < 0 {
			return nil, fieldErr(c.src, key, "want non-negative layer indices, got %v", x)
		}
		out[i] = true
	}
	return out, nil
}

// toInt converts a decoded JSON number to an integer, -1 when it is not one.
func toInt(v any) int64 {
	n, ok := v.(interface{ Int64() (int64, error) })
	if !ok {
		return -1
	}
	i, err := n.Int64()
	if err != nil {
		return -1
	}
	return i
}
