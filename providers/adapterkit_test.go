package providers

import (
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

func TestGPUFromName(t *testing.T) {
	for _, tt := range []struct {
		name    string
		mem     float64
		model   string
		wantMem float64
		ok      bool
	}{
		{"H100_SXM5_80GB", 0, "H100", 80, true}, // Fluidstack: memory from the name
		{"RTX_A6000_48GB", 0, "A6000", 48, true},
		{"nvidia_h100", 80, "H100", 80, true},        // DigitalOcean: stated memory
		{"amd_mi300x", 0, "MI300X", 192, true},       // catalog memory
		{"H100 pcie", 80, "H100-PCIE", 80, true},     // Shadeform: form factor decides
		{"H100_80GB PCIe", 0, "H100-PCIE", 80, true}, // Prime Intellect
		{"RTX 3080", 10, "RTX 3080", 10, false},      // unknown: kept, stated memory kept
		{"X900", 0, "X900", 0, false},                // unknown, no memory anywhere
	} {
		model, mem, ok := GPUFromName(tt.name, tt.mem)
		if model != tt.model || mem != tt.wantMem || ok != tt.ok {
			t.Errorf("GPUFromName(%q, %v) = %q, %v, %v; want %q, %v, %v", tt.name, tt.mem, model, mem, ok, tt.model, tt.wantMem, tt.ok)
		}
	}
}

func TestFinish(t *testing.T) {
	good := pricing.Offer{Provider: "x", Region: "r", InstanceType: "a", GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
		Purchase: pricing.OnDemand, PriceUSDHr: 2, Currency: "USD", Source: pricing.SourceAPI}
	bad := good
	bad.InstanceType, bad.PriceUSDHr = "b", 0
	if snap, err := Finish("x", &Snapshot{}, []pricing.Offer{good, bad}, 2); err != nil || len(snap.Offers) != 1 || len(snap.Warnings) != 1 {
		t.Errorf("Finish(good, bad) = %+v, %v; want the good one and a warning", snap, err)
	}
	for _, tt := range []struct {
		offers []pricing.Offer
		listed int
		want   string
	}{
		{nil, 0, "x: the API listed no GPU offers"},
		{nil, 3, "x: no valid offers among 3 listed (none in the configured regions)"},
		{[]pricing.Offer{bad}, 1, "x: no valid offers among 1 listed (see warnings: x: b skipped"},
	} {
		_, err := Finish("x", &Snapshot{}, tt.offers, tt.listed)
		if err == nil || !strings.Contains(err.Error(), tt.want) || pricing.ErrorCode(err) != pricing.Unavailable {
			t.Errorf("Finish(%d offers, %d listed) = %v; want %q", len(tt.offers), tt.listed, err, tt.want)
		}
	}
}

func TestNeeds(t *testing.T) {
	for _, tt := range []struct {
		n    Needs
		env  string
		want string
	}{
		{Needs{Kind: NeedsNothing}, "", "none"},
		{Needs{Kind: NeedsKey, KeyEnv: "LAMBDA_API_KEY"}, "", "api key $LAMBDA_API_KEY"},
		{Needs{Kind: NeedsKey, KeyEnv: "LAMBDA_API_KEY"}, "MY_KEY", "api key $MY_KEY"},
		{Needs{Kind: NeedsOptionalKey, KeyEnv: "RUNPOD_API_KEY"}, "", "optional key $RUNPOD_API_KEY"},
		{Needs{Kind: NeedsAccount, Where: "the AWS credential chain"}, "IGNORED", "account (the AWS credential chain)"},
		{Needs{Kind: NeedsFiles, Where: "[providers.static] files"}, "", "files"},
	} {
		if got := tt.n.WithKeyEnv(tt.env).String(); got != tt.want {
			t.Errorf("%+v with %q = %q, want %q", tt.n, tt.env, got, tt.want)
		}
	}
}
