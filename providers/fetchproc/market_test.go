package fetchproc

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// TestMarketCrossesTheBoundary: a fetch's spot bands and storage prices reach picker as
// the child read them, in the summary frame, failures as coded errors; a snapshot
// without any reads back without any.
func TestMarketCrossesTheBoundary(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := &providers.MarketReport{Regions: []string{"us-east-1"}, Requests: 23,
		Spot: []pricing.SpotBand{{Provider: "aws", Region: "us-east-1", InstanceType: "g5.xlarge", LowPct: 22, HighPct: 100, PeriodHours: pricing.HoursPerMonth,
			Label: ">20%", Score: 9, Source: "advisor", ObservedAt: at}},
		Storage: []pricing.StoragePrice{{Provider: "azure", Region: "eastus", Product: "P10 LRS", SizeGiB: 128, USDPerMonth: 19.71, Source: "retail", ObservedAt: at}},
		Failed:  map[string]error{"us-west-2 ebs": pricing.Errorf(pricing.Unavailable, "no gp3 price")}}
	for _, snap := range []*providers.Snapshot{{Regions: []string{"us-east-1"}, Market: m}, {Regions: []string{"us-east-1"}}} {
		var buf bytes.Buffer
		if err := newFrameWriter(&buf).write(frame{Summary: summarize(snap)}); err != nil {
			t.Fatal(err)
		}
		f, err := newFrameReader(&buf).read()
		if err != nil || f.Summary == nil {
			t.Fatalf("read %+v, %v", f, err)
		}
		got := f.Summary.snapshot().Market
		if snap.Market == nil {
			if got != nil {
				t.Errorf("no market sent, %+v read", got)
			}
			continue
		}
		if !reflect.DeepEqual(got.Spot, m.Spot) || !reflect.DeepEqual(got.Storage, m.Storage) || got.Requests != 23 || !reflect.DeepEqual(got.Regions, m.Regions) {
			t.Errorf("read %+v\nwant %+v", got, m)
		}
		var pe *pricing.Error
		if e := got.Failed["us-west-2 ebs"]; !errors.As(e, &pe) || pe.Code != pricing.Unavailable || pe.Message != m.Failed["us-west-2 ebs"].Error() {
			t.Errorf("failure %v; want the child's, coded Unavailable", e)
		}
	}
}
