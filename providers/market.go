package providers

import (
	"context"

	"github.com/pickergpu/picker/pricing"
)

// MarketReport is one read of what a job pays besides the instance-hours and what risks
// it runs on spot (issue 24): spot interruption bands (AWS Spot Instance Advisor's
// public file, Spot Placement Scores with credentials) and block-storage prices (EBS
// gp3, Persistent Disk, Azure managed disks), made by a fetch when its context asks
// (WithMarketRead). Regions were read in full; a part that failed ("spot-advisor", a
// region) is in Failed and keeps its last good rows in the store. A failed read never
// fails the refresh: the prices are good whatever the disks did.
type MarketReport struct {
	Spot     []pricing.SpotBand
	Storage  []pricing.StoragePrice
	Regions  []string
	Failed   map[string]error
	Requests int // API calls the read made
}

type marketKey struct{}

// WithMarketRead returns a context whose fetch also reads spot bands and storage prices
// (providers that have them: aws, gcp, azure). The refresh asks at most once per
// MarketEvery: the Spot Advisor file is a trailing month's figure (its README: refresh
// daily at most) and list prices of disks change rarely.
func WithMarketRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, marketKey{}, true)
}

// WantsMarket reports whether ctx asks the fetch to read spot bands and storage prices.
func WantsMarket(ctx context.Context) bool {
	v, _ := ctx.Value(marketKey{}).(bool)
	return v
}
