package model

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// hfConfig is a Hugging Face config.json decoded into a generic map. Keys vary between
// architectures and between transformers versions (falcon's legacy n_head/n_layer, gpt2's
// n_embd), so lookups take several accepted names and report the first one when missing.
type hfConfig struct {
	src string // where the file came from, for error messages
	m   map[string]any
}

func parseHFConfig(src string, data []byte) (*hfConfig, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "%s: not a JSON object: %v", src, err)
	}
	if m == nil {
		return nil, pricing.Errorf(pricing.Invalid, "%s: not a JSON object", src)
	}
	return &hfConfig{src: src, m: m}, nil
}

func (c *hfConfig) has(key string) bool {
	v, ok := c.m[key]
	return ok && v != nil
}

// num returns the first present key among names as a float64.
func (c *hfConfig) num(names ...string) (float64, string, bool, error) {
	for _, n := range names {
		v, ok := c.m[n]
		if !ok || v == nil {
			continue
		}
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return 0, n, true, pricing.Errorf(pricing.Invalid, "%s: field %q: want a number, got %s", c.src, n, x)
			}
			return f, n, true, nil
		default:
			return 0, n, true, pricing.Errorf(pricing.Invalid, "%s: field %q: want a number, got %v", c.src, n, v)
		}
	}
	return 0, "", false, nil
}

// int returns a required positive integer field, accepting any of names.
func (c *hfConfig) int(names ...string) (int64, error) {
	f, n, ok, err := c.num(names...)
	if err != nil {
		return 0, err
	}
	if !ok {
		alt := ""
		if len(names) > 1 {
			alt = " (or " + strings.Join(names[1:], ", ") + ")"
		}
		return 0, pricing.Errorf(pricing.Invalid, "%s: missing field %q%s", c.src, names[0], alt)
	}
	if f <= 0 || f != math.Trunc(f) || f > dimCap(n) {
		return 0, pricing.Errorf(pricing.Invalid, "%s: field %q: want a positive integer up to %.0f, got %v", c.src, n, dimCap(n), f)
	}
	return int64(f), nil
}

// optInt returns an optional integer field or def when absent or null.
func (c *hfConfig) optInt(def int64, names ...string) (int64, error) {
	f, n, ok, err := c.num(names...)
	if err != nil || !ok {
		return def, err
	}
	if f < 0 || f != math.Trunc(f) || f > dimCap(n) {
		return 0, pricing.Errorf(pricing.Invalid, "%s: field %q: want a non-negative integer up to %.0f, got %v", c.src, n, dimCap(n), f)
	}
	return int64(f), nil
}

func (c *hfConfig) optFloat(def float64, names ...string) (float64, error) {
	f, _, ok, err := c.num(names...)
	if err != nil || !ok {
		return def, err
	}
	return f, nil
}

func (c *hfConfig) optBool(def bool, names ...string) (bool, error) {
	for _, n := range names {
		v, ok := c.m[n]
		if !ok || v == nil {
			continue
		}
		b, ok := v.(bool)
		if !ok {
			return false, pricing.Errorf(pricing.Invalid, "%s: field %q: want true or false, got %v", c.src, n, v)
		}
		return b, nil
	}
	return def, nil
}

func (c *hfConfig) optString(def string, names ...string) (string, error) {
	for _, n := range names {
		v, ok := c.m[n]
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return "", pricing.Errorf(pricing.Invalid, "%s: field %q: want a string, got %v", c.src, n, v)
		}
		return s, nil
	}
	return def, nil
}

// modelType returns model_type, falling back to the architectures list for old configs.
func (c *hfConfig) modelType() (string, error) {
	mt, err := c.optString("", "model_type")
	if err != nil {
		return "", err
	}
	if mt != "" {
		return strings.ToLower(mt), nil
	}
	if a, ok := c.m["architectures"].([]any); ok && len(a) > 0 {
		if s, ok := a[0].(string); ok {
			// The longest matching prefix wins: "Phi3ForCausalLM" is phi3, not phi, and
			// "Llama4ForConditionalGeneration" llama4, whatever the map's order.
			best := ""
			for prefix := range archPrefixes {
				if strings.HasPrefix(s, prefix) && len(prefix) > len(best) {
					best = prefix
				}
			}
			if best != "" {
				return archPrefixes[best], nil
			}
		}
	}
	cls, err := c.optString("", "_class_name")
	if err != nil {
		return "", err
	}
	if cls != "" {
		return "", pricing.Errorf(pricing.Invalid, "%s: %s is a diffusers component config, not a model; use a catalog image model (sd-1.5, sdxl-base, flux.1-dev)", c.src, cls)
	}
	return "", pricing.Errorf(pricing.Invalid, "%s: missing field \"model_type\" (and no known \"architectures\" entry)", c.src)
}

var archPrefixes = map[string]string{
	"Llama": "llama", "Mistral": "mistral", "Mixtral": "mixtral", "Qwen2": "qwen2", "Gemma2": "gemma2",
	"Gemma": "gemma", "Phi3": "phi3", "Phi": "phi", "Falcon": "falcon", "RW": "falcon", "GPT2": "gpt2",
	"GPTNeoX": "gpt_neox", "GPTBigCode": "gpt_bigcode", "Bloom": "bloom", "OPT": "opt", "T5": "t5",
	"MT5": "mt5", "Bert": "bert", "DeepseekV2": "deepseek_v2",
	"DeepseekV3": "deepseek_v3", "Qwen3Moe": "qwen3_moe", "Qwen3": "qwen3", "Gemma3ForConditional": "gemma3",
	"Gemma3ForCausal": "gemma3_text", "Llama4": "llama4", "GptOss": "gpt_oss",
}

// SupportedArchitectures lists the config.json model_type values the estimator understands.
func SupportedArchitectures() []string {
	out := make([]string, 0, len(builders))
	for k := range builders {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func unsupportedArch(src, mt string) error {
	return pricing.Errorf(pricing.Invalid, "%s: model_type %q is not supported (supported: %s); pass --params with the parameter count instead",
		src, mt, strings.Join(SupportedArchitectures(), ", "))
}

func fieldErr(src, field, format string, args ...any) error {
	return pricing.Errorf(pricing.Invalid, "%s: field %q: %s", src, field, fmt.Sprintf(format, args...))
}

// cfgReader reads many keys in a row and keeps the first error, so an architecture's
// builder reads its config in straight lines and checks once, at the end of each run of
// reads (before any value is used).
type cfgReader struct {
	c   *hfConfig
	err error
}

func keep[T any](r *cfgReader, v T, err error) T {
	if r.err == nil && err != nil {
		r.err = err
	}
	return v
}

func (r *cfgReader) int(names ...string) int64 { v, err := r.c.int(names...); return keep(r, v, err) }

func (r *cfgReader) optInt(def int64, names ...string) int64 {
	v, err := r.c.optInt(def, names...)
	return keep(r, v, err)
}

func (r *cfgReader) optFloat(def float64, names ...string) float64 {
	v, err := r.c.optFloat(def, names...)
	return keep(r, v, err)
}

func (r *cfgReader) optBool(def bool, names ...string) bool {
	v, err := r.c.optBool(def, names...)
	return keep(r, v, err)
}

func (r *cfgReader) optString(def string, names ...string) string {
	v, err := r.c.optString(def, names...)
	return keep(r, v, err)
}

// dimCap is the largest value an integer config field may hold: maxDim for dimensions
// that multiply into parameter counts (overflow.go), 2^40 for context lengths and
// windows, which only bound sequence lengths.
func dimCap(name string) float64 {
	if strings.Contains(name, "position") || strings.Contains(name, "window") || strings.Contains(name, "chunk") {
		if name != "n_positions" { // GPT-2's learned position table is a parameter
			return 1 << 40
		}
	}
	return maxDim
}
