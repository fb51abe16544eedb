package fit

import (
	"slices"

	"github.com/pickergpu/picker/model"
)

// resolveCheckpointQuant resolves --quant against a pre-quantized checkpoint (a resolve
// step, before resolveQuant): absent, it takes the checkpoint's; equal, fine; none asks
// for the weights dequantized to the compute dtype (how an fp8 DeepSeek-V3 or an MXFP4
// gpt-oss is fully fine-tuned); any other quantization is an input error naming both.
func resolveCheckpointQuant(m *model.Model, r *resolved) error {
	q := m.Ckpt
	if q == nil {
		return nil
	}
	if r.Quant == QuantNone {
		r.addNote("--quant none on a pre-quantized checkpoint (" + q.Desc + "): weights dequantized to the compute dtype, as converted for training (e.g. DeepSeek's fp8_cast_bf16.py)")
		return nil
	}
	if !q.Compatible(string(r.Quant)) {
		hint := "omit --quant (weights as stored), pass --quant none (dequantized to 16 bits)"
		if slices.Contains(Quants, Quant(q.Label)) {
			hint += " or pass --quant " + q.Label
		}
		return invalid("quant", "--quant %s conflicts with %s's quantization_config (%s): the checkpoint's weights are stored quantized that way; %s", r.Quant, m.Name, q.Desc, hint)
	}
	r.Quant = Quant(q.Label)
	r.addNote("pre-quantized checkpoint (" + q.Desc + "): weights sized as stored, " + fixed(q.BytesPerQuantized(m), 4) + " bytes per quantized weight incl. scales/zeros; embeddings, lm_head, norms, biases, routers and modules_to_not_convert stay 16-bit")
	return nil
}
