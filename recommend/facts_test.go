package recommend

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// marketOffers makes a catalogue of about n offers where most are marketplace hosts,
// each its own instance type (Vast.ai's naming: count, GPU name, machine id), so every
// such offer is its own shape; the rest are cloud instance types with a cluster
// interconnect (interconnect.csv), repeated across regions. Host RAM takes a few sizes
// and vCPUs vary per host, prices are coarse (ties), and some GPU names say PCIe.
func marketOffers(t *testing.T, r *rand.Rand, n int) []pricing.Offer {
	t.Helper()
	ics, err := parseInterconnects(interconnectCSV)
	if err != nil {
		t.Fatal(err)
	}
	var clustered []Interconnect
	for _, ic := range ics {
		clustered = append(clustered, ic)
	}
	slices.SortFunc(clustered, func(a, b Interconnect) int {
		return strings.Compare(a.Provider+a.InstanceType, b.Provider+b.InstanceType)
	})
	all := pricing.GPUs()
	var gpus []pricing.GPU // a dozen models, so sets hold several hosts each
	for k := 0; k < len(all); k += max(1, len(all)/12) {
		gpus = append(gpus, all[k])
	}
	seen := map[pricing.Key]bool{}
	var out []pricing.Offer
	for i := 0; len(out) < n; i++ {
		g := gpus[r.IntN(len(gpus))]
		count := []float64{0.5, 1, 1, 1, 2, 4, 8}[r.IntN(7)]
		if r.IntN(10) != 0 {
			count = max(1, count)
		}
		o := pricing.Offer{Provider: []string{"vast", "tensordock"}[r.IntN(2)], GPUModel: g.Model, GPUCount: count, GPUMemGiB: g.MemGB,
			VCPUs: float64(2 + r.IntN(120)), RAMGiB: []float64{64, 128, 512}[r.IntN(3)] * max(1, count/2),
			Purchase: []pricing.Purchase{pricing.OnDemand, pricing.Spot}[r.IntN(2)], Currency: "USD", Source: pricing.SourceAPI,
			Region: fmt.Sprintf("loc-%d", r.IntN(6))}
		o.InstanceType = fmt.Sprintf("%gx_%s_m%d", count, g.Model, i)
		if r.IntN(8) == 0 { // a cloud type with a cluster interconnect, in several regions
			ic := clustered[r.IntN(min(len(clustered), 6))]
			o.Provider, o.InstanceType, o.VCPUs, o.RAMGiB = ic.Provider, ic.InstanceType, 96, 1152
			o.Zone = o.Region + "a"
		}
		if r.IntN(20) == 0 {
			o.GPUModel, o.GPUMemGiB = "Mystery-GPU", 48
		}
		o.PriceUSDHr = float64(1+r.IntN(40)) / 4 * max(o.GPUCount, 0.25)
		o.ObservedAt = time.Date(2026, 11, 1+r.IntN(20), 0, 0, 0, 0, time.UTC)
		if !seen[o.Key()] {
			seen[o.Key()] = true
			out = append(out, o)
		}
	}
	return out
}

// factsOf names an offer's fit-fact set as the store groups them.
func factsOf(o pricing.Offer) string { return FactsKey(o.Shape()) }

// TestEvaluationDependsOnlyOnFacts guards the store's read by fit-fact set: offers with
// one FactsKey (another instance type of the same GPU link and interconnect, other
// vCPUs, another place and price) are judged alike.
func TestEvaluationDependsOnlyOnFacts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	offers := marketOffers(t, r, 500)
	var a, b []pricing.Offer
	for _, o := range offers {
		tw := o
		tw.InstanceType = "host-" + strings.ToUpper(o.InstanceType) + "-2" // the PCIe rule reads names without case
		tw.VCPUs = o.VCPUs*3 + 1
		tw.Region, tw.Zone, tw.Currency, tw.Source = "elsewhere", "elsewhere-b", "EUR", pricing.SourceFile
		tw.ObservedAt = o.ObservedAt.Add(-1000 * time.Hour)
		tw.PriceUSDHr *= 1.7
		if factsOf(tw) == factsOf(o) {
			a, b = append(a, o), append(b, tw)
		}
	}
	if len(a) < len(offers)*3/4 {
		t.Fatalf("only %d of %d twins share their offer's fit facts", len(a), len(offers))
	}
	for _, in := range randomInputs(t, r, 40) {
		in.Offers = append(slices.Clone(a), b...)
		_, ev, err := prepare(in)
		if err != nil {
			continue
		}
		for i := range a {
			x, okX := ev.evaluate(i)
			y, okY := ev.evaluate(len(a) + i)
			if okX != okY || (okX && (x.vk != y.vk || x.need != y.need || x.spare != y.spare || x.hours != y.hours || x.speed != y.speed)) {
				t.Fatalf("%s: offer %s and %s (one fit-fact set) judged differently: %v %+v / %v %+v",
					describe(in), a[i].Key(), b[i].Key(), okX, x, okY, y)
			}
		}
	}
	// The facts the key leaves out are not facts: another GPU link or interconnect is
	// another set.
	o := pricing.Offer{Provider: "vast", InstanceType: "1x_A100_m1", GPUModel: "A100", GPUCount: 1, GPUMemGiB: 40, RAMGiB: 64, Purchase: pricing.OnDemand}
	pcie := o
	pcie.InstanceType = "1x_A100_PCIE_m2"
	if factsOf(o) == factsOf(pcie) {
		t.Errorf("a PCIe instance type shares the SXM one's fit facts: %q", factsOf(o))
	}
}

// TestFactsPlanAnswersAsFullScan: on marketplace catalogues (every host its own shape),
// Recommend over what ShapePlan asks of the fit-fact sets (each set's cheapest, then
// the next ones it names) answers byte for byte as over every offer, and reads far
// fewer offers than there are.
// With hosts stating facts (CUDA ceilings too old for the stack and for Blackwell among
// them) the sets are also per CUDA class, as the store keeps them, and the old-cuda
// exclusions count as over every offer.
func TestFactsPlanAnswersAsFullScan(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	planAnswersAsFullScan(t, r, 25, func() []pricing.Offer { return marketOffers(t, r, 1000+r.IntN(2000)) }, factsOf)
	excluded := 0
	planAnswersAsFullScan(t, r, 4, func() []pricing.Offer { return withHosts(r, marketOffers(t, r, 8000+r.IntN(4000))) },
		func(o pricing.Offer) string { return factsOf(o) + fmt.Sprint(CUDAClass(o.Host.MaxCUDA)) },
		func(in *RecommendInput, offers []pricing.Offer) {
			in.Offers = offers
			if rec, err := Recommend(*in); err == nil && slices.ContainsFunc(rec.Excluded, func(x Exclusion) bool { return x.Code == ExclOldCUDA }) {
				excluded++
			}
		})
	if excluded < 8 {
		t.Errorf("only %d answers excluded old-CUDA hosts", excluded)
	}
}

// TestCUDAClassJudgesAsCeiling: a host's CUDA class is too old for a GPU exactly when
// its ceiling is, for every GPU of the catalogue and an unknown one, so offers of one
// class are judged alike.
func TestCUDAClassJudgesAsCeiling(t *testing.T) {
	gpus := append(pricing.GPUs(), pricing.GPU{Model: "Mystery-GPU"})
	for _, g := range gpus {
		_, known := pricing.LookupGPU(g.Model)
		c := &gpuCaps{known: known, spec: g}
		for v := -1.0; v <= 14; v += 0.05 {
			ceiling, class := &pricing.Offer{Host: pricing.Host{MaxCUDA: v}}, &pricing.Offer{Host: pricing.Host{MaxCUDA: CUDAClass(v)}}
			if cudaTooOld(ceiling, c) != cudaTooOld(class, c) {
				t.Fatalf("%s: CUDA %g too old %v, its class %g %v", g.Model, v, cudaTooOld(ceiling, c), CUDAClass(v), cudaTooOld(class, c))
			}
		}
	}
}

// withHosts gives most offers random host facts, as a marketplace states them: scores,
// CUDA ceilings from 11.8 (too old for any current PyTorch wheel) through 12.4 (too
// old for Blackwell) to 13.0, drivers, speeds, disks and verification.
func withHosts(r *rand.Rand, offers []pricing.Offer) []pricing.Offer {
	for i := range offers {
		if r.IntN(5) == 0 {
			continue // a host that states nothing
		}
		offers[i].Host = pricing.Host{Reliability: []float64{0, 0.8, 0.93, 0.99, 0.999}[r.IntN(5)],
			MaxCUDA: []float64{0, 11.8, 12.2, 12.4, 12.8, 13}[r.IntN(6)], Driver: []string{"", "535.183.01", "570.124.06"}[r.IntN(3)],
			NetUpMbps: float64(r.IntN(4) * 250), NetDownMbps: float64(r.IntN(4) * 800), DiskGB: float64(r.IntN(5) * 200),
			Verification: []string{"", pricing.HostVerified, pricing.HostUnverified}[r.IntN(3)]}
	}
	return offers
}
