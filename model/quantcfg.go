package model

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// Pre-quantized checkpoints. A config.json with a quantization_config describes weights
// that are stored quantized; they are loaded as stored, so weight memory is the stored
// layout of each quantized linear layer plus every other tensor in the checkpoint dtype:
//
//   - GPTQ (AutoGPTQ / optimum layout, per linear K inputs -> N outputs): qweight K·N·bits/8,
//     qzeros ceil(K/g)·N·bits/8, fp16 scales ceil(K/g)·N·2, int32 g_idx 4·K, and an fp16 bias
//     2·N that AutoGPTQ writes even for bias-free layers (group g = K when group_size is -1).
//     This reproduces TheBloke's Wizard-Vicuna-30B GPTQ files to within their safetensors
//     headers (shared/models/README.md, "Quantized-checkpoint size checks").
//   - AWQ (AutoAWQ GEMM layout): qweight K·N·bits/8, qzeros ceil(K/g)·N·bits/8 (none when
//     zero_point is false), fp16 scales ceil(K/g)·N·2.
//   - bitsandbytes: 4-bit NF4/FP4 0.5 byte per weight + an fp32 absmax per 64 weights
//     (8-bit absmax + fp32 per 256 blocks with bnb_4bit_use_double_quant), 8-bit one byte
//     per weight + an fp32 scale per output row (the constants of estimate.go).
//   - fp8 (DeepSeek-V3 / Qwen3-FP8 "fp8" method, e4m3): one byte per weight + one fp32
//     weight_scale_inv per weight_block_size block (128×128), or one per tensor without
//     blocks (DeepSeek-V3 README_WEIGHTS.md, "FP8 weight documentation").
//   - MXFP4 (gpt-oss): OCP Microscaling: 4-bit E2M1 values + one 8-bit E8M0 scale per 32
//     (OCP MX spec v1.0, section 5), on the MoE experts only; modules_to_not_convert keeps
//     attention, routers, embeddings and lm_head in bf16 (gpt-oss model card: 60.8 GiB /
//     12.8 GiB checkpoints).
//
// Embeddings, lm_head (unless GPTQ's lm_head flag), norms, biases, MoE routers and
// modules named in modules_to_not_convert / llm_int8_skip_modules stay in 16 bits.
type CheckpointQuant struct {
	method      string // gptq, awq, bitsandbytes, fp8, mxfp4
	Label       string // the --quant value it corresponds to, or a descriptive name
	bits        int64
	group       int64 // 0: one group per input row (group_size -1)
	zeros       bool  // awq zero_point
	lmHead      bool  // gptq lm_head quantized
	dq          bool  // bitsandbytes double quantization
	block       [2]int64
	skip        []string // modules_to_not_convert / llm_int8_skip_modules
	expertsOnly bool
	Desc        string
}

// Quant labels a checkpoint's quantization_config maps to; --quant must agree with it.
var quantMethods = []string{"gptq", "awq", "bitsandbytes", "fp8", "mxfp4"}

// readQuantConfig parses quantization_config, if any, and checks that the model's layer
// shapes can be stored that way.
func (m *Model) readQuantConfig(c *hfConfig) error {
	raw, ok := c.m["quantization_config"]
	if !ok || raw == nil {
		return nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return fieldErr(c.src, "quantization_config", "want an object, got %v", raw)
	}
	qc := &hfConfig{src: c.src + ": quantization_config", m: obj}
	rd := &cfgReader{c: qc}
	method := strings.ToLower(rd.optString("", "quant_method"))
	if rd.err != nil {
		return rd.err
	}
	q := &CheckpointQuant{method: method}
	q.skip = stringList(obj["modules_to_not_convert"])
	switch method {
	case "gptq", "awq":
		q.bits = rd.int("bits", "w_bit")
		q.zeros = rd.optBool(true, "zero_point")
		q.lmHead = rd.optBool(false, "lm_head")
		if rd.err != nil {
			return rd.err
		}
		g, _, ok, err := qc.num("group_size", "q_group_size")
		switch {
		case err != nil:
			return err
		case !ok:
			q.group = 128 // AutoGPTQ's and AutoAWQ's default
		case g == -1:
			q.group = 0 // one group per output row
		case g > 0 && g == math.Trunc(g) && g <= maxDim:
			q.group = int64(g)
		default:
			return fieldErr(qc.src, "group_size", "%v: want -1 or a positive integer", g)
		}
		if q.bits < 2 || q.bits > 8 {
			return fieldErr(qc.src, "bits", "%d: want 2 to 8", q.bits)
		}
		q.Label = fmt.Sprintf("%s-%dbit", method, q.bits)
		if q.bits == 4 {
			q.Label = "int4"
		}
		grouping := "per row"
		if q.group > 0 {
			grouping = fmt.Sprintf("group %d", q.group)
		}
		q.Desc = fmt.Sprintf("%s %d-bit, %s", method, q.bits, grouping)
	case "bitsandbytes":
		in4 := rd.optBool(false, "load_in_4bit")
		in8 := rd.optBool(false, "load_in_8bit")
		typ := rd.optString("fp4", "bnb_4bit_quant_type")
		q.dq = rd.optBool(false, "bnb_4bit_use_double_quant")
		if rd.err != nil {
			return rd.err
		}
		q.skip = append(q.skip, stringList(obj["llm_int8_skip_modules"])...)
		switch {
		case in4 && (typ == "nf4" || typ == "fp4"):
			q.bits, q.Label = 4, typ
		case in8 && !in4:
			q.bits, q.Label = 8, "int8"
		default:
			return fieldErr(qc.src, "load_in_4bit", "want load_in_4bit (nf4 or fp4) or load_in_8bit; got load_in_4bit=%v load_in_8bit=%v bnb_4bit_quant_type=%q", in4, in8, typ)
		}
		q.Desc = "bitsandbytes " + q.Label
		if q.dq {
			q.Desc += " with double quantization"
		}
	case "fp8":
		fmtName := rd.optString("e4m3", "fmt")
		if rd.err != nil {
			return rd.err
		}
		if fmtName != "e4m3" && fmtName != "e5m2" {
			return fieldErr(qc.src, "fmt", "%q: want e4m3 or e5m2", fmtName)
		}
		if bs, ok := obj["weight_block_size"].([]any); ok {
			if len(bs) != 2 || toInt(bs[0]) <= 0 || toInt(bs[1]) <= 0 {
				return fieldErr(qc.src, "weight_block_size", "want two positive integers, got %v", bs)
			}
			q.block = [2]int64{toInt(bs[0]), toInt(bs[1])}
		}
		q.bits, q.Label = 8, "fp8"
		q.Desc = "fp8 " + fmtName
		if q.block[0] > 0 {
			q.Desc += fmt.Sprintf(", %d×%d weight blocks", q.block[0], q.block[1])
		}
	case "mxfp4":
		q.bits, q.Label, q.expertsOnly = 4, "mxfp4", true
		q.Desc = "MXFP4 experts"
	case "":
		return fieldErr(qc.src, "quant_method", "missing; want one of %s", strings.Join(quantMethods, ", "))
	default:
		return fieldErr(qc.src, "quant_method", "%q is not supported (supported: %s)", method, strings.Join(quantMethods, ", "))
	}
	for _, mod := range m.Modules {
		if !q.quantizes(mod) {
			continue
		}
		if err := q.checkShape(qc.src, mod); err != nil {
			return err
		}
	}
	m.Ckpt = q
	return nil
}

// checkShape rejects layers that cannot be stored in the method's packed layout: GPTQ
// and AWQ pack 32/bits weights per int32 along the output dimension (AutoGPTQ's
// QuantLinear and AutoAWQ's WQLinear require it).
func (q *CheckpointQuant) checkShape(src string, mod Module) error {
	if q.method != "gptq" && q.method != "awq" {
		return nil
	}
	if (mod.Out*q.bits)%32 != 0 {
		return pricing.Errorf(pricing.Invalid, "%s: %s has %d outputs, which %d-bit %s cannot pack into 32-bit words: the quantization_config does not match the layer shapes", src, mod.Name, mod.Out, q.bits, q.method)
	}
	return nil
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// attentionModules are the linear layers modules_to_not_convert's "self_attn" names.
var attentionModules = []string{"q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "q_a_proj", "q_b_proj",
	"kv_a_proj_with_mqa", "kv_b_proj", "query_key_value", "dense", "c_attn"}

// quantizes reports whether a linear module is stored quantized.
func (q *CheckpointQuant) quantizes(mod Module) bool {
	if mod.router || (q.expertsOnly && !mod.Routed) {
		return false
	}
	for _, pat := range q.skip {
		for _, seg := range strings.Split(pat, ".") {
			if seg == mod.Name || ((seg == "self_attn" || seg == "attn") && slices.Contains(attentionModules, mod.Name)) {
				return false
			}
		}
	}
	return true
}

// linearBytes is the stored size of one quantized K→N linear layer.
func (q *CheckpointQuant) linearBytes(K, N int64) float64 {
	k, n := float64(K), float64(N)
	g := k
	if q.group > 0 {
		g = float64(q.group)
	}
	groups := math.Ceil(k / g)
	bits := float64(q.bits)
	switch q.method {
	case "gptq":
		return k*n*bits/8 + groups*n*bits/8 + groups*n*2 + 4*k + 2*n
	case "awq":
		b := k*n*bits/8 + groups*n*2
		if q.zeros {
			b += groups * n * bits / 8
		}
		return b
	case "bitsandbytes":
		if q.bits == 8 {
			return k*n*BytesInt8 + 4*n
		}
		if q.dq {
			return k * n * Bytes4bitDQ
		}
		return k * n * Bytes4bit
	case "fp8":
		if q.block[0] > 0 {
			return k*n + math.Ceil(n/float64(q.block[0]))*math.Ceil(k/float64(q.block[1]))*4
		}
		return k*n + 4
	case "mxfp4":
		return k*n*0.5 + k*n/32
	}
	return k * n * 2
}

// WeightBytes is the checkpoint's weight memory: quantized layers as stored, every other
// tensor at store bytes per parameter.
func (q *CheckpointQuant) WeightBytes(m *Model, store float64) float64 {
	head := float64(m.HeadParams) * store
	if q.lmHead && q.method == "gptq" && m.HeadParams > 0 {
		head = q.linearBytes(m.Hidden, m.Vocab) // GPTQ with lm_head quantizes the output head too
	}
	return float64(m.EmbedParams+m.OtherParams)*store + head + q.LinearBytes(m, false, store) + q.LinearBytes(m, true, store)
}

// LinearBytes is the stored bytes of the model's linear modules, the routed MoE experts
// or the others: quantized ones as the checkpoint stores them, the rest at store bytes
// per weight (the time model reads them at these sizes).
func (q *CheckpointQuant) LinearBytes(m *Model, routed bool, store float64) float64 {
	var b float64
	for _, mod := range m.Modules {
		if mod.Routed != routed {
			continue
		}
		if q.quantizes(mod) {
			b += q.linearBytes(mod.In, mod.Out) * float64(mod.Count)
		} else {
			b += float64(mod.In*mod.Out*mod.Count) * store
		}
	}
	return b
}

// BytesPerQuantized is the average stored bytes per quantized weight (for sharding
// granularity and notes).
func (q *CheckpointQuant) BytesPerQuantized(m *Model) float64 {
	var b, n float64
	for _, mod := range m.Modules {
		if q.quantizes(mod) {
			b += q.linearBytes(mod.In, mod.Out) * float64(mod.Count)
			n += float64(mod.In * mod.Out * mod.Count)
		}
	}
	if n == 0 {
		return 2
	}
	return b / n
}

// Compatible reports whether a --quant value agrees with the checkpoint (none, which
// asks for dequantized weights, is handled by resolveCheckpointQuant).
func (q *CheckpointQuant) Compatible(quant string) bool {
	return quant == "" || quant == q.Label
}

// statedParamsTolerance is how far a stated parameter count may sit from the count the
// config.json's shapes give: published labels are rounded ("7B" for 6.74B, Gemma "7B" for
// 8.54B with its embedding), so only a disagreement beyond a factor of 1.25 is taken to
// mean that the file and the count describe different models.
const statedParamsTolerance = 1.25

// CheckStatedParams compares the parameter count the user stated (--params with --model,
// "7b", "6.74e9") with the count the checkpoint's shapes give, and returns an input error
// naming both when they disagree beyond statedParamsTolerance.
func (m *Model) CheckStatedParams(stated string) error {
	n, err := ParseParamCount(stated)
	if err != nil {
		return err
	}
	r := float64(n) / float64(m.ParamCount)
	if r > statedParamsTolerance || r < 1/statedParamsTolerance {
		return pricing.ParamErrorf(pricing.Invalid, "params", "--params %s (%d) disagrees with %s, whose shapes give %d parameters (%.2fx): pass one of --model or --params, or fix the config.json", stated, n, m.Name, m.ParamCount, r)
	}
	return nil
}
