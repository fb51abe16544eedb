package recommend

import (
	"fmt"
	"math"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

// Spot risk as money: a spot offer's job cost is its expected cost, the expected
// restarts included (jobtime.PlanSpot), at the interruption band its source states
// (AWS Spot Instance Advisor, stored by refresh), or a cited default band where no
// source gives one.

// SpotRisk is what a spot offer's expected cost assumed, in Fit.SpotRisk.
type SpotRisk struct {
	// Band is the interruption band as its source states it ("5-10% /month"), Source
	// where it came from and ObservedAt when (nil for a default band).
	Band       string     `json:"band"`
	Source     string     `json:"source"`
	ObservedAt *time.Time `json:"observed_at,omitempty"`
	Default    bool       `json:"default,omitempty"` // no source gave this offer a band: a cited default
	// PlacementScore is AWS's Spot Placement Score (1-10) for the type in the region,
	// where credentials let refresh ask; shown, not priced.
	PlacementScore int `json:"placement_score,omitempty"`
	// MTBIHours is the mean time between interruptions at the band's midpoint (of the
	// whole cluster for a multi-node plan: any node's interruption stops the job).
	MTBIHours float64 `json:"mtbi_hours"`
	// The checkpoint plan: its size, one write's hours, the interval (nil: the job saves
	// nothing or ends before the first), one restart's hours (setup again plus reading
	// the checkpoint back), the expected interruptions and the expected run hours.
	CheckpointGiB         float64  `json:"checkpoint_gib"`
	CheckpointWriteHours  float64  `json:"checkpoint_write_hours"`
	CheckpointEveryHours  *float64 `json:"checkpoint_every_hours"`
	CheckpointEveryGiven  bool     `json:"checkpoint_every_given,omitempty"` // --checkpoint-every, not Young/Daly
	RestartHours          float64  `json:"restart_hours"`
	ExpectedInterruptions float64  `json:"expected_interruptions"`
	ExpectedHours         float64  `json:"expected_hours"`
}

// Default interruption bands, for spot offers no source gave one.
var (
	// awsDefaultBand is the Spot Instance Advisor file's own "global_rate" ("<10%", the
	// average over every type and region) for a type or region the file lacks.
	awsDefaultBand = pricing.SpotBand{LowPct: 0, HighPct: 10, PeriodHours: pricing.HoursPerMonth, Label: "<10%",
		Source: "AWS Spot Instance Advisor global_rate (spot-advisor-data.json), the type or region not in the file"}
	// otherDefaultBand: GCP documented preemptible VMs' preemption rate as "between 5% and
	// 15% per day per project" on a seven-day average (cloud.google.com/compute/docs/
	// instances/preemptible, FAQ of the preemptible VM page; not re-verified here). It is
	// the only published rate of its kind and stands in for every provider that marks
	// offers interruptible without one (GCP Spot VMs, Azure Spot, RunPod community spot).
	otherDefaultBand = pricing.SpotBand{LowPct: 5, HighPct: 15, PeriodHours: 24, Label: "5-15%",
		Source: "GCP preemptible VM docs: 5-15% preempted per day per project (a default band, no provider data)"}
)

// spotKey identifies a band.
type spotKey struct{ provider, region, typ string }

// spotBands indexes the input's bands.
func spotBands(bands []pricing.SpotBand) map[spotKey]pricing.SpotBand {
	m := make(map[spotKey]pricing.SpotBand, len(bands))
	for _, b := range bands {
		m[spotKey{b.Provider, b.Region, b.InstanceType}] = b
	}
	return m
}

// bandOf is a spot offer's band: the stored one, else the provider's default.
func (in *RecommendInput) bandOf(o *pricing.Offer) (pricing.SpotBand, bool) {
	if b, ok := in.bands[spotKey{o.Provider, o.Region, o.InstanceType}]; ok {
		return b, true
	}
	if o.Provider == "aws" {
		return awsDefaultBand, false
	}
	return otherDefaultBand, false
}

// mtbi is offer o's mean time between interruptions for a plan of nodes instances: +Inf
// on demand; --spot-mtbi when given.
func (in *RecommendInput) mtbi(o *pricing.Offer, nodes int) float64 {
	if o.Purchase != pricing.Spot {
		return math.Inf(1)
	}
	m := in.SpotMTBI.Hours()
	if m <= 0 {
		b, _ := in.bandOf(o)
		m = b.MTBIHours()
	}
	return m / float64(max(nodes, 1))
}

// checkpointBytes is the variant's checkpoint, computed once.
func (v *variant) checkpointBytes() float64 {
	if !v.ckptSet {
		v.ckpt, v.ckptSet = jobtime.CheckpointBytes(v.res), true
	}
	return v.ckpt
}

// spotPlan is cd's expected run on spot offer o.
func (e *evaluator) spotPlan(cd *cand, o *pricing.Offer) jobtime.SpotRun {
	return jobtime.PlanSpot(cd.hours, e.in.mtbi(o, cd.vk.nodes), e.variant(cd.vk).checkpointBytes(), e.setup, e.in.CheckpointEvery.Hours())
}

// spotRisk describes cd's spot plan for the answer.
func (e *evaluator) spotRisk(cd *cand, o *pricing.Offer) *SpotRisk {
	b, known := e.in.bandOf(o)
	s := e.spotPlan(cd, o)
	r := &SpotRisk{Band: b.Describe(), Source: b.Source, Default: !known, PlacementScore: b.Score,
		MTBIHours: fit.Round3(s.MTBIHours), CheckpointGiB: fit.Round3(s.CheckpointBytes / fit.GiB),
		CheckpointWriteHours: fit.Round3(s.WriteHours), RestartHours: fit.Round3(s.RestartHours),
		ExpectedInterruptions: fit.Round3(s.Interruptions), ExpectedHours: fit.Round3(s.WallHours),
		CheckpointEveryGiven: e.in.CheckpointEvery > 0 && s.WriteHours > 0}
	if e.in.SpotMTBI > 0 {
		// The hourly share of instances interrupted at that mean: 1 - e^(-1/M).
		r.Band = fmt.Sprintf("%.2g%% /h (--spot-mtbi %s)", 100*-math.Expm1(-1/e.in.SpotMTBI.Hours()), e.in.SpotMTBI)
		r.Source, r.Default = "--spot-mtbi", false
	}
	if known && !b.ObservedAt.IsZero() {
		t := b.ObservedAt
		r.ObservedAt = &t
	}
	if !math.IsInf(s.IntervalHours, 1) && s.IntervalHours < cd.hours {
		r.CheckpointEveryHours = ptr(fit.Round3(s.IntervalHours))
	}
	return r
}

// SpotSaving compares the best spot offer shown with the best on-demand one: the
// answer's "spot is N % cheaper for this H-hour job at a B interruption band".
type SpotSaving struct {
	Spot        string  `json:"spot"`      // the spot offer's key
	OnDemand    string  `json:"on_demand"` // the on-demand offer's key
	SpotUSD     float64 `json:"spot_usd"`
	OnDemandUSD float64 `json:"on_demand_usd"`
	// SavingPct is how much cheaper spot is, expected restarts included (negative: dearer).
	SavingPct float64 `json:"saving_pct"`
	// ListSavingPct is the saving of the hourly prices alone.
	ListSavingPct float64 `json:"list_saving_pct"`
	Hours         float64 `json:"hours"` // the on-demand run (setup + run)
	Band          string  `json:"band"`
	Statement     string  `json:"statement"`
}

// spotSaving is the answer's spot comparison: the best spot fit shown against its
// on-demand twin (the same provider and instance type, the same region when shown, else
// the least costly twin among the offers read), or the best on-demand fit shown when
// the type has no twin; nil unless both have a job cost.
func spotSaving(ev *evaluator, fits []Fit) *SpotSaving {
	var spot, od *Fit
	for i := range fits {
		f := &fits[i]
		if f.EstCostUSD == nil {
			continue
		}
		switch {
		case f.Purchase == pricing.Spot && spot == nil:
			spot = f
		case f.Purchase == pricing.OnDemand && od == nil:
			od = f
		}
	}
	if spot == nil || spot.SpotRisk == nil {
		return nil
	}
	if twin := onDemandTwin(ev, fits, spot); twin != nil {
		od = twin
	}
	if od == nil {
		return nil
	}
	s := &SpotSaving{Spot: spot.Key().String(), OnDemand: od.Key().String(), SpotUSD: *spot.EstCostUSD, OnDemandUSD: *od.EstCostUSD, Band: spot.SpotRisk.Band}
	if s.OnDemandUSD > 0 {
		s.SavingPct = math.Round((1-s.SpotUSD/s.OnDemandUSD)*1000) / 10
	}
	if od.PriceUSDHr > 0 {
		s.ListSavingPct = math.Round((1-spot.PriceUSDHr/od.PriceUSDHr)*1000) / 10
	}
	if od.EstHours != nil && od.SetupHours != nil {
		s.Hours = fit.Round3(*od.EstHours + *od.SetupHours)
	}
	word := "cheaper"
	pct := s.SavingPct
	if pct < 0 {
		word, pct = "dearer", -pct
	}
	s.Statement = fmt.Sprintf("spot is %g %% %s for this %s job at a %s interruption band (%g %% by the hourly price alone; %s vs %s)",
		pct, word, hoursWord(s.Hours), s.Band, s.ListSavingPct, s.Spot, s.OnDemand)
	return s
}

// onDemandTwin is spot's on-demand twin: shown in the same region, else the least costly
// one among the offers read; nil when there is none.
func onDemandTwin(ev *evaluator, fits []Fit, spot *Fit) *Fit {
	twin := func(o *pricing.Offer) bool {
		return o.Purchase == pricing.OnDemand && o.Provider == spot.Provider && o.InstanceType == spot.InstanceType
	}
	for i := range fits {
		if twin(&fits[i].Offer) && fits[i].EstCostUSD != nil && fits[i].Region == spot.Region {
			return &fits[i]
		}
	}
	var best *cand
	for i := range ev.in.Offers {
		if !twin(&ev.in.Offers[i]) {
			continue
		}
		if cd, ok := ev.evaluate(i); ok && cd.hours >= 0 && (best == nil || cd.cost < best.cost) {
			best = &cd
		}
	}
	if best == nil {
		return nil
	}
	f := ev.fit(*best)
	return &f
}

// hoursWord is a job's length as a sentence says it: "9-hour", "35-minute".
func hoursWord(h float64) string {
	if h < 1 {
		return fmt.Sprintf("%.0f-minute", h*60)
	}
	if h < 10 {
		return fmt.Sprintf("%.1f-hour", h)
	}
	return fmt.Sprintf("%.0f-hour", h)
}
