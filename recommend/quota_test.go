package recommend

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

func awsOffer(region, typ string, vcpus, price float64) pricing.Offer {
	return pricing.Offer{Provider: "aws", Region: region, InstanceType: typ, GPUModel: "A100-80GB", GPUCount: 8, GPUMemGiB: 80,
		VCPUs: vcpus, RAMGiB: 1152, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD", ObservedAt: obs, Source: "api"}
}

func pQuota(region string, limit float64) pricing.Quota {
	return pricing.Quota{Provider: "aws", Account: "000011112222", Region: region, Code: "L-417A185B", Name: "Running On-Demand P instances",
		Family: "P", Purchase: pricing.OnDemand, Unit: pricing.QuotaVCPU, Limit: limit, ObservedAt: obs}
}

// TestQuotaExcludes: an offer whose instance needs more vCPUs than the region's
// remaining quota is left out and counted under no-quota, naming the quota and the
// increase; the next offer ranks first; with IgnoreQuota, or without quotas, the
// answer is the same as before; an offer no quota bounds (another family, another
// provider) is never left out.
func TestQuotaExcludes(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	job := fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 1024}
	offers := []pricing.Offer{
		awsOffer("us-east-1", "p4de.24xlarge", 96, 20),
		awsOffer("us-west-2", "p4de.24xlarge", 96, 25),
		offer("lambda", "gpu_8x_a100_80gb_sxm4", "A100-80GB", 8, 80, 30),
	}
	quotas := []pricing.Quota{pQuota("us-east-1", 0), pQuota("us-west-2", 96)}
	before := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers})
	if before.Offers[0].Region != "us-east-1" {
		t.Fatalf("without quotas the cheapest ranks first; got %s", before.Offers[0].Key())
	}
	ignored := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers, Quotas: quotas, IgnoreQuota: true})
	if !slices.EqualFunc(ignored.Offers, before.Offers, func(a, b Fit) bool { return a.Key() == b.Key() }) || len(ignored.Excluded) != 0 {
		t.Errorf("--ignore-quota changed the answer: %v, excluded %+v", keys(ignored.Offers), ignored.Excluded)
	}

	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers, Quotas: quotas})
	if got := keys(rec.Offers); !slices.Equal(got, []string{"aws/us-west-2/p4de.24xlarge/on-demand", "lambda/r1/gpu_8x_a100_80gb_sxm4/on-demand"}) {
		t.Errorf("offers %v; want us-west-2 (96 of 96 vCPUs) then lambda (no quota known)", got)
	}
	if len(rec.Excluded) != 1 {
		t.Fatalf("excluded %+v; want one no-quota entry", rec.Excluded)
	}
	x := rec.Excluded[0]
	wantReason := "p4de.24xlarge in us-east-1 needs 96 vCPUs of aws us-east-1 Running On-Demand P instances (L-417A185B): limit 0 vCPUs; request an increase to 96"
	if x.Code != ExclNoQuota || x.GPUModel != "A100-80GB" || x.Offers != 1 || x.Reason != wantReason {
		t.Errorf("exclusion %+v\nwant reason %q", x, wantReason)
	}
	if !slices.ContainsFunc(rec.Warnings, func(w string) bool { return w == "the best offer is out of quota: "+wantReason }) {
		t.Errorf("warnings %q; want the out-of-quota best offer", rec.Warnings)
	}
	if tl := TallyExclusions(rec.Excluded).String(); tl != "1 offer on A100-80GB left out: no quota (1)" {
		t.Errorf("tally %q", tl)
	}

	// Nothing the quota allows: the nearest miss names the increase.
	none := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers[:2], Quotas: []pricing.Quota{pQuota("us-east-1", 0), pQuota("us-west-2", 48)}})
	if len(none.Offers) != 0 || !strings.HasPrefix(none.NearestMiss, "every offer that fits needs more quota than the account has: p4de.24xlarge in us-east-1 needs 96 vCPUs") {
		t.Errorf("offers %v, nearest miss %q", keys(none.Offers), none.NearestMiss)
	}
}

// TestQuotaCountsNodes: a --nodes cluster draws nodes x vCPUs from the quota, and a
// GCP quota with usage leaves limit - usage GPUs.
func TestQuotaCountsNodes(t *testing.T) {
	for _, tt := range []struct {
		limit, usage float64
		usageKnown   bool
		allow        bool
	}{
		{192, 0, false, true},  // 2 x 96 vCPUs
		{191, 0, false, false}, // one short
		{200, 9, true, false},  // 191 left
		{200, 8, true, true},
	} {
		in := RecommendInput{Offers: []pricing.Offer{awsOffer("us-east-1", "p4de.24xlarge", 96, 20)}}
		q := pQuota("us-east-1", tt.limit)
		q.Usage, q.UsageKnown = tt.usage, tt.usageKnown
		in.Quotas = []pricing.Quota{q}
		if got := in.quotaAllows(0, 2); got != tt.allow {
			t.Errorf("limit %v usage %v (%v): two nodes allowed %v; want %v", tt.limit, tt.usage, tt.usageKnown, got, tt.allow)
		}
	}
	g := pricing.Offer{Provider: "gcp", Region: "us-central1", InstanceType: "a3-megagpu-8g", GPUModel: "H100", GPUCount: 8, Purchase: pricing.Spot}
	if fam, unit, per, ok := pricing.QuotaScope(&g); !ok || fam != "H100_MEGA" || unit != pricing.QuotaGPU || per != 8 {
		t.Errorf("a3-megagpu-8g scope %s %s %v %v; want H100_MEGA, GPU, 8", fam, unit, per, ok)
	}
	for typ, want := range map[string]string{"g6e.xlarge": "G", "gr6.4xlarge": "G", "vt1.3xlarge": "G", "p5.48xlarge": "P", "dl1.24xlarge": "", "inf2.xlarge": ""} {
		o := pricing.Offer{Provider: "aws", InstanceType: typ, VCPUs: 4}
		if fam, _, _, _ := pricing.QuotaScope(&o); fam != want {
			t.Errorf("%s: family %q; want %q", typ, fam, want)
		}
	}
}

// TestSoldOutRanksLast: an offer its provider reports sold out ranks after every
// launchable one however cheap, carries a note, and the answer counts it.
func TestSoldOutRanksLast(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	job := fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 1024}
	cheap := offer("lambda", "gpu_1x_h100_sxm5", "H100", 1, 80, 2.0)
	cheap.Available = pricing.SoldOut
	avail := offer("lambda", "gpu_1x_h100_pcie", "H100", 1, 80, 2.5)
	avail.Available = pricing.AvailableNow
	unknown := offer("p", "h100", "H100", 1, 80, 3.0)
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: []pricing.Offer{cheap, avail, unknown}})
	if got := keys(rec.Offers); !slices.Equal(got, []string{avail.Key().String(), unknown.Key().String(), cheap.Key().String()}) {
		t.Errorf("order %v; want available, unknown, then the cheaper sold-out one", got)
	}
	last := rec.Offers[len(rec.Offers)-1]
	if !slices.Contains(last.Notes, soldOutNote) || slices.Contains(rec.Offers[0].Notes, soldOutNote) {
		t.Errorf("notes: sold out %q, first %q", last.Notes, rec.Offers[0].Notes)
	}
	if !slices.ContainsFunc(rec.Warnings, func(w string) bool { return strings.HasPrefix(w, "1 offer shown is sold out") }) {
		t.Errorf("warnings %q", rec.Warnings)
	}
}

func keys(fs []Fit) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Key().String()
	}
	return out
}

// TestShapePlanWithLaunchData: with quotas per region (some 0, some short of an
// instance, some ample, many regions without) and sold-out words on some offers, the
// shape read still answers as the full scan: ShapePlan reads on past a shape's first
// offers where a quota or a sold-out word sets one apart, and keeps the offers a quota
// leaves out out of its bound.
func TestShapePlanWithLaunchData(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	gen := func() []pricing.Offer {
		offers := randomOffers(r, 50+r.IntN(600), 3+r.IntN(60))
		for i := range offers {
			if o := &offers[i]; o.Provider == "aws" {
				o.InstanceType = "p" + o.InstanceType[1:] // t12 -> p12: the P family's quotas
			}
		}
		return offers
	}
	decorate := func(in *RecommendInput, offers []pricing.Offer) {
		in.Quotas, in.SoldOut, in.IgnoreQuota = nil, nil, r.IntN(6) == 0
		seen := map[quotaKey]bool{}
		for i := range offers {
			o := &offers[i]
			fam, unit, per, ok := pricing.QuotaScope(o)
			k := quotaKey{o.Provider, o.Region, fam, o.Purchase}
			if ok && !seen[k] {
				seen[k] = true
				if lim := r.IntN(10); lim < 6 {
					limit := []float64{0, per - 1, per, 4 * per, float64(lim)}[lim%5]
					in.Quotas = append(in.Quotas, pricing.Quota{Provider: o.Provider, Region: o.Region, Code: "Q-" + fam, Family: fam,
						Purchase: o.Purchase, Unit: unit, Limit: max(limit, 0), Usage: float64(r.IntN(2)), UsageKnown: r.IntN(2) == 0})
				}
			}
			if r.IntN(8) == 0 {
				if in.SoldOut == nil {
					in.SoldOut = map[pricing.Key]bool{}
				}
				in.SoldOut[o.Key()] = true
			}
		}
	}
	planAnswersAsFullScan(t, r, 40, gen, func(o pricing.Offer) string { return fmt.Sprint(o.Shape()) }, decorate)
}
