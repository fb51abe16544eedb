package providers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

func plainOffer() pricing.Offer {
	return pricing.Offer{Provider: "static", Region: "r1", InstanceType: "gpu.1", GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
		Purchase: pricing.OnDemand, PriceUSDHr: 2, Currency: "USD", Source: pricing.SourceFile, ObservedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
}

// TestFinalizeHostileText: offers whose strings carry terminal escapes, C1 controls,
// bidi overrides, invalid UTF-8 or 100 KB are dropped with a warning that quotes them
// escaped and clipped; tiny prices and year-1 dates are dropped too (issue 30).
func TestFinalizeHostileText(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*pricing.Offer)
		want string
	}{
		{"osc title", func(o *pricing.Offer) { o.InstanceType = "gpu\x1b]0;pwned\x07" }, "control characters"},
		{"csi clear", func(o *pricing.Offer) { o.Region = "r\x1b[2J" }, "region"},
		{"c1 csi", func(o *pricing.Offer) { o.GPUModel = "H100\u009b2J" }, "gpu model"},
		{"bidi", func(o *pricing.Offer) { o.InstanceType = "gpu\u202e1" }, "control characters"},
		{"not utf-8", func(o *pricing.Offer) { o.Zone = "z\xff" }, "not UTF-8"},
		{"100 KB", func(o *pricing.Offer) { o.InstanceType = strings.Repeat("x", 100<<10) }, "over 256"},
		{"1e-300", func(o *pricing.Offer) { o.PriceUSDHr = 1e-300 }, "plausible floor"},
		{"year 1", func(o *pricing.Offer) { o.ObservedAt = time.Date(1, 6, 1, 0, 0, 0, 0, time.UTC) }, "before 2000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := plainOffer()
			tt.edit(&bad)
			good := plainOffer()
			good.InstanceType = "gpu.2"
			kept, warn := Finalize("static", []pricing.Offer{bad, good})
			if len(kept) != 1 || kept[0].InstanceType != "gpu.2" {
				t.Fatalf("kept %d offers; want only the good one", len(kept))
			}
			w := strings.Join(warn, "\n")
			if !strings.Contains(w, tt.want) {
				t.Errorf("warning %q lacks %q", w, tt.want)
			}
			if strings.ContainsAny(w, "\x1b\x07\u009b\u202e\xff") || len(w) > 1000 {
				t.Errorf("the warning is not terminal-safe or not short: %q", Clip(w, 200))
			}
		})
	}
}

// TestFinalizeUnknownGPUFlood: one answer listing thousands of distinct made-up GPU
// models keeps the first MaxUnknownGPUModels of them, catalog models all, and says how
// many offers it dropped in one warning (issue 30: 20,000 models were stored).
func TestFinalizeUnknownGPUFlood(t *testing.T) {
	var offers []pricing.Offer
	for i := range 5000 {
		o := plainOffer()
		o.InstanceType = fmt.Sprintf("t%d", i)
		o.GPUModel = fmt.Sprintf("FAKE-%d", i)
		offers = append(offers, o)
	}
	h := plainOffer()
	h.InstanceType = "real"
	offers = append(offers, h)
	kept, warn := Finalize("market", offers)
	models := map[string]bool{}
	for _, o := range kept {
		models[o.GPUModel] = true
	}
	if len(models) != MaxUnknownGPUModels+1 || !models["H100"] {
		t.Errorf("%d models kept; want %d unknown ones and H100", len(models), MaxUnknownGPUModels)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], fmt.Sprintf("%d offers skipped", 5000-MaxUnknownGPUModels)) {
		t.Errorf("warnings %q", warn)
	}
}
