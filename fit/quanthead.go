package fit

import "github.com/pickergpu/picker/model"

// Which modules a quantizer leaves alone decides how many bytes the output head takes.
// transformers' bitsandbytes integration skips the output embedding
// (get_keys_to_not_convert), and AutoGPTQ/GPTQModel checkpoints keep lm_head in 16 bits
// unless their quantize_config says lm_head (model/quantcfg.go reads that flag). LitGPT's
// own GPTQ is different: quantize/gptq.py's blockwise_quantization (Lightning-AI/litgpt at
// commit 741338dbc17c620833042626e555c76937eb99ef, the script behind --quantize gptq.int4)
// quantizes every block's attn.attn, attn.proj and MLP linears, then runs the same
// GPTQQuantizer on model.lm_head and replaces it with a ColBlockQuantizedLinear (4-bit
// weights packed two per byte, a scale and a zero per row and column group) before it
// saves model.state_dict() as lit_model_gptq.4bit.pth. So a LitGPT int4 (GPTQ) model
// stores its head in 4 bits too. For LitGPT's bitsandbytes modes (bnb.nf4, bnb.int8) the
// head stays 16-bit, which frameworkHead's calibration rows support.

// quantizesHead reports whether the job's quantizer quantizes the LM head as well as the
// blocks' linear layers: LitGPT's GPTQ (--framework litgpt --quant int4), quantized on the
// fly. A pre-quantized checkpoint says so itself (model.CheckpointQuant reads GPTQ's lm_head flag).
func quantizesHead(m *model.Model, r *resolved) bool {
	return r.Framework == FrameworkLitGPT && r.Quant == "int4" && r.quantB > 0 && m.Ckpt == nil &&
		m.Kind != model.KindDiffusion && m.Kind != model.KindEncoder
}

// keptModules names what stays in the stored dtype when the linear layers are quantized.
func keptModules(m *model.Model, r *resolved) string {
	if quantizesHead(m, r) {
		return "lm_head quantized too (LitGPT's GPTQ, quantize/gptq.py, quantizes model.lm_head after the blocks); embeddings, norms and biases stay"
	}
	return "embeddings, lm_head, norms and biases stay"
}
