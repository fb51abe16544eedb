package model

import (
	"strings"
)

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
	m.MaxPos = rd.optInt(0, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	m.Hidden, m.Vocab = h, V
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
	m.ActiveCount = m.ParamCount - (E-k)*3*h*moeI*moeLayers
	m.MoEExperts, m.MoETopK = E, k
	// Activation width per token of an average layer's MLP: routed top-k plus shared.
	actI := (dense*I + moeLayers*(k+shared)*moeI) / L
	qDim := nh * qHead
	m.Dec = Stack{
		Layers: L, QDim: qDim, KVDim: qDim, Heads: nh, SoftmaxFP32: true, Hidden: h,
		Entries: llamaEntries(h, nh*vhd, actI, 1, []string{"q_proj", "q_a_proj", "kv_a_proj_with_mqa"},
			[]string{"o_proj"}, []string{"gate_proj", "up_proj"}, []string{"down_proj"}, 2),
		LayerParams: (m.LinearParams + m.OtherParams) / L,
	}
	// Multi-head latent attention caches the compressed latent (kv_lora_rank) plus the
	// shared rotary key per token and layer (DeepSeek-V2 paper, section 2.1.2), not
	// per-head keys and values.
	m.KVPerToken = L * (kvr + rope)
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
	m.PyGELU = pythonGELU(act, I)
	m.MaxPos = rd.optInt(0, "max_position_embeddings", "n_positions")
	if rd.err != nil {
		return rd.err
	}
	m.Hidden, m.Vocab = h, V
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
	m.Dec = Stack{
		Layers: L, QDim: nh * hd, KVDim: kv * hd, Heads: nh, SoftmaxFP32: true, Hidden: h,
		Entries: []ActEntry{
			{Elems: h}, // LayerNorm input
			{Elems: h, Mods: []string{"q_proj", "k_proj", "v_proj", "fc1"}},
			{Elems: nh * hd, Mods: []string{"dense"}},
			{Elems: I},
			{Elems: I, Mods: []string{"fc2"}},
		},
		LayerParams: (m.LinearParams + m.OtherParams) / L,
	}
	m.KVPerToken = 2 * L * kv * hd
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
	m.MaxPos = rd.optInt(2048, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	m.Hidden, m.Vocab = h, V
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
	entries := []ActEntry{
		{Elems: lns * h}, // LayerNorm inputs
		{Elems: h, Mods: qkvMods},
		{Elems: h, Mods: []string{"dense"}},
		{Elems: ffn}, // GELU input
		{Elems: ffn, Mods: []string{"dense_4h_to_h"}},
	}
	if lns > 1 {
		entries = append(entries, ActEntry{Elems: h, Mods: []string{"dense_h_to_4h"}})
	}
	m.Dec = Stack{Layers: L, QDim: nh * hd, KVDim: kv * hd, Heads: nh, SoftmaxFP32: false, Hidden: h,
		Entries: entries, LayerParams: (m.LinearParams + m.OtherParams) / L}
	m.KVPerToken = 2 * L * kv * hd
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
	m.PyGELU = pythonGELU(act, I)
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
	m.MaxPos, m.Hidden, m.Vocab = P, h, V
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
	entries := []ActEntry{
		{Elems: 2 * h}, // ln_1 and ln_2 inputs
		{Elems: h, Mods: []string{"c_attn"}},
		{Elems: h, Mods: []string{"c_proj"}},
		{Elems: h, Mods: []string{"c_fc"}},
		{Elems: I},
		{Elems: I, Mods: []string{"c_proj"}},
	}
	if resid > 0 {
		entries = append(entries, ActEntry{Elems: 2 * h, Mask: true})
	}
	m.Dec = Stack{Layers: L, QDim: h, KVDim: kv * hd, Heads: nh, AttnDropout: attnDrop > 0, Hidden: h,
		Entries: entries, LayerParams: (m.LinearParams + m.OtherParams) / L}
	m.KVPerToken = 2 * L * kv * hd
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
	m.MaxPos = rd.optInt(0, "max_position_embeddings")
	if rd.err != nil {
		return rd.err
	}
	m.Hidden, m.Vocab = h, V
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
	m.Dec = Stack{Layers: L, QDim: h, KVDim: h, Heads: nh, SoftmaxFP32: true, Hidden: h,
		Entries: []ActEntry{
			{Elems: 2 * h}, // two LayerNorm inputs (parallel residual still normalises twice)
			{Elems: h, Mods: []string{"query_key_value"}},
			{Elems: h, Mods: []string{"dense"}},
			{Elems: h, Mods: []string{"dense_h_to_4h"}},
			{Elems: I},
			{Elems: I, Mods: []string{"dense_4h_to_h"}},
		},
		LayerParams: (m.LinearParams + m.OtherParams) / L}
	m.KVPerToken = 2 * L * h
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
	m.MaxPos, m.Hidden, m.Vocab = 2048, h, V
	b.embed(V, h)
	b.other(2 * h) // word_embeddings_layernorm
	b.linear("query_key_value", h, 3*h, L, true)
	b.linear("dense", h, h, L, true)
	b.linear("dense_h_to_4h", h, 4*h, L, true)
	b.linear("dense_4h_to_h", 4*h, h, L, true)
	b.other(L*4*h + 2*h)
	b.finish()
	entries := []ActEntry{
		{Elems: 2 * h},
		{Elems: h, Mods: []string{"query_key_value"}},
		{Elems: h, Mods: []string{"dense"}},
		{Elems: h, Mods: []string{"dense_h_to_4h"}},
		{Elems: 4 * h},
		// BloomGelu is a custom autograd function over the tanh formula; it keeps its input
		// and the output is kept by the next linear.
		{Elems: 4 * h, Mods: []string{"dense_4h_to_h"}},
	}
	if hdrop > 0 {
		entries = append(entries, ActEntry{Elems: 2 * h, Mask: true})
	}
	// BLOOM's eager attention adds the ALiBi bias with baddbmm and softmaxes in fp32
	// (attention_softmax_in_fp32).
	m.Dec = Stack{Layers: L, QDim: h, KVDim: h, Heads: nh, SoftmaxFP32: true, AttnDropout: adrop > 0, Hidden: h,
		Entries: entries, LayerParams: (m.LinearParams + m.OtherParams) / L}
	m.KVPerToken = 2 * L * h
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
	m.MaxPos, m.Hidden, m.Vocab = P, h, V
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
	entries := []ActEntry{
		{Elems: 2 * h},
		{Elems: h, Mods: []string{"q_proj", "k_proj", "v_proj"}},
		{Elems: h, Mods: []string{"out_proj"}},
		{Elems: h, Mods: []string{"fc1"}},
		{Elems: F}, // ReLU keeps its output, which is also fc2's input
	}
	if drop > 0 {
		entries = append(entries, ActEntry{Elems: 2 * h, Mask: true})
	}
	m.Dec = Stack{Layers: L, QDim: h, KVDim: h, Heads: nh, SoftmaxFP32: true, Hidden: h,
		Entries: entries, LayerParams: (m.LinearParams + m.OtherParams) / L}
	m.KVPerToken = 2 * L * h
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
	m.Hidden, m.Vocab, m.MaxPos = d, V, 512
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
	ff := []ActEntry{{Elems: d, FP32: true}, {Elems: d, Mods: wi}, {Elems: dff}, {Elems: dff, Mods: []string{"wo"}}}
	if gated {
		ff = append(ff, ActEntry{Elems: 2 * dff}) // gelu_new(wi_0) and wi_1 kept by the product
	}
	attn := []ActEntry{{Elems: d, FP32: true}, {Elems: d, Mods: []string{"q", "k", "v"}}, {Elems: inner, Mods: []string{"o"}}}
	encE := append(append([]ActEntry{}, attn...), ff...)
	decE := append(append(append([]ActEntry{}, attn...), attn...), ff...)
	if drop > 0 {
		encE = append(encE, ActEntry{Elems: 2 * d, Mask: true})
		decE = append(decE, ActEntry{Elems: 3 * d, Mask: true})
	}
	lp := (m.LinearParams + m.OtherParams) / (Le + Ld)
	m.Enc = &Stack{Layers: Le, QDim: inner, KVDim: inner, Heads: nh, SoftmaxFP32: true, AttnDropout: drop > 0, Hidden: d, Entries: encE, LayerParams: lp}
	m.Dec = Stack{Layers: Ld, QDim: inner, KVDim: inner, Heads: nh, SoftmaxFP32: true, AttnDropout: drop > 0, Cross: true, Hidden: d, Entries: decE, LayerParams: lp}
	m.KVPerToken = 2 * Ld * inner
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
	m.MaxPos, m.Hidden, m.Vocab = P, h, V
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
	entries := []ActEntry{
		{Elems: 2 * h}, // post-LN: both LayerNorm inputs
		{Elems: h, Mods: []string{"query", "key", "value"}},
		{Elems: h, Mods: []string{"dense"}}, // attention context, input of attention.output.dense
		{Elems: h, Mods: []string{"dense"}}, // first LayerNorm output, input of intermediate.dense
		{Elems: I},                          // GELU input
		{Elems: I, Mods: []string{"dense"}},
	}
	if hdrop > 0 {
		entries = append(entries, ActEntry{Elems: 2 * h, Mask: true})
	}
	m.Dec = Stack{Layers: L, QDim: h, KVDim: h, Heads: nh, AttnDropout: adrop > 0, Hidden: h,
		Entries: entries, LayerParams: (m.LinearParams + m.OtherParams) / L}
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
