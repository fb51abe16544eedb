package pricing

import (
	"bytes"
	"testing"
	"time"
)

func TestWriteExportCSV(t *testing.T) {
	// A 1/8 slice of a 24 GiB L4 at $0.1 per hour: 3 GiB in all, so $0.8 per GPU-hour
	// and $0.1/3 per GiB-hour (6 decimals: 0.033333).
	o := Offer{Provider: "gcp", Region: "us-central1", InstanceType: "g2-slice", GPUModel: "L4", GPUCount: 0.125, GPUMemGiB: 24,
		VCPUs: 2, RAMGiB: 8.5, Purchase: OnDemand, PriceUSDHr: 0.1, Currency: "USD",
		ObservedAt: time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC), Source: SourceSnapshot}
	var b bytes.Buffer
	if err := WriteExportCSV(&b, []Offer{o}); err != nil {
		t.Fatal(err)
	}
	want := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,purchase,price_usd_hr,currency,observed_at,source," +
		"total_gpu_mem_gib,price_per_gpu_usd_hr,price_per_gib_usd_hr,fractional\n" +
		"gcp,us-central1,,g2-slice,L4,0.125,24,2,8.5,on-demand,0.1,USD,2026-08-01T00:00:00Z,snapshot,3,0.8,0.033333,true\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
