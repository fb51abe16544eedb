package pricing

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// GPU names are the trap every price collector falls into: clouds report "NVIDIA",
// "A100-SXM4-80GB", "nvidia-tesla-a100", "H100 PCIe", "8x H100 (80 GB SXM5)",
// "NVIDIA H100 80GB HBM3", "Standard_NC24ads_A100_v4". This file is the one table that
// maps all of them to the canonical names of the GPU catalog (gpus.csv). A name it does
// not know is returned unchanged with ok=false so the caller keeps and reports it; it
// is never guessed.

// baseAliases maps a squashed GPU base name (lower case, vendor/brand words, memory and
// form-factor words removed, only [a-z0-9] left) to a canonical model, or to a resolver
// when the canonical model depends on memory or form factor.
var baseAliases = map[string]func(h hints) string{
	"h100":       h100,
	"h100mega":   h100, // GCP nvidia-h100-mega-80gb (a3-megagpu): SXM H100 with more NICs
	"h100sxm":    fixed("H100"),
	"h100nvl":    fixed("H100-NVL"),
	"h100pcie":   fixed("H100-PCIE"),
	"h200":       fixed("H200"),
	"h200nvl":    fixed("H200"),
	"gh200":      fixed("GH200"),
	"b200":       fixed("B200"),
	"b300":       fixed("B300"),
	"gb200":      fixed("GB200"),
	"gb300":      fixed("GB300"),
	"a100":       a100, // 40 GB part unless the name or memory says 80 GB; PCIe when the name says so
	"a800":       fixed("A800"),
	"a10":        fixed("A10"),
	"a10g":       fixed("A10G"),
	"a40":        fixed("A40"),
	"l4":         fixed("L4"),
	"l40":        fixed("L40"),
	"l40s":       fixed("L40S"),
	"t4":         fixed("T4"),
	"t4g":        fixed("T4G"),
	"v100":       byMem(24, "V100", "V100-32GB"),
	"p100":       fixed("P100"),
	"p4":         fixed("P4"),
	"k80":        fixed("K80"),
	"m60":        fixed("M60"),
	"m4000":      fixed("M4000"),
	"p4000":      fixed("P4000"),
	"a4000":      fixed("RTXA4000"),
	"rtxa4000":   fixed("RTXA4000"),
	"a4500":      fixed("RTXA4500"),
	"rtxa4500":   fixed("RTXA4500"),
	"a5000":      fixed("RTXA5000"),
	"rtxa5000":   fixed("RTXA5000"),
	"a6000":      fixed("A6000"),
	"rtxa6000":   fixed("A6000"),
	"rtx3090":    fixed("RTX3090"),
	"rtx4090":    fixed("RTX4090"),
	"rtx4000ada": fixed("RTX4000-Ada"),
	"rtx6000ada": fixed("RTX6000-Ada"),
	// "RTX 6000" alone is the Turing Quadro RTX 6000 (24 GB, Lambda's gpu_1x_rtx6000);
	// GCP's g4 family calls the 96 GB RTX PRO 6000 "rtx6000", so memory decides.
	"rtx6000":             rtx6000,
	"quadrortx6000":       fixed("RTX6000"),
	"rtxpro6000":          fixed("RTXPRO6000"),
	"rtxpro6000bse":       fixed("RTXPRO6000"),
	"rtxproserver6000":    fixed("RTXPRO6000"),
	"rtxpro6000blackwell": fixed("RTXPRO6000"),
	"rtxpro4500":          fixed("RTXPRO4500"),
	"rtxpro4500blackwell": fixed("RTXPRO4500"),
	"mi300x":              fixed("MI300X"),
	"mi355x":              fixed("MI355X"),
	"radeonprov520":       fixed("RadeonProV520"),
	"v520":                fixed("RadeonProV520"),
}

type hints struct {
	memGiB         float64 // from the name ("80GB") or the caller; 0 when unknown
	pcie, nvl, sxm bool
}

func fixed(model string) func(hints) string { return func(hints) string { return model } }

func byMem(minBig float64, small, big string) func(hints) string {
	return func(h hints) string {
		if h.memGiB >= minBig {
			return big
		}
		return small
	}
}

func h100(h hints) string {
	switch {
	case h.nvl || (h.memGiB >= 90 && h.memGiB < 100):
		return "H100-NVL"
	case h.pcie:
		return "H100-PCIE"
	}
	return "H100"
}

func a100(h hints) string {
	switch big := h.memGiB >= 60; {
	case h.pcie && big:
		return "A100-80GB-PCIE"
	case h.pcie:
		return "A100-PCIE"
	case big:
		return "A100-80GB"
	}
	return "A100"
}

func rtx6000(h hints) string {
	switch {
	case h.memGiB >= 90:
		return "RTXPRO6000"
	case h.memGiB >= 40:
		return "RTX6000-Ada"
	}
	return "RTX6000"
}

var (
	// A memory figure is a number after a separator ("-80gb", " (80 GB", "-80G-"), so
	// "a10g" or "h100" never read as memory.
	// Compiled on first use, not in package init, which every picker command runs.
	memRe      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[\s\-(])(\d+(?:\.\d+)?)\s*(?:gb|gib|g)\b`) })
	nvlRe      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bnvl\b`) })
	countRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\d+\s*x\s+`) })
	nonAlnumRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9]+`) })
	// Words that name a vendor, brand or packaging but never change which GPU it is.
	noiseWords = []string{"nvidia", "amd", "tesla", "geforce", "instinct", "hbm3e", "hbm3", "hbm2e", "hbm2", "gddr6", "gddr7", "sxm2", "sxm3", "sxm4", "sxm5", "sxm6", "pcie", "nvlink", "nvl", "sxm", "generation", "gpu", "graphics", "accelerator", "oam"}
)

// NormalizeGPU maps a provider's GPU name to the catalog's canonical name. memGiB is the
// per-GPU memory the provider reports alongside the name (0 when it has none); it
// disambiguates A100 40/80 GB, V100 16/32 GB and the RTX 6000 generations. The second
// result is false when the name is unknown; the returned name is then the input,
// trimmed, so it can be stored and reported as-is.
func NormalizeGPU(name string, memGiB float64) (string, bool) {
	raw := strings.TrimSpace(name)
	// A canonical name maps to itself, unless the reported memory says it is the other
	// variant (AWS reports p4de's GPUs as "A100" with 80 GiB each).
	if g, ok := LookupGPU(raw); ok && (memGiB == 0 || math.Abs(memGiB-g.MemGB) <= 0.15*g.MemGB) {
		return g.Model, true
	}
	s := strings.ToLower(raw)
	s = strings.ReplaceAll(s, "_", " ")
	s = countRe().ReplaceAllString(s, "")      // "8x H100 (80 GB SXM5)"
	s = strings.TrimPrefix(s, "nvidia-tesla-") // GCP accelerator types
	s = strings.TrimPrefix(s, "nvidia-")
	h := hints{memGiB: memGiB}
	if m := memRe().FindStringSubmatch(s); m != nil {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && v >= 4 {
			if h.memGiB == 0 {
				h.memGiB = v
			}
			s = strings.Replace(s, m[0], " ", 1)
		}
	}
	h.pcie = strings.Contains(s, "pcie")
	h.nvl = nvlRe().MatchString(s)
	h.sxm = strings.Contains(s, "sxm")
	// Drop the parenthesised remainder of Lambda-style descriptions once memory is read.
	if i := strings.IndexByte(s, '('); i > 0 {
		rest := s[i:]
		s = s[:i]
		h.pcie = h.pcie || strings.Contains(rest, "pcie")
		h.sxm = h.sxm || strings.Contains(rest, "sxm")
	}
	words := strings.Fields(nonAlnumRe().ReplaceAllString(s, " "))
	words = slices.DeleteFunc(words, func(w string) bool { return slices.Contains(noiseWords, w) })
	key := strings.Join(words, "")
	// Form factor is part of the identity only for H100 and A100; try the precise key first.
	for _, k := range []string{key + formSuffix(h), key} {
		if f, ok := baseAliases[k]; ok {
			return f(h), true
		}
	}
	if f, ok := baseAliases[strings.TrimSuffix(key, "vws")]; ok && strings.HasSuffix(key, "vws") {
		return f(h), true // GCP *-vws virtual-workstation variants: same GPU, licence surcharge
	}
	return raw, false
}

func formSuffix(h hints) string {
	switch {
	case h.nvl:
		return "nvl"
	case h.pcie:
		return "pcie"
	}
	return ""
}

// UnknownGPUs returns the GPU names of offers that are not in the GPU catalog, sorted
// and without repeats: the names a parser or adapter kept raw, for the caller to warn
// about. It is a function of the offers, not a process-wide record.
func UnknownGPUs(offers []Offer) []string {
	var out []string
	for _, o := range offers {
		if _, ok := LookupGPU(o.GPUModel); !ok {
			out = append(out, o.GPUModel)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
