package fit

import (
	"math"

	"github.com/pickergpu/picker/model"
)

// fp8: 8-bit floating point (e4m3 for weights and activations, Micikevicius et al. 2022,
// "FP8 Formats for Deep Learning", arXiv:2209.05433) needs fp8 tensor cores: NVIDIA Ada,
// Hopper and Blackwell, AMD CDNA 3/4 (pricing.GPU.FP8). Three uses are modelled:
//
//   - --quant fp8 (inference): vLLM's dynamic fp8 quantization (--quantization fp8) stores
//     every linear weight inside the transformer blocks as one e4m3 byte with one fp32
//     scale per tensor; embeddings, lm_head and norms stay 16-bit (vLLM docs,
//     "FP8 W8A8": "weights are quantized to FP8 ... per-tensor scale").
//   - --kv-cache-dtype fp8 (inference): keys and values stored in one byte instead of two
//     (vLLM docs, "Quantized KV Cache"), halving the KV cache.
//   - --precision fp8-mixed (training): TransformerEngine / torchao float8 training. The
//     model keeps its bf16 weights (with fp32 master weights and optimizer states exactly
//     as bf16-mixed); each linear layer's GEMMs run in fp8. TransformerEngine caches the
//     fp8 copy of each weight and, for the wgrad/dgrad GEMMs on Hopper, its fp8 transpose
//     across micro-batches: +2 bytes per linear weight; the inputs a linear layer saves
//     for its weight gradient are kept as their fp8 casts, 1 byte instead of 2
//     (TransformerEngine user guide, "Using FP8 with Transformer Engine" / FP8 primer;
//     torchao float8 README: "fp8 ... saves activations for backward in float8").

// bytesFP8 is one e4m3 byte per weight; the per-tensor fp32 scale is negligible.
const bytesFP8 = 1.0

// UsesFP8 reports whether the job needs fp8 tensor cores: fp8 weights quantized on the
// fly, an fp8 KV cache or fp8 training. Pre-quantized fp8 checkpoints are not included:
// vLLM runs them on older GPUs too, dequantizing in its Marlin kernels.
func (j Job) UsesFP8() bool {
	return j.Quant == "fp8" || j.KVCacheDtype == "fp8" || j.Precision == "fp8-mixed"
}

// fp8Training reports --precision fp8-mixed.
func (r *resolved) fp8Training() bool { return r.Precision == "fp8-mixed" }

// resolveFP8 checks the fp8 knobs against the task and fills the KV cache's bytes per
// element (a resolve step: runs after the precision and quantization are resolved).
func resolveFP8(_ *model.Model, r *resolved) error {
	training := r.IsTraining()
	switch {
	case r.Precision == "fp8-mixed" && !training:
		return invalid("precision", "--precision fp8-mixed is fp8 training (TransformerEngine / torchao float8); for fp8 inference use --quant fp8 and/or --kv-cache-dtype fp8")
	case r.Quant == "fp8" && training:
		return invalid("quant", "--quant fp8 with --task %s: fp8 weight quantization is modelled for inference; for fp8 training use --precision fp8-mixed", r.Task)
	case r.KVCacheDtype == "fp8" && training:
		return invalid("kv-cache-dtype", "--kv-cache-dtype fp8 applies to inference, not --task %s", r.Task)
	}
	if r.KVCacheDtype == "" {
		r.KVCacheDtype = "auto"
	}
	r.kvB = r.b
	if r.KVCacheDtype == "fp8" {
		r.kvB = 1
	}
	if r.fp8Training() {
		r.addNote("fp8-mixed: bf16-mixed weights, gradients and optimizer states + TransformerEngine's cached fp8 weight and transpose (2 B per linear weight); linear inputs saved in fp8; job time runs the linear layers at the GPU's fp8 TFLOPS")
	}
	return nil
}

// fp8WeightCache is TransformerEngine's cached fp8 weight and transpose (2 bytes per
// linear weight), per GPU: sharded with ZeRO-3/FSDP, where only the gathered layers are
// cast.
func (r *resolved) fp8WeightCache(m *model.Model) float64 {
	if !r.fp8Training() {
		return 0
	}
	b := 2 * float64(m.LinearParams)
	if r.Shard.ShardsParams() {
		b = math.Min(b/float64(r.shardDegree()), 2*2*float64(m.Dec.LayerParams))
	}
	return b
}
