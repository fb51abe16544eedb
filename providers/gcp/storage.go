package gcp

import (
	"slices"
	"strings"
	"time"

	billingpb "cloud.google.com/go/billing/apiv1/billingpb"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Persistent Disk prices for the all-in bill (issue 24), from the Compute Engine SKUs
// the fetch lists anyway: no request of their own. The job's disk is a zonal SSD-backed
// Persistent Disk: pd-balanced (the default boot disk of GPU VMs) or pd-ssd; Standard
// (HDD) PD is left out, its throughput far below the checkpoint write rate the spot
// model assumes (jobtime.CheckpointWriteBps), and so are regional (replicated) disks.

// pdProducts maps a SKU description's start to the disk it prices (the reference README,
// section 25: "SSD backed PD Capacity", "Balanced PD Capacity").
var pdProducts = []struct{ prefix, product string }{
	{"SSD backed PD Capacity", "pd-ssd"},
	{"Balanced PD Capacity", "pd-balanced"},
}

// diskPrices collects Persistent Disk capacity prices per region and product.
type diskPrices struct {
	m map[[2]string]float64 // region, product -> USD per GiB-month
}

// add keeps s when it is an on-demand PD capacity SKU priced per GiBy.mo in USD: one price
// per region it serves (serviceRegions: some SKUs omit the location in their description
// and list several regions).
func (d *diskPrices) add(s *billingpb.Sku) {
	if s.GetCategory().GetResourceFamily() != "Storage" || s.GetCategory().GetUsageType() != "OnDemand" {
		return
	}
	desc := s.GetDescription()
	product := ""
	for _, p := range pdProducts {
		if strings.HasPrefix(desc, p.prefix) {
			product = p.product
		}
	}
	if product == "" || strings.Contains(desc, "Regional") {
		return
	}
	usd, ok := skuUSD(s, "GiBy.mo") // compose.go
	if !ok {
		return
	}
	if d.m == nil {
		d.m = map[[2]string]float64{}
	}
	for _, region := range s.GetServiceRegions() {
		d.m[[2]string{region, product}] = usd
	}
}

// report is the market read of regions: their PD prices. A region without any is
// failed (its stored prices stay); no requests of its own.
func (d *diskPrices) report(regions []string, now time.Time) *providers.MarketReport {
	rep := &providers.MarketReport{}
	for _, region := range regions {
		found := false
		for _, p := range pdProducts {
			if usd, ok := d.m[[2]string{region, p.product}]; ok {
				rep.Storage = append(rep.Storage, pricing.StoragePrice{Provider: Name, Region: region, Product: p.product, USDPerGiBMonth: usd,
					Source: "GCP Cloud Billing Catalog (Compute Engine SKUs, " + p.prefix + ", GiBy.mo)", ObservedAt: now})
				found = true
			}
		}
		if !found {
			if rep.Failed == nil {
				rep.Failed = map[string]error{}
			}
			rep.Failed[region] = pricing.Errorf(pricing.Unavailable, "gcp: %s: no Persistent Disk capacity SKU (pd-balanced, pd-ssd) in the catalog", region)
			continue
		}
		rep.Regions = append(rep.Regions, region)
	}
	slices.SortFunc(rep.Storage, func(a, b pricing.StoragePrice) int {
		return strings.Compare(a.Region+a.Product, b.Region+b.Product)
	})
	return rep
}
