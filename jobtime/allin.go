package jobtime

import (
	"math"
	"strings"
)

// The all-in bill: what a job pays besides the instance-hours, per provider. Prices
// fetched by the adapters (EBS gp3, Persistent Disk, Azure managed disks) replace
// DiskUSDPerGiBMonth where the store has them; the rest are cited figures.

// ProviderCosts is what one provider bills besides the instance.
type ProviderCosts struct {
	// DiskUSDPerGiBMonth prices the job's disk when no fetched price is stored; 0 with
	// DiskIncluded: the instance comes with enough local disk at no extra charge.
	DiskUSDPerGiBMonth float64
	DiskProduct        string
	DiskIncluded       bool
	// EgressUSDPerGB is internet data transfer out (the uploaded checkpoints), first tier.
	EgressUSDPerGB float64
	// StoppedBills says what the provider keeps billing for a stopped instance or a
	// disk left behind; "" when nothing.
	StoppedBills string
	Source       string
}

// providerCosts: each figure from the provider's pricing page, as cited.
var providerCosts = map[string]ProviderCosts{
	"aws": {DiskUSDPerGiBMonth: 0.08, DiskProduct: "gp3", EgressUSDPerGB: 0.09,
		StoppedBills: "aws bills EBS volumes while the instance is stopped, and until they are deleted",
		Source:       "aws.amazon.com/ebs/pricing (gp3 $0.08/GB-month, us-east-1); aws.amazon.com/ec2/pricing/on-demand data transfer (internet out, first 10 TB/month $0.09/GB, after 100 GB/month free; not re-verified here)"},
	"gcp": {DiskUSDPerGiBMonth: 0.17, DiskProduct: "pd-ssd", EgressUSDPerGB: 0.12,
		StoppedBills: "gcp bills persistent disks of a stopped (TERMINATED) VM until they are deleted",
		Source:       "cloud.google.com/compute/disks-image-pricing (SSD PD $0.17/GiB-month in us-central1; not re-verified here, the Billing SKU sample's 2020 us-east4 price is $0.187); cloud.google.com/vpc/network-pricing (premium tier internet egress, first TiB $0.12/GiB; not re-verified here)"},
	"azure": {DiskUSDPerGiBMonth: 19.71 / 128, DiskProduct: "P10 LRS", EgressUSDPerGB: 0.087,
		StoppedBills: "azure bills managed disks of a stopped or deallocated VM until they are deleted",
		Source:       "azure.microsoft.com/pricing/details/managed-disks (P10 LRS 128 GiB $19.71/month in eastus, as in public Retail Prices fixtures); azure.microsoft.com/pricing/details/bandwidth (internet egress, first 10 TB $0.087/GB after 100 GB free; not re-verified here)"},
	"lambda": {DiskIncluded: true, EgressUSDPerGB: 0,
		Source: "lambda.ai/pricing: on-demand instances include local NVMe storage and no egress fees (not re-verified here)"},
	"runpod": {DiskUSDPerGiBMonth: 0.10, DiskProduct: "pod volume", EgressUSDPerGB: 0,
		StoppedBills: "runpod bills a stopped pod's volume at $0.20/GB-month",
		Source:       "docs.runpod.io/get-started/billing-information (running pods $0.10/GB-month for all storage, stopped $0.20/GB-month for volume storage); docs.runpod.io/pods/pricing (no fees for data ingress or egress)"},
}

// defaultCosts is assumed for providers without a cited figure: AWS's, stated as such.
var defaultCosts = ProviderCosts{DiskUSDPerGiBMonth: 0.08, DiskProduct: "block storage", EgressUSDPerGB: 0.09,
	Source: "no published figure found: AWS's EBS gp3 ($0.08/GB-month) and internet egress ($0.09/GB) assumed"}

// CostsFor returns the provider's costs besides the instance.
func CostsFor(provider string) ProviderCosts {
	if c, ok := providerCosts[strings.ToLower(provider)]; ok {
		return c
	}
	return defaultCosts
}

// DiskBytes is the disk a job needs: the model's weights as downloaded, two
// checkpoints (the last good one and the one being written; none for serving) and the
// dataset.
func DiskBytes(weightBytes, ckptBytes, datasetBytes float64) float64 {
	return weightBytes + 2*ckptBytes + datasetBytes
}

// GiB is 2^30 bytes; providers bill disks per GiB ("GB-month" on AWS's page is GiB:
// EBS volumes are sized in GiB).
const GiB = 1 << 30

// TieredDisk is one disk size a provider sells by the month (Azure P10 = 128 GiB).
type TieredDisk struct {
	SizeGiB, USDPerMonth float64
}

// TieredMonthlyUSD is the monthly price of the disks that hold sizeGiB: the smallest tier
// that holds it, or as many of the largest as needed; 0 when there are no tiers.
func TieredMonthlyUSD(sizeGiB float64, tiers []TieredDisk) float64 {
	best, largest := math.Inf(1), TieredDisk{}
	for _, t := range tiers {
		if t.SizeGiB >= sizeGiB && t.USDPerMonth < best {
			best = t.USDPerMonth
		}
		if t.SizeGiB > largest.SizeGiB {
			largest = t
		}
	}
	if !math.IsInf(best, 1) {
		return best
	}
	if largest.SizeGiB <= 0 {
		return 0
	}
	return math.Ceil(sizeGiB/largest.SizeGiB) * largest.USDPerMonth
}
