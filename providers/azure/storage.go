package azure

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Managed-disk prices for the all-in bill (issue 24): Premium SSD (the disk Azure's GPU
// sizes take; the reference README, section 25) from the Retail Prices API, one query
// per region. Azure sells these disks by tier, per disk per month, not per GiB: each
// tier's size is Azure's table (premiumTierGiB), the job's disk is rounded up to a tier.

// premiumTierGiB is the size of each Premium SSD tier (Azure managed disks docs, "Premium
// SSD sizes": P1 4 GiB ... P80 32,767 GiB); the API names the tier, not its size.
var premiumTierGiB = map[string]float64{
	"P1": 4, "P2": 8, "P3": 16, "P4": 32, "P6": 64, "P10": 128, "P15": 256, "P20": 512,
	"P30": 1024, "P40": 2048, "P50": 4096, "P60": 8192, "P70": 16384, "P80": 32767,
}

// diskFilter is the OData filter of one region's Premium SSD managed-disk prices.
func diskFilter(region string) string {
	return "serviceName eq 'Storage' and priceType eq 'Consumption' and armRegionName eq '" + region +
		"' and productName eq 'Premium SSD Managed Disks'"
}

// readDisks reads each region's Premium SSD LRS tiers. A region whose query fails, or
// that lists no tier, is failed and keeps its stored prices.
func (p *Provider) readDisks(ctx context.Context, regions []string, now time.Time) *providers.MarketReport {
	rep := &providers.MarketReport{}
	for _, region := range regions {
		var got []pricing.StoragePrice
		_, err := p.eachPage(ctx, region, p.queryURL(diskFilter(region)), func(n int, items []item) error {
			rep.Requests++
			for _, it := range items {
				tier, redundancy, _ := strings.Cut(it.SkuName, " ")
				size, ok := premiumTierGiB[tier]
				if !ok || redundancy != "LRS" || it.ProductName != "Premium SSD Managed Disks" || it.ArmRegionName != region ||
					it.UnitOfMeasure != "1/Month" || it.RetailPrice == nil || !(*it.RetailPrice > 0) || (it.CurrencyCode != "" && it.CurrencyCode != "USD") {
					continue
				}
				got = append(got, pricing.StoragePrice{Provider: Name, Region: region, Product: it.SkuName, SizeGiB: size, USDPerMonth: *it.RetailPrice,
					Source: "Azure Retail Prices (Premium SSD Managed Disks, per disk per month)", ObservedAt: now})
			}
			return nil
		})
		if err == nil && len(got) == 0 {
			err = pricing.Errorf(pricing.Unavailable, "azure: %s: no Premium SSD LRS tier priced", region)
		}
		if err != nil {
			if rep.Failed == nil {
				rep.Failed = map[string]error{}
			}
			rep.Failed[region] = fmt.Errorf("managed disks: %w", err)
			continue
		}
		rep.Storage = append(rep.Storage, got...)
		rep.Regions = append(rep.Regions, region)
	}
	return rep
}
