package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// maxJobGPUs bounds --gpus: the most GPUs a plan can span, 64 nodes (fit's --nodes cap)
// of the largest instance the offer bounds accept (providers.MaxGPUCount). A pinned
// --gpus that no instance holds is planned as a cluster of G/c nodes
// (recommend.spanPinnedGPUs), which bypassed the node cap: gpus=2^30 planned 134M nodes
// (issue 30).
const maxJobGPUs = 64 * int(providers.MaxGPUCount)

// numeric reports whether p takes a number: its value is parsed with strconv, which
// reads "NaN" and "Inf" as numbers.
func (p param) numeric() bool {
	return p.kind == kindInt || p.kind == kindFloat || p.typ == "int" || p.typ == "float"
}

// checkFinite refuses NaN and ±Inf for a numeric param, for every parameter at once, at
// the binder: a range check written as f < lo || f > hi lets NaN through, and a NaN that
// reaches an answer fails its JSON encoding as a 500 (issue 30: headroom=NaN,
// lora-dropout=NaN). 1e999 parses as +Inf with a range error and is refused too.
func checkFinite(p param, v string) error {
	if !p.numeric() {
		return nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if (err == nil || strings.Contains(err.Error(), "out of range")) && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return pricing.ParamErrorf(pricing.Invalid, p.name, "--%s %q: want a finite number", p.name, v)
	}
	return nil
}

// checkJobGPUs refuses a --gpus past maxJobGPUs.
func checkJobGPUs(gpus int) error {
	if gpus > maxJobGPUs {
		return pricing.ParamErrorf(pricing.Invalid, "gpus", "--gpus %d: at most %d (%d nodes of %d GPUs)", gpus, maxJobGPUs, 64, int(providers.MaxGPUCount))
	}
	return nil
}
