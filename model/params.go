package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// ParseParamCount parses a raw parameter count: "7b", "7B", "1.5b", "350m", "6.74e9",
// "6738415616".
func ParseParamCount(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(s, "_", "")))
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "t"):
		mult, t = 1e12, strings.TrimSuffix(t, "t")
	case strings.HasSuffix(t, "b"):
		mult, t = 1e9, strings.TrimSuffix(t, "b")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, pricing.Errorf(pricing.Invalid, "--params %q: want a parameter count like 7b, 350m or 6.74e9", s)
	}
	n := f * mult
	if n < 1e6 || n > 1e13 {
		return 0, pricing.Errorf(pricing.Invalid, "--params %q: %g parameters is outside 1M..10T", s, n)
	}
	return int64(math.Round(n)), nil
}

// Vocabulary of a model known only by its parameter count: 32000, the Llama/Llama 2 and
// Mistral tokenizers' size; it sets the logits' size, an order of magnitude for an unknown
// model.
const paramsVocab = 32000

// ModelFromParams makes a model from a parameter count alone. Nothing of its
// implementation is known, so it is the generic transformer of the published activation
// accounting (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", arXiv:2205.05198, section 4.1, the GPT-style layer that Megatron-LM
// and GPT-3 use): 12·h² parameters per layer (Q, K, V and output projections h×h; an MLP of
// 4h with GELU), hidden = 128 × heads, layers = N / (12·h²), a 32k vocabulary; the weights
// use the exact count. Its activations are that paper's per-layer count (see genericEntries),
// not any one library's implementation of a named architecture.
func ModelFromParams(count string) (*Model, error) {
	n, err := ParseParamCount(count)
	if err != nil {
		return nil, err
	}
	h := int64(math.Cbrt(float64(n)*128/12)/128+0.5) * 128
	if h < 256 {
		h = 256
	}
	L := n / (12 * h * h)
	if L < 2 {
		L = 2
	}
	heads := h / 128
	if heads < 2 {
		heads = 2
	}
	m := &Model{Architecture: "unknown", Kind: KindParams, Source: "params"}
	b := &builder{m: m}
	m.Hidden, m.Vocab = h, paramsVocab
	b.embed(paramsVocab, h)
	b.head(paramsVocab, h, false)
	b.linear("q_proj", h, h, L, false)
	b.linear("k_proj", h, h, L, false)
	b.linear("v_proj", h, h, L, false)
	b.linear("o_proj", h, h, L, false)
	b.linear("up_proj", h, 4*h, L, false)
	b.linear("down_proj", 4*h, h, L, false)
	b.other(L*2*2*h + 2*h) // two LayerNorms (weight + bias) per layer + the final one
	b.finish()
	m.defaultTargets = []string{"q_proj", "v_proj"}
	m.Dec = Stack{Layers: L, QDim: h, KVDim: h, Heads: heads, Hidden: h, PlainMLP: true,
		Entries: genericEntries(h), LayerParams: (m.LinearParams + m.OtherParams) / L}
	m.KVPerToken = 2 * L * h
	// Keep the user's exact count: the difference goes to the quantizable linear weights.
	if diff := n - m.ParamCount; m.LinearParams+diff > 0 {
		m.LinearParams += diff
	}
	m.ParamCount, m.ActiveCount = n, n
	m.Name = strings.TrimSpace(count)
	m.Notes = append(m.Notes, fmt.Sprintf("only the parameter count is known: a generic GPT-style decoder (hidden %d, %d layers, 4h GELU MLP, 32k vocabulary) with the activations of Korthikanti et al. 2022 (no dropout, fused attention) and a fused cross-entropy", h, L))
	return m, nil
}

// genericEntries is what one generic layer keeps for the backward pass besides q, k, v and
// the attention output (layerBytes adds those), after Korthikanti et al. 2022 (section
// 4.1, eq. 1: s·b·h·(34 + 5·a·s/h) bytes per layer in 16 bits). Their 34 counts, in units
// of s·b·h bytes: the two LayerNorm inputs 4; attention 11 = QKV input 2 + Q, K 4 + V 2 +
// the output projection's input 2 + its dropout mask 1; MLP 19 = input 2 + first linear's
// output 8 + GELU output 8 + dropout mask 1. Modern LLM configs train without dropout
// (Llama, Mistral, MPT and Qwen configs set attention and residual dropout to 0), so the
// two masks go: 32. The 5·a·s/h term is the materialised softmax (2), its dropout mask (1)
// and dropped-out copy (2); with fused attention (SDPA / FlashAttention, picker's default)
// it is absent, and with --attention eager and no dropout it is the softmax output alone
// (scoreBytes: 2 bytes, no fp32 upcast). The LayerNorm inputs are kept in the compute dtype
// as the paper counts them.
func genericEntries(h int64) []ActEntry {
	return []ActEntry{
		{Elems: 2 * h}, // the two LayerNorm inputs
		{Elems: h, Mods: []string{"q_proj", "k_proj", "v_proj"}}, // QKV input
		{Elems: h, Mods: []string{"up_proj"}},                    // MLP input
		{Elems: 4 * h},                                           // first linear's output (GELU input)
		{Elems: 4 * h, Mods: []string{"down_proj"}},              // GELU output (second linear's input)
	}
}

// GenericLossBytes is the logits and loss workspace per token and vocabulary entry of a
// model with no known implementation. The loss lives in the model's own code (transformers'
// XForCausalLM.forward calls its loss_function; Megatron-LM and llm-foundry ship fused
// kernels), so the published generic count applies: Korthikanti et al. 2022 (section 4.3)
// store the logits for the cross-entropy in fp32, 4·s·b·v bytes. Megatron-LM's
// _VocabParallelCrossEntropy.backward writes the logits' gradient over that saved softmax
// (grad_input = softmax, updated in place); the output layer's backward then takes it in
// the compute dtype: + b bytes when that is 16-bit. (flash-attn's fused CrossEntropyLoss,
// llm-foundry's default loss_fn, keeps only the 16-bit logits and their log-sum-exp and
// writes a 16-bit gradient, 2 + 2 bytes: below this count.)
func GenericLossBytes(b float64) float64 {
	if b < 4 {
		return 4 + b
	}
	return 4
}
