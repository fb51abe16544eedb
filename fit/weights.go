package fit

// Weight sizing: the bytes a job's weights take as stored (quantized linear layers in
// their format, everything else in the stored dtype) and the transient copies quantized
// matmuls make.

import (
	"math"

	"github.com/pickergpu/picker/model"
)

// resolveQuant defaults the quantization, checks it against the task, and sets the
// bytes per quantized weight.
func resolveQuant(m *model.Model, r *resolved) error {
	if r.Quant == "" {
		r.Quant = QuantNone
		if r.Task == TaskQLoRA {
			r.Quant = "nf4"
		}
	}
	switch {
	case r.Task == TaskQLoRA && (!r.Quant.Quantized() || r.Quant == "int8"):
		return invalid("quant", "--task qlora --quant %s: QLoRA trains adapters over a 4-bit base (nf4, fp4 or int4); use --task lora for a %s base", r.Quant, r.Quant)
	case r.Task == TaskQLoRA && r.Precision == "fp32":
		return invalid("precision", "--task qlora --precision fp32: QLoRA computes in 16 bits over 4-bit weights; use bf16-mixed (default), bf16, fp16 or fp16-mixed")
	case r.Task == TaskFullFT && r.Quant.Quantized():
		return invalid("quant", "--task full-ft --quant %s: quantized weights cannot be fully fine-tuned; use --task qlora or --quant none", r.Quant)
	case r.DoubleQuant && r.Quant != "nf4" && r.Quant != "fp4":
		return invalid("double-quant", "--double-quant: needs 4-bit bitsandbytes weights (--quant nf4 or fp4), not --quant %s", r.Quant)
	case m.Kind == model.KindDiffusion && r.Quant == "int4":
		return invalid("quant", "--quant int4: not modelled for image pipelines; use int8, nf4 or fp4")
	}
	if r.Quant.Quantized() && r.mixed && r.IsTraining() {
		r.store = 2
	}
	if r.Task == TaskLoRA && r.Quant.Quantized() {
		r.addNote("LoRA over a " + string(r.Quant) + " base is QLoRA-style: the quantized layers keep their inputs for the backward pass")
	}
	r.quantB = QuantBytes(m, r.Quant, r.DoubleQuant)
	return nil
}

// QuantBytes is the stored bytes per quantized linear weight of a resolved job's weights
// (0 = not quantized): a pre-quantized checkpoint's as stored (model/quantcfg.go; --quant
// none dequantizes it), else the format's (model/quantbytes.go). The memory model sizes
// weights with it and the time model reads them at it.
func QuantBytes(m *model.Model, q Quant, doubleQuant bool) float64 {
	if !q.Quantized() {
		return 0
	}
	if m.Ckpt != nil {
		return m.Ckpt.BytesPerQuantized(m)
	}
	switch q {
	case "int8":
		return model.BytesInt8
	case "nf4", "fp4":
		if doubleQuant {
			return model.Bytes4bitDQ
		}
		return model.Bytes4bit
	case "int4":
		return model.BytesInt4
	case "fp8":
		return bytesFP8
	}
	return 0
}

// weightBytes returns the bytes of all weights as stored for the job (before sharding).
func weightBytes(m *model.Model, r *resolved) float64 {
	if m.Ckpt != nil && r.Quant.Quantized() {
		return m.Ckpt.WeightBytes(m, r.store)
	}
	head := frameworkHead(m, r)
	nonLinear := float64(m.EmbedParams+m.OtherParams) + head
	if r.quantB == 0 {
		return (nonLinear + float64(m.LinearParams)) * r.store
	}
	keep := keepFP32Params(m, r) // stack.go: _keep_in_fp32_modules stay fp32, unquantized
	q := (float64(m.LinearParams)-keep)*r.quantB + keep*4
	if quantizesHead(m, r) { // quanthead.go: LitGPT's GPTQ quantizes the head too
		nonLinear -= head
		q += head * r.quantB
	}
	if r.Quant == "int8" {
		for _, mod := range m.Modules {
			q += float64(mod.Out*mod.Count) * 4 // LLM.int8 per-row fp32 scale (SCB)
		}
	}
	return nonLinear*r.store + q
}

// dequantTransient is the 16-bit copy of one quantized weight that bitsandbytes' 4-bit
// matmul makes on every call with more than one token (MatMul4Bit: F.linear(A,
// dequantize_4bit(B).to(A.dtype).t()), forward and backward): the largest quantized weight
// sets it.
func dequantTransient(m *model.Model, r *resolved) float64 {
	if r.Quant != "nf4" && r.Quant != "fp4" {
		return 0
	}
	var largest float64
	for _, mod := range m.Modules {
		largest = math.Max(largest, float64(mod.In*mod.Out))
	}
	return largest * r.b
}
