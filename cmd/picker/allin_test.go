package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// awsAdvisorFixture is the aws adapter's EXACT Spot Instance Advisor excerpt, read as the
// adapter reads it: each Linux type's savings percent and band index in each region.
type awsAdvisorFixture struct {
	Ranges []struct {
		Index int     `json:"index"`
		Label string  `json:"label"`
		Max   float64 `json:"max"`
	} `json:"ranges"`
	SpotAdvisor map[string]map[string]map[string]struct {
		S int `json:"s"`
		R int `json:"r"`
	} `json:"spot_advisor"`
}

// spotAccount is a store like a refreshed AWS account's: on-demand and spot offers of the
// Advisor excerpt's six GPU types in us-east-1 (on-demand at AWS's us-east-1 list prices
// as of 2025; spot at the Advisor's own savings percent off them), the Advisor's bands
// for those types and the gp3 price, each written through the store's own API.
func spotAccount(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "providers", "aws", "testdata", "spot_advisor_data_excerpt.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx awsAdvisorFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	type spec struct {
		gpu           string
		count, mem    float64
		vcpus, ram    float64
		onDemandUSDHr float64
	}
	specs := map[string]spec{
		"g4dn.xlarge":  {"T4", 1, 16, 4, 16, 0.526},
		"g5.xlarge":    {"A10G", 1, 24, 4, 16, 1.006},
		"g6.xlarge":    {"L4", 1, 24, 4, 16, 0.8048},
		"g6e.xlarge":   {"L40S", 1, 48, 4, 32, 1.861},
		"p4d.24xlarge": {"A100", 8, 40, 96, 1152, 32.7726},
		"p5.48xlarge":  {"H100", 8, 80, 192, 2048, 55.04},
	}
	var offers []pricing.Offer
	var bands []pricing.SpotBand
	lo := map[int]float64{}
	prev := 0.0
	for _, r := range fx.Ranges {
		lo[r.Index] = prev
		prev = r.Max
	}
	at := fixedNow.Add(-2 * 3600e9)
	for typ, a := range fx.SpotAdvisor["us-east-1"]["Linux"] {
		s, ok := specs[typ]
		if !ok {
			t.Fatalf("no spec for %s", typ)
		}
		o := pricing.Offer{Provider: "aws", Region: "us-east-1", InstanceType: typ, GPUModel: s.gpu, GPUCount: s.count, GPUMemGiB: s.mem,
			VCPUs: s.vcpus, RAMGiB: s.ram, Purchase: pricing.OnDemand, PriceUSDHr: s.onDemandUSDHr, Currency: "USD", ObservedAt: at, Source: pricing.SourceAPI}
		sp := o
		sp.Purchase, sp.Zone, sp.PriceUSDHr = pricing.Spot, "us-east-1a", math.Round(s.onDemandUSDHr*(100-float64(a.S))/100*1e4)/1e4
		offers = append(offers, o, sp)
		r := fx.Ranges[a.R]
		bands = append(bands, pricing.SpotBand{Provider: "aws", Region: "us-east-1", InstanceType: typ, LowPct: lo[a.R], HighPct: r.Max,
			PeriodHours: pricing.HoursPerMonth, Label: r.Label, Source: "AWS Spot Instance Advisor", ObservedAt: at})
	}
	db := tempDB(t)
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.WriteMarket(ctx, "aws", store.MarketRead{Regions: []string{"us-east-1"}, At: at, Spot: bands,
		Storage: []pricing.StoragePrice{{Provider: "aws", Region: "us-east-1", Product: "gp3", USDPerGiBMonth: 0.08, Source: "AWS Price List GetProducts (EBS gp3, GB-Mo)", ObservedAt: at}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteSnapshot(ctx, "aws", store.WriteInput{Offers: offers, Regions: []string{"us-east-1"}, Finished: at}); err != nil {
		t.Fatal(err)
	}
	return db
}

// recommendFit is the part of a recommended offer this test reads.
type recommendFit struct {
	InstanceType string   `json:"instance_type"`
	Purchase     string   `json:"purchase"`
	PriceUSDHr   float64  `json:"price_usd_hr"`
	EstHours     *float64 `json:"est_hours"`
	SetupHours   *float64 `json:"setup_hours"`
	EstCostUSD   *float64 `json:"est_cost_usd"`
	Bill         *struct {
		ComputeUSD float64 `json:"compute_usd"`
		RestartUSD float64 `json:"restart_usd"`
		DiskUSD    float64 `json:"disk_usd"`
		DiskSource string  `json:"disk_source"`
		EgressUSD  float64 `json:"egress_usd"`
	} `json:"bill"`
	SpotRisk *struct {
		Band          string  `json:"band"`
		Default       bool    `json:"default"`
		MTBIHours     float64 `json:"mtbi_hours"`
		ExpectedHours float64 `json:"expected_hours"`
	} `json:"spot_risk"`
}

// TestRecommendSpotAndBillFromStore: over a store with the Advisor's bands and the gp3
// price, `picker recommend --purchase any` prices every spot offer by its expected cost at
// its type's band (the Advisor's, not a default), shows the disk at the stored price and
// the egress, in JSON and under the table, and states how spot compares. With
// --spot-mtbi 3h the restarts cost real money and the ranking changes. The figures are
// logged (go test -v) for the closing note, with the uninterrupted,
// instance-hours-only cost the ranking used before.
func TestRecommendSpotAndBillFromStore(t *testing.T) {
	db := spotAccount(t)
	jobs := []struct {
		name string
		args []string
	}{
		{"8B LoRA", []string{"--model", "llama-3.1-8b", "--task", "lora", "--tokens", "3e8", "--dataset-gb", "20"}},
		{"70B QLoRA", []string{"--model", "llama-3.1-70b", "--task", "qlora", "--tokens", "5e7", "--dataset-gb", "20"}},
		{"70B serving", []string{"--model", "llama-3.1-70b", "--task", "inference", "--requests", "20000", "--prompt-tokens", "1000", "--output-tokens", "500"}},
	}
	for _, j := range jobs {
		for _, extra := range [][]string{nil, {"--spot-mtbi", "3h"}} {
			args := append(append([]string{"recommend"}, j.args...), extra...)
			args = append(args, "--purchase", "any", "--top", "12", "--by-region")
			r := runCLI(t, db, false, append(args, "-o", "json")...)
			if r.code != 0 {
				t.Fatalf("%s %v: exit %d: %s", j.name, extra, r.code, r.stderr)
			}
			var out struct {
				Offers     []recommendFit `json:"offers"`
				SpotSaving *struct {
					Statement string `json:"statement"`
				} `json:"spot_saving"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Offers) == 0 {
				t.Fatalf("%s: nothing fits", j.name)
			}
			before, beforeAt := math.Inf(1), ""
			for _, f := range out.Offers {
				if f.Bill == nil || f.EstCostUSD == nil {
					t.Fatalf("%s: %s %s has no bill", j.name, f.InstanceType, f.Purchase)
				}
				if got := f.Bill.ComputeUSD + f.Bill.DiskUSD + f.Bill.EgressUSD; math.Abs(got-*f.EstCostUSD) > 0.002 {
					t.Errorf("%s: %s job $%v is not compute + disk + egress = %v", j.name, f.InstanceType, *f.EstCostUSD, got)
				}
				if f.Bill.DiskUSD <= 0 || !strings.Contains(f.Bill.DiskSource, "GetProducts") {
					t.Errorf("%s: %s disk $%v from %q; want the stored gp3 price", j.name, f.InstanceType, f.Bill.DiskUSD, f.Bill.DiskSource)
				}
				if f.Purchase == "spot" && (f.SpotRisk == nil || (extra == nil && (f.SpotRisk.Default || f.SpotRisk.Band == ""))) {
					t.Errorf("%s: spot %s without its Advisor band: %+v", j.name, f.InstanceType, f.SpotRisk)
				}
				// What the ranking used before issue 24: setup plus the uninterrupted run,
				// billed per second (AWS), times the price; nothing else.
				old := (*f.EstHours + *f.SetupHours) * f.PriceUSDHr
				if old < before {
					before, beforeAt = old, f.InstanceType+" "+f.Purchase
				}
			}
			top := out.Offers[0]
			restarts := 0.0
			if top.SpotRisk != nil {
				restarts = top.Bill.RestartUSD
			}
			statement := ""
			if out.SpotSaving != nil {
				statement = out.SpotSaving.Statement
			}
			t.Logf("%s %v: before: %s $%.2f; after: %s %s $%.2f (compute %.2f, restarts %.2f, disk %.4f, egress %.4f); %s",
				j.name, extra, beforeAt, before, top.InstanceType, top.Purchase, *top.EstCostUSD, top.Bill.ComputeUSD, restarts, top.Bill.DiskUSD, top.Bill.EgressUSD, statement)
			if extra != nil && top.Purchase == "spot" && top.SpotRisk.ExpectedHours <= *top.EstHours {
				t.Errorf("%s with --spot-mtbi 3h: expected %v h for a %v h run", j.name, top.SpotRisk.ExpectedHours, *top.EstHours)
			}
			table := runCLI(t, db, false, args...)
			if !strings.Contains(table.stdout, "job $ of ") || !strings.Contains(table.stdout, "+ disk ") || !strings.Contains(table.stdout, "+ egress ") || !strings.Contains(table.stdout, "note: aws bills EBS volumes") {
				t.Errorf("%s: the table's answer does not itemise the bill:\n%s", j.name, table.stdout)
			}
		}
	}
}

// TestProvidersShowsMarketData: `picker providers` says how many spot bands and storage
// prices a provider has stored and how old its newest good read is, in the table's
// answer and in JSON.
func TestProvidersShowsMarketData(t *testing.T) {
	db := spotAccount(t)
	r := runCLI(t, db, false, "providers")
	if r.code != 0 || !strings.Contains(r.stdout, "spot/storage: aws: 6 spot bands, 1 storage prices, read 2 h ago") {
		t.Errorf("providers: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, db, false, "providers", "-o", "json")
	var rows []struct {
		Name   string `json:"name"`
		Market *struct {
			SpotBands     int    `json:"spot_bands"`
			StoragePrices int    `json:"storage_prices"`
			Age           string `json:"age"`
		} `json:"spot_storage"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	for _, row := range rows {
		if row.Name == "aws" && (row.Market == nil || row.Market.SpotBands != 6 || row.Market.StoragePrices != 1 || row.Market.Age != "2 h") {
			t.Errorf("aws row %+v", row.Market)
		}
		if row.Name != "aws" && row.Market != nil {
			t.Errorf("%s has market data %+v", row.Name, row.Market)
		}
	}
}
