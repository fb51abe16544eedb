package model

// Multimodal checkpoints (Gemma 3, Llama 4) hold a vision tower and a projector beside
// the language model. Their weights are loaded with the model (vLLM and transformers
// load the whole checkpoint), so they count in Params and in the weight memory, as
// 16-bit "other" parameters (quantization recipes skip the vision tower); they do not
// count in ActiveParams, which is per text token.

// sub returns a nested config object (text_config, vision_config) as a config.
func (c *hfConfig) sub(key string) (*hfConfig, error) {
	v, ok := c.m[key].(map[string]any)
	if !ok {
		return nil, fieldErr(c.src, key, "want an object")
	}
	return &hfConfig{src: c.src + ": " + key, m: v}, nil
}

// addVision adds a vision tower's parameters to a built model.
func (m *Model) addVision(n int64) {
	m.visionParams = m.addCount(m.visionParams, n)
	m.OtherParams = m.addCount(m.OtherParams, n)
	m.ParamCount = m.addCount(m.ParamCount, n)
}

// buildGemma3 reads Gemma3ForConditionalGeneration's config: the language model in
// text_config (a gemma3_text decoder: 4 RMSNorms per layer, q/k norms, tied embeddings,
// sliding-window local layers) and a SigLIP vision tower in vision_config. A bare
// gemma3_text config goes to buildLlama directly.
func buildGemma3(c *hfConfig, m *Model) error {
	tc, err := c.sub("text_config")
	if err != nil {
		return err
	}
	m.Architecture = "gemma3_text"
	if err := buildLlama(tc, m); err != nil {
		return err
	}
	m.Architecture = "gemma3"
	if !c.has("vision_config") {
		return nil
	}
	vc, err := c.sub("vision_config")
	if err != nil {
		return err
	}
	n, err := siglipParams(vc, m.Hidden)
	if err != nil {
		return err
	}
	m.addVision(n)
	return nil
}

// siglipParams counts transformers' SiglipVisionModel without its pooling head
// (vision_use_head false in Gemma 3) plus Gemma3MultiModalProjector: a patch convolution
// with bias, learned positions for (image_size/patch_size)^2 patches, per layer q/k/v/o
// and fc1/fc2 with biases and two LayerNorms (weight + bias), a final LayerNorm; the
// projector is one hidden×text_hidden matrix plus an RMSNorm of the vision width.
func siglipParams(vc *hfConfig, textHidden int64) (int64, error) {
	rd := &cfgReader{c: vc}
	h, I, L := rd.int("hidden_size"), rd.int("intermediate_size"), rd.int("num_hidden_layers")
	p, img := rd.int("patch_size"), rd.int("image_size")
	ch := rd.optInt(3, "num_channels")
	if rd.err != nil {
		return 0, rd.err
	}
	var m Model // scratch for checked arithmetic
	layer := m.addCount(m.mulCount(4, m.addCount(m.mulCount(h, h), h)), m.mulCount(2, h, I), I, h, 4*h)
	patches := (img / p) * (img / p)
	n := m.addCount(m.mulCount(L, layer), m.mulCount(ch, p, p, h), h, m.mulCount(patches, h), 2*h,
		m.mulCount(h, textHidden), h)
	if m.overflow {
		return 0, fieldErr(vc.src, "hidden_size", "vision tower dimensions overflow")
	}
	return n, nil
}

// llama4VisionParams counts transformers' Llama4VisionModel and the multimodal projector:
// an unfold "convolution" (a bias-free linear of channels·patch² inputs), a class
// embedding, learned positions for the patches plus the class token, pre and post
// LayerNorms, per layer q/k/v/o and fc1/fc2 with biases and two LayerNorms, the
// pixel-shuffle adapter MLP (intermediate_size → projector_input_dim →
// projector_output_dim, no biases) and the projector vision_output_dim → text hidden.
func llama4VisionParams(vc *hfConfig, textHidden int64) (int64, error) {
	rd := &cfgReader{c: vc}
	h, I, L := rd.int("hidden_size"), rd.int("intermediate_size"), rd.int("num_hidden_layers")
	p, img := rd.int("patch_size"), rd.int("image_size")
	ch := rd.optInt(3, "num_channels")
	pin, pout := rd.int("projector_input_dim"), rd.int("projector_output_dim")
	vout := rd.int("vision_output_dim")
	if rd.err != nil {
		return 0, rd.err
	}
	var m Model
	layer := m.addCount(m.mulCount(4, m.addCount(m.mulCount(h, h), h)), m.mulCount(2, h, I), I, h, 4*h)
	patches := (img/p)*(img/p) + 1
	n := m.addCount(m.mulCount(L, layer), m.mulCount(ch, p, p, h), h, m.mulCount(patches, h), 4*h,
		m.mulCount(I, pin), m.mulCount(pin, pout), m.mulCount(vout, textHidden))
	if m.overflow {
		return 0, fieldErr(vc.src, "hidden_size", "vision tower dimensions overflow")
	}
	return n, nil
}
