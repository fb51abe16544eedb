package recommend

import (
	"fmt"
	"math"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

// The all-in bill: a job's cost is its billed instance-hours (with, on spot, the
// expected restarts: spotrisk.go), the disk it needs for as long as it runs, and the
// data it uploads out. Each part is a Fit field; EstCostUSD is their sum.

// Bill is how Fit.EstCostUSD adds up.
type Bill struct {
	// ComputeUSD is the instance-hours billed: setup plus run (plus, on spot, the
	// expected checkpoints, lost work and restarts) rounded up to the provider's billing
	// increment, times the price. BootUSD is the setup's share of it, RestartUSD the
	// spot interruptions' (0 on demand).
	ComputeUSD float64 `json:"compute_usd"`
	BootUSD    float64 `json:"boot_usd"`
	RestartUSD float64 `json:"restart_usd"`
	// DiskUSD is DiskGiB (weights, two checkpoints, the dataset; per node) at
	// DiskProduct's price for the hours the instance runs; 0 where the provider includes
	// the disk (DiskIncluded).
	DiskUSD      float64 `json:"disk_usd"`
	DiskGiB      float64 `json:"disk_gib"`
	DiskProduct  string  `json:"disk_product,omitempty"`
	DiskIncluded bool    `json:"disk_included,omitempty"`
	// DiskSource says where the disk's price came from: the provider's price API (with
	// DiskObservedAt) or a cited figure.
	DiskSource     string     `json:"disk_source"`
	DiskObservedAt *time.Time `json:"disk_observed_at,omitempty"`
	// EgressUSD is UploadGB sent out to the internet at the provider's cited price.
	EgressUSD float64 `json:"egress_usd"`
	UploadGB  float64 `json:"upload_gb"`
	// Stopped says what the provider keeps billing once the instance stops (disks left
	// behind); empty when nothing.
	Stopped string `json:"stopped_bills,omitempty"`
}

// storageRate is one provider-region's disk price, from the store or the cited default.
type storageRate struct {
	perGiBMonth float64
	tiers       []jobtime.TieredDisk
	product     string
	source      string
	observed    time.Time
	included    bool
}

type storageKey struct{ provider, region string }

// storageRates indexes the input's fetched storage prices: per region, the per-GiB price
// or the tiers (Azure). Where a region lists several per-GiB products the cheapest is
// kept; adapters store the product the job's disk would be (gp3, pd-ssd, Premium SSD).
func storageRates(prices []pricing.StoragePrice) map[storageKey]*storageRate {
	m := map[storageKey]*storageRate{}
	for _, p := range prices {
		k := storageKey{p.Provider, p.Region}
		r := m[k]
		if r == nil {
			r = &storageRate{source: p.Source, observed: p.ObservedAt}
			m[k] = r
		}
		if p.Tiered() {
			r.tiers = append(r.tiers, jobtime.TieredDisk{SizeGiB: p.SizeGiB, USDPerMonth: p.USDPerMonth})
			if r.product == "" {
				r.product = p.Product
			}
			continue
		}
		if r.perGiBMonth == 0 || p.USDPerGiBMonth < r.perGiBMonth {
			r.perGiBMonth, r.product, r.source, r.observed = p.USDPerGiBMonth, p.Product, p.Source, p.ObservedAt
		}
	}
	return m
}

// storageOf is offer o's disk price: fetched for its region, else its provider's cited
// figure.
func (in *RecommendInput) storageOf(o *pricing.Offer) *storageRate {
	k := storageKey{o.Provider, o.Region}
	if len(in.StoragePrices) == 0 {
		k.region = "" // nothing fetched: the provider's figure in every region, one lookup
	}
	if in.lastRate != nil && in.lastKey == k {
		return in.lastRate
	}
	r := in.rates[k]
	if r == nil {
		c := jobtime.CostsFor(o.Provider)
		r = &storageRate{perGiBMonth: c.DiskUSDPerGiBMonth, product: c.DiskProduct, source: c.Source, included: c.DiskIncluded}
		if in.rates == nil {
			in.rates = map[storageKey]*storageRate{}
		}
		in.rates[k] = r
	}
	in.lastKey, in.lastRate = k, r
	return r
}

// monthlyUSD is the price of a sizeGiB disk for a month.
func (r *storageRate) monthlyUSD(sizeGiB float64) float64 {
	switch {
	case r.included:
		return 0
	case len(r.tiers) > 0:
		return jobtime.TieredMonthlyUSD(sizeGiB, r.tiers)
	}
	return sizeGiB * r.perGiBMonth
}

// diskGiB is the disk one instance of the variant needs.
func (e *evaluator) diskGiB(v *variant) float64 {
	return jobtime.DiskBytes(e.weightBytes, v.checkpointBytes(), e.in.DatasetGB*1e9) / jobtime.GiB
}

// uploadGB is what the job sends out: --upload-gb, else a training job's trained
// weights in 16 bits (the adapter, or the whole model); nothing for serving.
func (e *evaluator) uploadGB(v *variant) float64 {
	if e.in.UploadGB != nil {
		return *e.in.UploadGB
	}
	if !v.res.Job.IsTraining() {
		return 0
	}
	return 2 * float64(v.res.TrainableParams) / 1e9
}

// extras is cd's disk and egress dollars on offer o for total instance-hours.
func (e *evaluator) extras(cd *cand, o *pricing.Offer, total float64) (disk, egress float64) {
	v := e.variant(cd.vk)
	nodes := float64(max(cd.vk.nodes, 1))
	disk = e.in.storageOf(o).monthlyUSD(e.diskGiB(v)) * nodes * total / pricing.HoursPerMonth
	egress = e.uploadGB(v) * e.in.factsOf(cd.i).egress
	return disk, egress
}

// bill itemises cd's EstCostUSD on offer o.
func (e *evaluator) billOf(cd *cand, o *pricing.Offer) *Bill {
	v := e.variant(cd.vk)
	price := o.PriceUSDHr * float64(max(cd.vk.nodes, 1))
	b := e.in.billing(o.Provider)
	r := e.in.storageOf(o)
	disk, egress := e.extras(cd, o, cd.wall)
	compute := b.BilledHours(cd.wall) * price
	plain := b.BilledHours(cd.hours+e.setup) * price
	c := jobtime.CostsFor(o.Provider)
	bill := &Bill{ComputeUSD: roundCost(compute), BootUSD: roundCost(e.setup * price), RestartUSD: roundCost(math.Max(0, compute-plain)),
		DiskUSD: roundCost(disk), DiskGiB: fit.Round3(e.diskGiB(v)), DiskProduct: r.product, DiskIncluded: r.included, DiskSource: r.source,
		EgressUSD: roundCost(egress), UploadGB: fit.Round3(e.uploadGB(v)), Stopped: c.StoppedBills}
	if !r.observed.IsZero() {
		t := r.observed
		bill.DiskObservedAt = &t
	}
	return bill
}

// billAssumptions states how the answer's job costs were built (Recommendation.
// BillAssumptions), each with the flag that overrides it.
func billAssumptions(in *RecommendInput, ev *evaluator, hasSpot bool) []string {
	if in.work() <= 0 || in.Rank == RankHourly {
		return nil
	}
	v := ev.variant(variantKey{gpus: max(in.Job.GPUs, 1)})
	if v.err != nil {
		v = &variant{res: ev.base}
	}
	out := []string{
		fmt.Sprintf("disk: the model's weights as downloaded (%.1f GiB), two checkpoints of %.1f GiB and the dataset (%g GB, --dataset-gb) per instance, at the provider's block-storage price (fetched where stored, else a cited figure) for the hours the instance runs",
			ev.weightBytes/jobtime.GiB, v.checkpointBytes()/jobtime.GiB, in.DatasetGB),
		fmt.Sprintf("egress: %.2f GB uploaded out (--upload-gb; default: a training job's trained weights in 16 bits) at the provider's cited internet egress price", ev.uploadGB(v)),
	}
	if hasSpot {
		every := "the Young/Daly optimum sqrt(2CM)-C for checkpoint write time C and mean time between interruptions M"
		if in.CheckpointEvery > 0 {
			every = in.CheckpointEvery.String() + " (--checkpoint-every)"
		}
		out = append(out, fmt.Sprintf("spot: interruptions arrive at random at the band's midpoint rate (--spot-mtbi overrides); each loses the work since the last checkpoint and restarts (setup again plus reading the checkpoint back); checkpoints are written at %.0f MiB/s (EBS gp3 baseline) every %s; the 2-minute interruption notice is not used",
			float64(jobtime.CheckpointWriteBps)/(1<<20), every))
	}
	return out
}

// checkBillInput validates the all-in bill's and the spot model's inputs.
func checkBillInput(in *RecommendInput) error {
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case bad(in.DatasetGB):
		return pricing.ParamErrorf(pricing.Invalid, "dataset-gb", "--dataset-gb %v: want a non-negative number of GB", in.DatasetGB)
	case in.UploadGB != nil && bad(*in.UploadGB):
		return pricing.ParamErrorf(pricing.Invalid, "upload-gb", "--upload-gb %v: want a non-negative number of GB", *in.UploadGB)
	case in.CheckpointEvery < 0:
		return pricing.ParamErrorf(pricing.Invalid, "checkpoint-every", "--checkpoint-every %s: want a positive duration such as 30m", in.CheckpointEvery)
	case in.SpotMTBI < 0:
		return pricing.ParamErrorf(pricing.Invalid, "spot-mtbi", "--spot-mtbi %s: want a positive duration such as 20h", in.SpotMTBI)
	}
	return nil
}

// hasSpot reports whether any offer is spot.
func (in *RecommendInput) hasSpot() bool {
	for i := range in.Offers {
		if in.Offers[i].Purchase == pricing.Spot {
			return true
		}
	}
	return false
}

// regional reports whether an offer's extras (its spot band, its disk price) can differ
// between offers of one shape (regions of one instance type): the input carries fetched
// bands or storage prices, which are per region. Without them every extra is a
// per-provider figure, the same across a shape (ShapePlan relies on it).
func (in *RecommendInput) regional() bool {
	return len(in.SpotBands) > 0 || len(in.StoragePrices) > 0
}
