package model

// Bytes per parameter of quantized linear weights.
const (
	// bitsandbytes NF4/FP4: two 4-bit weights per byte plus one fp32 absmax per block of
	// 64 weights (bnb.functional.quantize_4bit, blocksize=64): 0.5 + 4/64.
	Bytes4bit = 0.5 + 4.0/64
	// Double quantization (QLoRA paper, section 3): the absmax constants are themselves
	// quantized to 8 bits in blocks of 256, with one fp32 constant per block of 256:
	// 0.5 + 1/64 + 4/(64*256).
	Bytes4bitDQ = 0.5 + 1.0/64 + 4.0/(64*256)
	// GPTQ/AWQ-style int4: 4-bit weights with an fp16 scale and a packed 4-bit zero point
	// per group of 128 input weights (AutoGPTQ/AutoAWQ default group_size=128).
	BytesInt4 = 0.5 + 2.0/128 + 0.5/128
	// LLM.int8(): one int8 per weight plus one fp32 scale per output row (SCB), which
	// fit's weight sizing adds per module.
	BytesInt8 = 1.0
)
