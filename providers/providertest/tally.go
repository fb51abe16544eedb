package providertest

import (
	"fmt"

	"github.com/pickergpu/picker/pricing"
)

// Tally says how many offers and distinct GPU models a snapshot holds: the figure an
// adapter's test logs for its fixtures (issue 29: offers and GPU models per adapter).
func Tally(offers []pricing.Offer) string {
	models := map[string]bool{}
	for _, o := range offers {
		models[o.GPUModel] = true
	}
	return fmt.Sprintf("%d offers, %d GPU models", len(offers), len(models))
}
