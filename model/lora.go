package model

import (
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// LoRATargets resolves --lora-targets: the default targets when spec is empty, every
// linear layer for "all-linear", else spec itself once each name is checked against the
// model's linear layers.
func (m *Model) LoRATargets(spec []string) ([]string, error) {
	allLinear := len(spec) == 1 && strings.EqualFold(spec[0], "all-linear")
	if m.Kind == KindParams && len(spec) > 0 && !allLinear {
		return nil, pricing.ParamErrorf(pricing.Invalid, "lora-targets", "--lora-targets %s: %s has no known architecture (only --params); use the default or all-linear", strings.Join(spec, ","), m.Name)
	}
	switch {
	case len(spec) == 0:
		return m.defaultTargets, nil
	case allLinear:
		return m.LoRAModules(), nil
	}
	avail := m.LoRAModules()
	for _, p := range spec {
		if !slices.Contains(avail, p) {
			return nil, pricing.ParamErrorf(pricing.Invalid, "lora-targets", "--lora-targets: %s has no linear layer named %q (it has: %s, or all-linear)", m.Name, p, strings.Join(avail, ", "))
		}
	}
	return spec, nil
}

// loraParams is PEFT's trainable count: r*(d_in+d_out) for every targeted linear layer.
func (m *Model) LoRAParams(targets []string, r int64) int64 {
	var n int64
	for _, mod := range m.Modules {
		if slices.Contains(targets, mod.Name) {
			n += r * (mod.In + mod.Out) * mod.Count
		}
	}
	return n
}

// loraDropoutPerToken: every adapted linear layer applies its own dropout to its input
// before lora_A (PEFT LoraLayer), keeping the dropped-out copy and a 1-byte mask for the
// backward pass. Routed experts see only top-k of E tokens.
func (m *Model) LoRADropoutPerToken(targets []string, b float64) float64 {
	var n float64
	for _, mod := range m.Modules {
		if !slices.Contains(targets, mod.Name) {
			continue
		}
		c := float64(mod.Count)
		if mod.Routed && m.MoEExperts > 0 {
			c = c * float64(m.MoETopK) / float64(m.MoEExperts)
		}
		n += c * float64(mod.In) * (b + 1)
	}
	return n
}

// TotalLayers counts the transformer layers of every stack (encoder and decoder).
func (m *Model) TotalLayers() int64 {
	n := m.Dec.Layers
	if m.Enc != nil {
		n += m.Enc.Layers
	}
	return n
}
