package runpod

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// TestStock: lowestPrice's stock marks each offer: H100 SXM ("Low", 4 unreserved) is
// available at 1, 2 and 4 GPUs and sold out at 8; H200 (stockStatus null) is sold out;
// an answer without the stock fields (testdata/gpu_types.json) leaves every offer
// unknown.
func TestStock(t *testing.T) {
	b, err := os.ReadFile("testdata/gpu_types_stock.json")
	if err != nil {
		t.Fatal(err)
	}
	// The stock sample leaves out which clouds list the type; the adapter prices a cloud
	// only when its flag is true, so both are set (where its price is not null).
	var doc map[string]map[string][]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, g := range doc["data"]["gpuTypes"] {
		g["secureCloud"], g["communityCloud"] = g["securePrice"] != nil, g["communityPrice"] != nil
	}
	body, _ := json.Marshal(doc)
	snap, err := setup(t, &graphqlServer{body: string(body)}, Config{}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pricing.Availability{
		"1x_H100-SXM_SECURE": pricing.AvailableNow, "2x_H100-SXM_SECURE": pricing.AvailableNow,
		"4x_H100-SXM_SECURE": pricing.AvailableNow, "8x_H100-SXM_SECURE": pricing.SoldOut,
		"1x_H100-SXM_COMMUNITY": pricing.AvailableNow, "8x_H100-SXM_COMMUNITY": pricing.SoldOut,
		"1x_H200-SXM_SECURE": pricing.SoldOut, "8x_H200-SXM_SECURE": pricing.SoldOut,
	}
	seen := 0
	for _, o := range snap.Offers {
		if w, ok := want[o.InstanceType]; ok {
			seen++
			if o.Available != w {
				t.Errorf("%s %s: %v; want %v", o.InstanceType, o.Purchase, o.Available, w)
			}
		}
	}
	if seen < len(want) {
		t.Errorf("%d of the %d offers checked were listed: %d offers", seen, len(want), len(snap.Offers))
	}

	plain, err := setup(t, &graphqlServer{}, Config{}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range plain.Offers {
		if o.Available != pricing.AvailabilityUnknown {
			t.Errorf("%s: %v without stock fields; want unknown", o.InstanceType, o.Available)
		}
	}
}
