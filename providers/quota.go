package providers

import (
	"context"

	"github.com/pickergpu/picker/pricing"
)

// QuotaReport is one read of an account's GPU launch quotas (AWS Service Quotas, GCP
// regional quotas), made by a fetch when its context asks for it (WithQuotaRead).
// Regions are read in full; a region whose read failed is in Failed and keeps its last
// good quotas in the store, as a failed region keeps its prices. A read that failed
// everywhere (no permission, say) is still a report: the store records the failure and
// its time, and the refresh itself succeeds.
type QuotaReport struct {
	Account string
	Quotas  []pricing.Quota
	Regions []string
	Failed  map[string]error
	// Requests is how many API calls the read made (the budget: one per region
	// and family).
	Requests int
}

type quotaKey struct{}

// WithQuotaRead returns a context whose fetch also reads the account's quotas
// (providers that have them: aws, gcp). The refresh asks once per schedule period, not
// on every refresh: quotas change by support ticket, not by the minute.
func WithQuotaRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, quotaKey{}, true)
}

// WantsQuotas reports whether ctx asks the fetch to read quotas.
func WantsQuotas(ctx context.Context) bool {
	v, _ := ctx.Value(quotaKey{}).(bool)
	return v
}
