package providers

import (
	"fmt"
	"math"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// Bounds of a plausible offer: an answer outside them is a provider's bug (or a
// hostile answer) and would poison every recommendation, so Finalize drops it with a
// warning naming the offer. The largest real prices are tens of dollars per GPU-hour;
// GPU memory runs from a few GiB to a few hundred; a vGPU slice is at least 1/8 of a GPU
// and the largest instances have 16 GPUs.
const (
	MaxPricePerGPUHr = 10_000.0
	MinGPUMemGiB     = 1.0
	MaxGPUMemGiB     = 512.0
	MinGPUCount      = 1.0 / 8
	MaxGPUCount      = 64.0
	// maxFact bounds vCPUs and RAM (GiB) of an instance: finite and not absurd.
	maxFact = 1 << 20
)

// CheckBounds rejects an offer whose numbers are non-finite or absurd: price per GPU
// not in (0, MaxPricePerGPUHr], GPU memory outside [MinGPUMemGiB, MaxGPUMemGiB] per
// GPU, GPU count outside [MinGPUCount, MaxGPUCount], vCPUs or RAM negative, non-finite
// or over 2^20. The error names the offer.
func CheckBounds(o pricing.Offer) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(o.GPUCount) || o.GPUCount < MinGPUCount || o.GPUCount > MaxGPUCount:
		return pricing.Errorf(pricing.Invalid, "offer %s: gpu count %v outside %g to %g", o.Key(), o.GPUCount, MinGPUCount, MaxGPUCount)
	case !finite(o.GPUMemGiB) || o.GPUMemGiB < MinGPUMemGiB || o.GPUMemGiB > MaxGPUMemGiB:
		return pricing.Errorf(pricing.Invalid, "offer %s: gpu memory %v GiB per GPU outside %g to %g", o.Key(), o.GPUMemGiB, MinGPUMemGiB, MaxGPUMemGiB)
	case !finite(o.PriceUSDHr) || !(o.PriceUSDHr > 0) || o.PriceUSDHr/o.GPUCount > MaxPricePerGPUHr:
		return pricing.Errorf(pricing.Invalid, "offer %s: price $%v/h ($%v per GPU-hour) outside (0, %g]", o.Key(), o.PriceUSDHr, o.PriceUSDHr/o.GPUCount, MaxPricePerGPUHr)
	case !finite(o.VCPUs) || o.VCPUs < 0 || o.VCPUs > maxFact:
		return pricing.Errorf(pricing.Invalid, "offer %s: vcpus %v outside 0 to %d", o.Key(), o.VCPUs, maxFact)
	case !finite(o.RAMGiB) || o.RAMGiB < 0 || o.RAMGiB > maxFact:
		return pricing.Errorf(pricing.Invalid, "offer %s: ram %v GiB outside 0 to %d", o.Key(), o.RAMGiB, maxFact)
	}
	return nil
}

// Finalize is the one validate-and-dedupe step every adapter's offers pass before
// Fetch returns them (the Provider contract): an offer that fails CheckText (length,
// control characters), pricing.Offer.Validate, CheckBounds or CheckPlausible (price
// floor, observation date) is dropped, and of offers that share a Key the first is kept. Each drop is a warning
// that starts with name, so a bad row costs one offer and a log line, never the fetch.
// Implausible host facts (pricing.Host.Clean) are dropped to unknown, with a warning,
// and the offer kept: a bad reliability score says nothing against the price.
// The order of the kept offers is the input's.
func Finalize(name string, offers []pricing.Offer) (kept []pricing.Offer, warnings []string) {
	kept = offers[:0:0]
	seen := make(map[pricing.Key]bool, len(offers))
	var unknown unknownGPUs // textcheck.go
	for _, o := range offers {
		err := CheckText(o) // first: the other checks' messages quote the strings (textcheck.go)
		if err == nil {
			err = o.Validate()
		}
		if err == nil {
			err = CheckBounds(o)
		}
		if err == nil {
			err = CheckPlausible(o)
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: %s skipped: %v", name, Shown(o.InstanceType), err))
			continue
		}
		if o.Host.Stated() {
			var dropped []string
			if o.Host, dropped = o.Host.Clean(); len(dropped) > 0 {
				warnings = append(warnings, fmt.Sprintf("%s: %s: implausible host facts dropped (%s)", name, o.InstanceType, strings.Join(dropped, ", ")))
			}
		}
		if !unknown.admit(o.GPUModel) {
			continue
		}
		k := o.Key()
		if seen[k] {
			warnings = append(warnings, fmt.Sprintf("%s: %s listed twice; kept the first", name, k))
			continue
		}
		seen[k] = true
		kept = append(kept, o)
	}
	if w := unknown.warning(name); w != "" {
		warnings = append(warnings, w)
	}
	return kept, warnings
}
