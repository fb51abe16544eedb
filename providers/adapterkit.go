package providers

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// The small steps the REST price adapters (digitalocean, cudo, fluidstack, shadeform,
// primeintellect) share, so each keeps only what its wire format says.

// RegionFilter returns the configured regions sorted and without repeats, or nil (every
// region) when none are configured.
func RegionFilter(regions []string) []string {
	if len(regions) == 0 {
		return nil
	}
	out := slices.Clone(regions)
	slices.Sort(out)
	return slices.Compact(out)
}

// memInNameRe finds a memory figure in a provider's GPU name: "H100_SXM5_80GB",
// "A100_80GB", "h100-sxm5-80gb". Compiled on first use, not in package init.
var memInNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(?:^|[\s_\-(])(\d+(?:\.\d+)?)\s*GB\b`) })

// GPUFromName maps a provider's GPU name to the catalog's canonical model and its
// memory per GPU in GiB: mem when the provider states it (> 0), else the figure in the
// name ("H100_SXM5_80GB"), else the catalog's. ok is false for a GPU the catalog lacks
// (the name is returned trimmed, to be kept and reported); mem is then 0 unless the
// provider or the name gave one.
func GPUFromName(name string, mem float64) (model string, memGiB float64, ok bool) {
	if mem <= 0 {
		if m := memInNameRe().FindStringSubmatch(name); m != nil {
			mem, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	model, ok = pricing.NormalizeGPU(strings.ReplaceAll(name, "_", " "), mem)
	if !ok {
		model = strings.TrimSpace(name)
	}
	if mem <= 0 && ok {
		if g, found := pricing.LookupGPU(model); found {
			mem = g.MemGB
		}
	}
	return model, mem, ok
}

// RoundPrice rounds a computed price (per-GPU price times a count, a sum of per-unit
// prices) to a millionth of a dollar, so float error never shows as a price change.
func RoundPrice(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// Finish runs the offers an adapter built through Finalize into snap and turns an empty
// result into the error the Provider contract wants ("no prices found" is a failure):
// listed is how many items the API answered with, so the message tells an empty answer
// from one whose every item was skipped.
func Finish(name string, snap *Snapshot, offers []pricing.Offer, listed int) (*Snapshot, error) {
	var warn []string
	snap.Offers, warn = Finalize(name, offers)
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) > 0 {
		return snap, nil
	}
	if listed == 0 {
		return nil, pricing.Errorf(pricing.Unavailable, "%s: the API listed no GPU offers", name)
	}
	why := "none in the configured regions"
	if len(snap.Warnings) > 0 {
		why = "see warnings: " + strings.Join(snap.Warnings, "; ")
	}
	return nil, pricing.Errorf(pricing.Unavailable, "%s: no valid offers among %d listed (%s)", name, listed, why)
}
