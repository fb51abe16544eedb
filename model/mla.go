package model

// DeepSeek-V3 (and R1, the same architecture) is DeepSeek-V2's multi-head latent attention
// and DeepSeekMoE (buildDeepseekV2: q/kv low-rank projections, the first
// first_k_dense_replace layers dense, then routed + shared experts) with one addition:
// the auxiliary-loss-free router (topk_method "noaux_tc") keeps a per-expert
// e_score_correction_bias in every MoE layer (DeepSeek-V3 technical report,
// arXiv:2412.19437, section 2.1.2). Its KV cache is MLA's: per token and layer the
// compressed latent (kv_lora_rank = 512) plus the decoupled rotary key (qk_rope_head_dim
// = 64), not 128 heads of keys and values (same report, section 2.1.1, eq. 1-5: "only
// the blue-boxed vectors need to be cached").
//
// The multi-token-prediction module (num_nextn_predict_layers) is not counted: inference
// engines load it only for speculative decoding, and the 671B headline excludes it.
func buildDeepseekV3(c *hfConfig, m *Model) error {
	if err := buildDeepseekV2(c, m); err != nil {
		return err
	}
	rd := &cfgReader{c: c}
	method := rd.optString("", "topk_method")
	L := rd.int("num_hidden_layers")
	E := rd.int("n_routed_experts")
	firstDense := rd.optInt(0, "first_k_dense_replace")
	freq := rd.optInt(1, "moe_layer_freq")
	if rd.err != nil {
		return rd.err
	}
	if method != "noaux_tc" {
		return nil
	}
	bias := m.mulCount(E, deepseekMoELayers(L, firstDense, freq))
	m.OtherParams = m.addCount(m.OtherParams, bias)
	m.ParamCount = m.addCount(m.ParamCount, bias)
	m.ActiveCount = m.addCount(m.ActiveCount, bias)
	return nil
}

// deepseekMoELayers counts DeepseekV2/V3 MoE layers: index >= first_k_dense_replace and
// index % moe_layer_freq == 0 (modeling_deepseek.py DeepseekV3DecoderLayer).
func deepseekMoELayers(L, firstDense, freq int64) int64 {
	if freq == 0 {
		freq = 1
	}
	var n int64
	for i := firstDense; i < L; i++ {
		if i%freq == 0 {
			n++
		}
	}
	return n
}
