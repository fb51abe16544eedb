package recommend

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

// spotJob is a full fine-tune of a 7B model sized to run for hours on one H100, with a
// checkpoint of about 80 GiB (12 bytes a parameter): interruptions cost real money.
func spotJob(t *testing.T) RecommendInput {
	m := mustModel(t, "llama-2-7b")
	j := fit.Job{Task: fit.TaskFullFT, Precision: "bf16-mixed", Batch: 1, SeqLen: 1024, GradCkpt: true, Optimizer: "adamw-8bit"}
	od := offer("aws", "p5.4xlarge", "H100", 1, 80, 6)
	spotCalm, spotWild := od, od
	spotCalm.Purchase, spotCalm.PriceUSDHr, spotCalm.Region = pricing.Spot, 4, "calm-1"
	spotWild.Purchase, spotWild.PriceUSDHr, spotWild.Region = pricing.Spot, 4, "wild-1"
	return RecommendInput{Model: m, Job: j, Tokens: 2e8, Offers: []pricing.Offer{od, spotCalm, spotWild}, Top: 3,
		SpotBands: []pricing.SpotBand{
			{Provider: "aws", Region: "calm-1", InstanceType: "p5.4xlarge", LowPct: 0, HighPct: 5, PeriodHours: pricing.HoursPerMonth, Label: "<5%", Source: "test"},
			// About an interruption an hour: 60-70 % of instances within the hour.
			{Provider: "aws", Region: "wild-1", InstanceType: "p5.4xlarge", LowPct: 60, HighPct: 70, PeriodHours: 1, Label: "60-70%", Source: "test"},
		}}
}

func fitAt(t *testing.T, rec *Recommendation, region string) Fit {
	t.Helper()
	for _, f := range rec.Offers {
		if f.Region == region {
			return f
		}
	}
	t.Fatalf("no offer in %s among %d", region, len(rec.Offers))
	return Fit{}
}

// TestSpotPricedByExpectedCost: a spot offer's job cost is its expected cost: the same
// instance at the same price costs more where it is interrupted more, by what Daly's
// model says (jobtime.PlanSpot over the job's checkpoint and setup), enough here to rank
// the often-interrupted spot offer after on-demand; the rarely interrupted one keeps
// nearly all of its hourly discount.
func TestSpotPricedByExpectedCost(t *testing.T) {
	in := spotJob(t)
	rec := recommend(t, in)
	od, calm, wild := fitAt(t, rec, "r1"), fitAt(t, rec, "calm-1"), fitAt(t, rec, "wild-1")
	if od.SpotRisk != nil || calm.SpotRisk == nil || wild.SpotRisk == nil {
		t.Fatalf("spot risk on-demand %v, spot %v %v", od.SpotRisk, calm.SpotRisk, wild.SpotRisk)
	}
	if rec.Offers[0].Region != "calm-1" || rec.Offers[2].Region != "wild-1" {
		t.Errorf("order %s, %s, %s; want calm spot, on-demand, then the often-interrupted spot", rec.Offers[0].Region, rec.Offers[1].Region, rec.Offers[2].Region)
	}
	// The expected hours are Daly's for this job's checkpoint at the band's midpoint.
	v, err := fit.Estimate(in.Model, withGPUs(in.Job, 1))
	if err != nil {
		t.Fatal(err)
	}
	b := pricing.SpotBand{LowPct: 60, HighPct: 70, PeriodHours: 1}
	setup := jobtime.SetupHours(fit.CheckpointBytes(in.Model))
	plan := jobtime.PlanSpot(*wild.EstHours, b.MTBIHours(), jobtime.CheckpointBytes(v), setup, 0)
	if r := wild.SpotRisk; math.Abs(r.ExpectedHours-plan.WallHours) > 0.01 || math.Abs(r.MTBIHours-b.MTBIHours()) > 0.01 || r.ExpectedInterruptions < 1 {
		t.Errorf("wild spot risk %+v; want Daly's %.3f h over M = %.3f h, at least one interruption", r, plan.WallHours, b.MTBIHours())
	}
	if wild.Bill.RestartUSD <= 0 || *wild.EstCostUSD <= *od.EstCostUSD {
		t.Errorf("wild spot: restarts $%v, job $%v vs on-demand $%v; want restarts priced and dearer than on-demand", wild.Bill.RestartUSD, *wild.EstCostUSD, *od.EstCostUSD)
	}
	if saving, list := 1 - *calm.EstCostUSD / *od.EstCostUSD, 1-4.0/6; saving < 0.95*list || saving > list+0.001 {
		t.Errorf("calm spot saves %.1f %%; want most of the hourly %.1f %% but not more", saving*100, list*100)
	}
	if rec.SpotSaving == nil || !strings.Contains(rec.SpotSaving.Statement, "cheaper") || !strings.Contains(rec.SpotSaving.Statement, "<5% /month") ||
		rec.SpotSaving.ListSavingPct != 33.3 || rec.SpotSaving.OnDemand != od.Key().String() {
		t.Errorf("spot saving %+v", rec.SpotSaving)
	}
	// --spot-mtbi overrides every band.
	in.SpotMTBI = 10000 * time.Hour
	in.ByRegion = true // the two spot offers now cost alike: one row each all the same
	calmAll := recommend(t, in)
	if w := fitAt(t, calmAll, "wild-1"); w.SpotRisk.ExpectedInterruptions > 0.01 || w.SpotRisk.Source != "--spot-mtbi" {
		t.Errorf("with --spot-mtbi 10000h the wild region still expects %v interruptions (%s)", w.SpotRisk.ExpectedInterruptions, w.SpotRisk.Source)
	}
}

func withGPUs(j fit.Job, n int) fit.Job { j.GPUs = n; return j }

// TestCheckpointEvery: --checkpoint-every fixes the interval, which costs no less than
// Daly's optimum and is stated in the answer.
func TestCheckpointEvery(t *testing.T) {
	in := spotJob(t)
	opt := fitAt(t, recommend(t, in), "wild-1")
	in.CheckpointEvery = 5 * time.Minute
	fixed := fitAt(t, recommend(t, in), "wild-1")
	if r := fixed.SpotRisk; r.CheckpointEveryHours == nil || math.Abs(*r.CheckpointEveryHours-5.0/60) > 0.001 || !r.CheckpointEveryGiven {
		t.Errorf("checkpoint every %v (given %v); want 5 min", r.CheckpointEveryHours, r.CheckpointEveryGiven)
	}
	if *fixed.EstCostUSD < *opt.EstCostUSD {
		t.Errorf("every 5 min costs $%v, the optimum $%v: the optimum is not optimal", *fixed.EstCostUSD, *opt.EstCostUSD)
	}
	if opt.SpotRisk.CheckpointEveryGiven {
		t.Error("the optimum's interval is marked as given")
	}
}

// TestAllInBill: the job's cost is its instance-hours plus the disk (weights, two
// checkpoints and the dataset, for the hours the instance runs, at the stored price of
// its region or the provider's cited figure; none where the provider includes it, tiers
// where it sells disks by size) plus the egress of what it uploads.
func TestAllInBill(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	j := fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 1024}
	aws, lam, az := offer("aws", "g6e.xlarge", "L40S", 1, 48, 1.8), offer("lambda", "gpu_1x_h100", "H100", 1, 80, 2.5), offer("azure", "nc40", "H100", 1, 80, 7)
	up := 12.0
	in := RecommendInput{Model: m, Job: j, Tokens: 1e8, DatasetGB: 500, UploadGB: &up, Offers: []pricing.Offer{aws, lam, az}, Top: 3,
		StoragePrices: []pricing.StoragePrice{
			{Provider: "aws", Region: "r1", Product: "gp3", USDPerGiBMonth: 0.2, Source: "stored"},
			{Provider: "azure", Region: "r1", Product: "P20 LRS", SizeGiB: 512, USDPerMonth: 73.22, Source: "stored"},
			{Provider: "azure", Region: "r1", Product: "P30 LRS", SizeGiB: 1024, USDPerMonth: 135.17, Source: "stored"},
		}}
	rec := recommend(t, in)
	by := map[string]Fit{}
	for _, f := range rec.Offers {
		by[f.Provider] = f
	}
	for p, f := range by {
		b := f.Bill
		if b == nil || math.Abs(*f.EstCostUSD-(b.ComputeUSD+b.DiskUSD+b.EgressUSD)) > 0.002 {
			t.Errorf("%s: job $%v is not compute + disk + egress (%+v)", p, *f.EstCostUSD, b)
			continue
		}
		// 13.5 GB of weights, a few MB of adapter checkpoints and the 500 GB dataset.
		if want := (2*float64(m.Params()) + 500e9) / jobtime.GiB; math.Abs(b.DiskGiB-want) > 0.5 {
			t.Errorf("%s: disk %v GiB; want about %.1f", p, b.DiskGiB, want)
		}
		if b.UploadGB != 12 {
			t.Errorf("%s: upload %v GB; want --upload-gb 12", p, b.UploadGB)
		}
	}
	hours := func(f Fit) float64 { return *f.BilledHours }
	if b := by["aws"].Bill; math.Abs(b.DiskUSD-b.DiskGiB*0.2*hours(by["aws"])/pricing.HoursPerMonth) > 0.001 || b.DiskSource != "stored" || b.EgressUSD != 12*0.09 || b.Stopped == "" {
		t.Errorf("aws bill %+v; want the stored $0.20/GiB-month for the billed hours, egress 12 GB x $0.09, the stopped-disk note", b)
	}
	if b := by["lambda"].Bill; b.DiskUSD != 0 || !b.DiskIncluded || b.EgressUSD != 0 {
		t.Errorf("lambda bill %+v; want the disk included and no egress fee", b)
	}
	// 513.5 GB is 478 GiB: the 512 GiB P20 tier holds it.
	if b := by["azure"].Bill; math.Abs(b.DiskUSD-73.22*hours(by["azure"])/pricing.HoursPerMonth) > 0.001 {
		t.Errorf("azure bill %+v; want the P20 tier (512 GiB, $73.22 a month) for the billed hours", b)
	}
	if len(rec.BillAssumptions) < 2 || !strings.Contains(rec.BillAssumptions[0], "--dataset-gb") {
		t.Errorf("assumptions %q", rec.BillAssumptions)
	}
}

func TestBillInputErrors(t *testing.T) {
	neg := -1.0
	for _, c := range []struct {
		param string
		tweak func(*RecommendInput)
	}{
		{"dataset-gb", func(in *RecommendInput) { in.DatasetGB = -5 }},
		{"dataset-gb", func(in *RecommendInput) { in.DatasetGB = math.NaN() }},
		{"upload-gb", func(in *RecommendInput) { in.UploadGB = &neg }},
		{"checkpoint-every", func(in *RecommendInput) { in.CheckpointEvery = -time.Minute }},
		{"spot-mtbi", func(in *RecommendInput) { in.SpotMTBI = -time.Hour }},
	} {
		in := spotJob(t)
		c.tweak(&in)
		_, err := Recommend(in)
		if pricing.ErrorCode(err) != pricing.Invalid || pricing.ErrorParam(err) != c.param {
			t.Errorf("%s: error %v (param %q); want Invalid on %s", c.param, err, pricing.ErrorParam(err), c.param)
		}
	}
}
