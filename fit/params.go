package fit

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

// ModelFromParams makes a model from a parameter count alone. Its shape is guessed as a
// Llama-style decoder (layers = hidden/128 as in Llama 2 7B/13B, gated MLP 2.6875 x hidden,
// 32k vocabulary) so that activations and KV cache have an order of magnitude; the
// weights use the exact count.
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
	cfg := fmt.Sprintf(`{"model_type":"llama","hidden_size":%d,"num_hidden_layers":%d,"num_attention_heads":%d,"intermediate_size":%d,"vocab_size":32000}`,
		h, L, heads, h*43/16)
	m, err := ModelFromConfig("--params", []byte(cfg))
	if err != nil {
		return nil, err
	}
	// Keep the user's exact count: the difference goes to the quantizable linear weights.
	if diff := n - m.params; m.linearParams+diff > 0 {
		m.linearParams += diff
	}
	m.params, m.active = n, n
	m.Kind, m.Architecture, m.Source = KindParams, "unknown", "params"
	m.Name = strings.TrimSpace(count)
	m.Notes = append(m.Notes, fmt.Sprintf("only the parameter count is known: shape guessed as a Llama-style decoder (hidden %d, %d layers, 32k vocabulary)", h, L))
	return m, nil
}
