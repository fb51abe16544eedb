package pricing

import (
	"fmt"
	"math"
	"time"
)

// SpotBand is how often spot instances of one type in one region are interrupted, as a
// source states it: between LowPct and HighPct percent of instances interrupted per
// PeriodHours (AWS Spot Instance Advisor: per month; GCP: per day). The recommender turns
// it into a mean time between interruptions (MTBIHours) and the job's expected cost on
// spot (recommend/spotrisk.go). Score, where set, is AWS's Spot Placement Score (1-10,
// 10 = a request very likely to succeed): a capacity signal shown beside the band, never
// turned into money (AWS publishes no mapping from score to interruption rate).
type SpotBand struct {
	Provider     string    `json:"provider"`
	Region       string    `json:"region"`
	InstanceType string    `json:"instance_type"`
	LowPct       float64   `json:"low_pct"`
	HighPct      float64   `json:"high_pct"`
	PeriodHours  float64   `json:"period_hours"`
	Label        string    `json:"label"` // the source's own label, e.g. "5-10%"
	Score        int       `json:"placement_score,omitempty"`
	Source       string    `json:"source"`
	ObservedAt   time.Time `json:"observed_at"`
}

// HoursPerMonth is AWS's month for prorating monthly prices and rates (730 hours: the
// EBS pricing page's "a month of 730 hours"); monthly bands and GB-month prices use it.
const HoursPerMonth = 730.0

// MidPct is the band's midpoint, the rate the expected cost is priced at.
func (b SpotBand) MidPct() float64 { return (b.LowPct + b.HighPct) / 2 }

// MTBIHours is the mean time between interruptions of one instance at the band's
// midpoint: a fraction p of instances interrupted within the period is, for interruptions
// that arrive at a constant rate (the exponential model of Young 1974 and Daly 2006), a
// rate of -ln(1-p)/period. A band at 100 % (every instance interrupted within the
// period) has no finite rate; it is taken as an interruption an hour.
func (b SpotBand) MTBIHours() float64 {
	p := b.MidPct() / 100
	if p <= 0 || b.PeriodHours <= 0 {
		return math.Inf(1)
	}
	if p >= 1 {
		return 1
	}
	return b.PeriodHours / -math.Log1p(-p)
}

// Describe is the band as stated: "5-10 %/month", with the period named.
func (b SpotBand) Describe() string {
	per := fmt.Sprintf("per %g h", b.PeriodHours)
	switch b.PeriodHours {
	case HoursPerMonth:
		per = "/month"
	case 24:
		per = "/day"
	case 1:
		per = "/h"
	}
	label := b.Label
	if label == "" {
		label = fmt.Sprintf("%g-%g%%", b.LowPct, b.HighPct)
	}
	return label + " " + per
}

// Validate checks a band before it is stored.
func (b SpotBand) Validate() error {
	switch {
	case b.Provider == "" || b.Region == "" || b.InstanceType == "":
		return Errorf(Invalid, "spot band %s/%s/%s: provider, region and instance type are required", b.Provider, b.Region, b.InstanceType)
	case !(b.LowPct >= 0) || !(b.HighPct >= b.LowPct) || b.HighPct > 100:
		return Errorf(Invalid, "spot band %s/%s/%s: %v-%v %%: want 0 <= low <= high <= 100", b.Provider, b.Region, b.InstanceType, b.LowPct, b.HighPct)
	case !(b.PeriodHours > 0):
		return Errorf(Invalid, "spot band %s/%s/%s: period %v h is not positive", b.Provider, b.Region, b.InstanceType, b.PeriodHours)
	}
	return nil
}

// StoragePrice is a provider's block-storage price in one region: per GiB-month
// (USDPerGiBMonth, EBS gp3 and Persistent Disk), or per disk of SizeGiB per month
// (USDPerMonth: Azure managed disks are sold by tier, P10 = 128 GiB). Product names what
// was priced (gp3, pd-ssd, "P10 LRS").
type StoragePrice struct {
	Provider       string    `json:"provider"`
	Region         string    `json:"region"`
	Product        string    `json:"product"`
	USDPerGiBMonth float64   `json:"usd_per_gib_month,omitempty"`
	SizeGiB        float64   `json:"size_gib,omitempty"`
	USDPerMonth    float64   `json:"usd_per_month,omitempty"`
	Source         string    `json:"source"`
	ObservedAt     time.Time `json:"observed_at"`
}

// Tiered reports whether the price is per disk of a fixed size.
func (s StoragePrice) Tiered() bool { return s.SizeGiB > 0 }

// Validate checks a storage price before it is stored.
func (s StoragePrice) Validate() error {
	switch {
	case s.Provider == "" || s.Region == "" || s.Product == "":
		return Errorf(Invalid, "storage price %s/%s/%s: provider, region and product are required", s.Provider, s.Region, s.Product)
	case s.Tiered() && !(s.USDPerMonth > 0):
		return Errorf(Invalid, "storage price %s/%s/%s: %v a month for a %v GiB disk is not positive", s.Provider, s.Region, s.Product, s.USDPerMonth, s.SizeGiB)
	case !s.Tiered() && !(s.USDPerGiBMonth > 0):
		return Errorf(Invalid, "storage price %s/%s/%s: %v per GiB-month is not positive", s.Provider, s.Region, s.Product, s.USDPerGiBMonth)
	}
	return nil
}
