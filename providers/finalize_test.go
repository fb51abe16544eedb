package providers

import (
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
