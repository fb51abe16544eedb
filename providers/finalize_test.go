package providers

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

func TestFinalize(t *testing.T) {
	now := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	good := func(typ string, price float64) pricing.Offer {
		return pricing.Offer{
			Provider: "x", Region: "r", InstanceType: typ, GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
			Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD", ObservedAt: now, Source: pricing.SourceAPI,
		}
	}
	bad := good("bad", 1)
	bad.PriceUSDHr = -1 // Validate refuses a negative price
	in := []pricing.Offer{good("a", 1), bad, good("b", 2), good("a", 3)}
	kept, warns := Finalize("x", in)
	if len(kept) != 2 || kept[0].InstanceType != "a" || kept[0].PriceUSDHr != 1 || kept[1].InstanceType != "b" {
		t.Errorf("kept %+v, want a (the first, $1) then b", kept)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "x: bad skipped") || !strings.Contains(warns[1], "listed twice") {
		t.Errorf("warnings %q, want one for the invalid offer and one for the duplicate", warns)
	}
	if in[1].InstanceType != "bad" {
		t.Error("Finalize changed its input")
	}
}

// Issue 18, case 6: non-finite or absurd numbers are dropped at the one validate step,
// with the offer named, so they never reach the store or a recommendation.
func TestFinalizeRejectsAbsurdNumbers(t *testing.T) {
	now := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	base := pricing.Offer{Provider: "x", Region: "r", InstanceType: "ok", GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
		Purchase: pricing.OnDemand, PriceUSDHr: 2, Currency: "USD", ObservedAt: now, Source: pricing.SourceAPI}
	inf, nan := math.Inf(1), math.NaN()
	for _, tt := range []struct {
		name, want string
		mod        func(*pricing.Offer)
	}{
		{"memory inf", "gpu memory", func(o *pricing.Offer) { o.GPUMemGiB = inf }},
		{"memory 1e308", "gpu memory", func(o *pricing.Offer) { o.GPUMemGiB = 1e308 }},
		{"memory 513", "gpu memory", func(o *pricing.Offer) { o.GPUMemGiB = 513 }},
		{"memory 0.5", "gpu memory", func(o *pricing.Offer) { o.GPUMemGiB = 0.5 }},
		{"price NaN", "price", func(o *pricing.Offer) { o.PriceUSDHr = nan }},
		{"price inf", "price", func(o *pricing.Offer) { o.PriceUSDHr = inf }},
		{"price per GPU over 10000", "price", func(o *pricing.Offer) { o.GPUCount = 2; o.PriceUSDHr = 20000.02 }},
		{"count 1/16", "gpu count", func(o *pricing.Offer) { o.GPUCount = 1.0 / 16 }},
		{"count 65", "gpu count", func(o *pricing.Offer) { o.GPUCount = 65 }},
		{"vcpus inf", "vcpus", func(o *pricing.Offer) { o.VCPUs = inf }},
		{"ram negative", "ram", func(o *pricing.Offer) { o.RAMGiB = -1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := base
			bad.InstanceType = "bad-one"
			tt.mod(&bad)
			kept, warns := Finalize("x", []pricing.Offer{base, bad})
			if len(kept) != 1 || kept[0].InstanceType != "ok" {
				t.Errorf("kept %d offers, want only the good one", len(kept))
			}
			if len(warns) != 1 || !strings.Contains(warns[0], "bad-one") || !strings.Contains(warns[0], tt.want) {
				t.Errorf("warnings %q, want one naming bad-one and %q", warns, tt.want)
			}
		})
	}
	// The bounds themselves are accepted: 1/8 of a GPU, 64 GPUs, 1 and 512 GiB, $10,000 per GPU-hour.
	edge := []pricing.Offer{base, base, base, base}
	edge[0].InstanceType, edge[0].GPUCount = "eighth", 0.125
	edge[1].InstanceType, edge[1].GPUCount, edge[1].PriceUSDHr = "64", 64, 640000
	edge[2].InstanceType, edge[2].GPUMemGiB = "1gib", 1
	edge[3].InstanceType, edge[3].GPUMemGiB = "512gib", 512
	if kept, warns := Finalize("x", edge); len(kept) != 4 {
		t.Errorf("bounds refused: %q", warns)
	}
}
