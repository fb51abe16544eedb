package providers

import (
	"fmt"

	"github.com/pickergpu/picker/pricing"
)

// Finalize is the one validate-and-dedupe step every adapter's offers pass before
// Fetch returns them (the Provider contract): an offer that fails pricing.Offer.Validate
// is dropped, and of offers that share a Key the first is kept. Each drop is a warning
// that starts with name, so a bad row costs one offer and a log line, never the fetch.
// The order of the kept offers is the input's.
func Finalize(name string, offers []pricing.Offer) (kept []pricing.Offer, warnings []string) {
	kept = offers[:0:0]
	seen := make(map[pricing.Key]bool, len(offers))
	for _, o := range offers {
		if err := o.Validate(); err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: %s skipped: %v", name, o.InstanceType, err))
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
	return kept, warnings
}
