package pricing

import (
	"strings"
	"testing"
	"time"
)

const csvHeader = "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date\n"

func TestParseOffersCSV(t *testing.T) {
	def := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	in := csvHeader +
		"aws,us-east-1,,p4d.24xlarge,A100,8,40,96,1152,21.957642,,2026-07-20\n" +
		"gcp,us-central1,us-central1-a,a2-highgpu-1g,nvidia-tesla-a100,1,40,12,85,3.67,1.1,\n" +
		"verda,FIN-03,,2B200.60V,B200,2,180,60,368,,3.423,\n" +
		"aws,us-east-1,,g6f.large,L4,0.125,2.79,2,8,0.2,,2026-07-20\n" +
		"lab,onprem,,box1,Mystery GPU 9000,4,48,64,512,1.5,,\n"
	got, err := ParseOffersCSV(strings.NewReader(in), "prices.csv", def)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		key      string
		model    string
		price    float64
		observed time.Time
	}
	want := []row{
		{"aws/us-east-1/p4d.24xlarge/on-demand", "A100", 21.957642, time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC)},
		{"gcp/us-central1/us-central1-a/a2-highgpu-1g/on-demand", "A100", 3.67, def},
		{"gcp/us-central1/us-central1-a/a2-highgpu-1g/spot", "A100", 1.1, def},
		{"verda/FIN-03/2B200.60V/spot", "B200", 3.423, def},
		{"aws/us-east-1/g6f.large/on-demand", "L4", 0.2, time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC)},
		{"lab/onprem/box1/on-demand", "Mystery GPU 9000", 1.5, def},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d offers, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Key().String() != w.key || g.GPUModel != w.model || g.PriceUSDHr != w.price || !g.ObservedAt.Equal(w.observed) {
			t.Errorf("offer %d: got %s %s %v %v, want %s %s %v %v", i, g.Key(), g.GPUModel, g.PriceUSDHr, g.ObservedAt, w.key, w.model, w.price, w.observed)
		}
		if g.Currency != "USD" || g.Source != "" {
			t.Errorf("offer %d: currency %q source %q, want USD and empty", i, g.Currency, g.Source)
		}
	}
	if !got[4].Fractional() {
		t.Errorf("g6f.large should be fractional")
	}
	if u := UnknownGPUs(got); len(u) != 1 || u[0] != "Mystery GPU 9000" {
		t.Errorf("UnknownGPUs = %q, want the one raw name the file has", u)
	}
}

func TestParseOffersCSVColumnsByName(t *testing.T) {
	in := "instance_type,provider,gpu_model,gpu_count,gpu_mem_gib,price_on_demand_usd_hr\n" +
		"box1,lab,H100,8,80,20\n"
	got, err := ParseOffersCSV(strings.NewReader(in), "mine.csv", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].InstanceType != "box1" || got[0].GPUModel != "H100" || got[0].PriceUSDHr != 20 {
		t.Fatalf("got %+v", got)
	}
}

func TestParseOffersCSVErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"not a number", csvHeader + "aws,r,,t,A100,8,40,96,1152,21,,\naws,r,,u,A100,8,40,96,1152,abc,,\n",
			`prices.csv:3: price_on_demand_usd_hr "abc": not a number`},
		{"zero price", csvHeader + "aws,r,,t,A100,8,40,96,1152,0,,\n", `prices.csv:2: price_on_demand_usd_hr "0": must be positive`},
		{"negative spot", csvHeader + "aws,r,,t,A100,8,40,96,1152,1,-2,\n", `prices.csv:2: price_spot_usd_hr "-2": must be positive`},
		{"no price", csvHeader + "aws,r,,t,A100,8,40,96,1152,,,\n", `prices.csv:2: no price`},
		{"bad count", csvHeader + "aws,r,,t,A100,x,40,96,1152,1,,\n", `prices.csv:2: gpu_count "x": not a number`},
		{"zero count", csvHeader + "aws,r,,t,A100,0,40,96,1152,1,,\n", `prices.csv:2: gpu_count "0": must be positive`},
		{"empty memory", csvHeader + "aws,r,,t,A100,1,,96,1152,1,,\n", `prices.csv:2: gpu_mem_gib is empty`},
		{"bad date", csvHeader + "aws,r,,t,A100,1,40,96,1152,1,,July\n", `prices.csv:2: source_date "July": not a date`},
		{"no provider", csvHeader + ",r,,t,A100,1,40,96,1152,1,,\n", `prices.csv:2: provider is empty`},
		{"no model", csvHeader + "aws,r,,t,,1,40,96,1152,1,,\n", `prices.csv:2: gpu_model is empty`},
		{"duplicate", csvHeader + "aws,r,,t,A100,1,40,96,1152,1,,\naws,r,,t,A100,1,40,96,1152,2,,\n", `prices.csv:3: duplicate offer aws/r/t/on-demand (first on line 2)`},
		{"short row", csvHeader + "aws,r,,t\n", `prices.csv:2: column`},
		{"unknown column", "provider,instance_type,gpu_model,gpu_count,gpu_mem_gib,price_ondemand\n", `prices.csv:1: unknown column "price_ondemand"`},
		{"missing column", "provider,instance_type,gpu_model,gpu_count,price_spot_usd_hr\n", `prices.csv:1: missing column "gpu_mem_gib"`},
		{"no price column", "provider,instance_type,gpu_model,gpu_count,gpu_mem_gib\n", `prices.csv:1: missing a price column`},
		{"empty", "", `prices.csv: empty file`},
		{"header only", csvHeader, `prices.csv: no offers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOffersCSV(strings.NewReader(tt.in), "prices.csv", time.Time{})
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %q, want prefix %q", err, tt.want)
			}
			if c := ErrorCode(err); c != Invalid {
				t.Errorf("code %q, want %q", c, Invalid)
			}
		})
	}
}
