package providers

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/termsafe"
)

// MaxTextBytes caps each text field of an offer (provider, region, zone, instance type,
// GPU model, purchase, currency, source). The longest real names are tens of bytes
// (Azure's Standard_ND96isr_H100_v5, GCP's a3-megagpu-8g, AWS's p5en.48xlarge; regions
// like australiasoutheast or us-gov-west-1); 256 is ample, and a 100 KB instance type is
// no longer stored and rendered (issue 30).
const MaxTextBytes = 256

// MinPricePerGPUHr is the floor of a plausible price: the cheapest real listings,
// marketplace interruptible bids on small GPUs, are cents per GPU-hour; a tenth of a
// cent is far below any of them. 1e-300 $/h passed the old "> 0" check and ranked first
// at $0.0000 (issue 30).
const MinPricePerGPUHr = 0.001

// CheckText rejects an offer whose text fields are not short, valid UTF-8 free of
// control characters (C0, DEL, C1, newline and tab included) and bidirectional overrides
// (termsafe.Printable): a provider's string is
// printed to terminals (an ESC or OSC sequence there can retitle or clear the user's
// terminal), written to CSVs and rendered on pages (issue 30). The error quotes the
// field clipped, never raw.
func CheckText(o pricing.Offer) error {
	for _, f := range []struct{ name, v string }{
		{"provider", o.Provider}, {"region", o.Region}, {"zone", o.Zone}, {"instance type", o.InstanceType},
		{"gpu model", o.GPUModel}, {"purchase", string(o.Purchase)}, {"currency", o.Currency}, {"source", o.Source},
	} {
		switch {
		case len(f.v) > MaxTextBytes:
			return pricing.Errorf(pricing.Invalid, "offer %s: %s is %d bytes, over %d", Shown(o.InstanceType), f.name, len(f.v), MaxTextBytes)
		case !utf8.ValidString(f.v):
			return pricing.Errorf(pricing.Invalid, "offer %s: %s %s is not UTF-8", Shown(o.InstanceType), f.name, Shown(f.v))
		case !termsafe.Printable(f.v):
			return pricing.Errorf(pricing.Invalid, "offer %s: %s %s holds control characters", Shown(o.InstanceType), f.name, Shown(f.v))
		}
	}
	return nil
}

// CheckPlausible rejects a price under MinPricePerGPUHr per GPU and an observation date
// before pricing.MinObserved (a zero date is "unstated" and allowed here; the parsers
// refuse a zero date a file gave).
func CheckPlausible(o pricing.Offer) error {
	if o.GPUCount > 0 && o.PriceUSDHr/o.GPUCount < MinPricePerGPUHr {
		return pricing.Errorf(pricing.Invalid, "offer %s: price $%v/h ($%v per GPU-hour) under the plausible floor of $%g", o.Key(), o.PriceUSDHr, o.PriceUSDHr/o.GPUCount, MinPricePerGPUHr)
	}
	if !o.ObservedAt.IsZero() {
		if err := pricing.CheckObservedDate(o.ObservedAt); err != nil {
			return pricing.Errorf(pricing.Invalid, "offer %s: observed %w", o.Key(), err)
		}
	}
	return nil
}

// Shown is s for a message: as is when short and printable, else quoted (control
// characters escaped) and clipped to 64 bytes.
func Shown(s string) string {
	if len(s) <= 64 && termsafe.Printable(s) {
		return s
	}
	return strconv.Quote(Clip(s, 64))
}

// MaxUnknownGPUModels caps the distinct GPU models outside the catalog (pricing.LookupGPU)
// one Finalize call keeps: the catalog holds the ~45 GPU models clouds rent, and a
// marketplace lists a few dozen more (consumer cards); one answer listing 20,000 made-up
// types stored 240,000 offers and 20,000 models and made every recommend cost over a
// second and 260 MiB (issue 30). Offers of models past the cap are dropped with one
// warning.
const MaxUnknownGPUModels = 64

// unknownGPUs counts the unknown models Finalize has admitted and the offers it refused.
type unknownGPUs struct {
	models  map[string]bool
	dropped int
}

func (u *unknownGPUs) admit(model string) bool {
	if _, ok := pricing.LookupGPU(model); ok || u.models[model] {
		return true
	}
	if len(u.models) >= MaxUnknownGPUModels {
		u.dropped++
		return false
	}
	if u.models == nil {
		u.models = map[string]bool{}
	}
	u.models[model] = true
	return true
}

func (u *unknownGPUs) warning(name string) string {
	if u.dropped == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d offers skipped: more than %d GPU models not in the catalog in one answer", name, u.dropped, MaxUnknownGPUModels)
}
