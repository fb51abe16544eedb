package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
)

// staticDB refreshes a static price file into a fresh database and returns its path and
// config, so recommend runs against a small, known catalogue (plus the snapshot).
func staticDB(t *testing.T, prices string) (db, cfg string) {
	t.Helper()
	dir := t.TempDir()
	pf := filepath.Join(dir, "mine.toml")
	if err := os.WriteFile(pf, []byte(prices), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[providers.static]\nfiles = [\""+pf+"\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(dir, "p.db")
	if r := runCLI(t, db, false, "--config", cfg, "refresh"); r.code != 0 {
		t.Fatalf("refresh: %d %s", r.code, r.stderr)
	}
	return db, cfg
}

const fixturePrices = `
[[offers]]
region = "us"
instance_type = "h100-box"
gpu_model = "H100"
gpu_count = 1
ram_gib = 200
price_usd_hr = 2.0
spot_price_usd_hr = 0.9
observed = "2026-11-29"

[[offers]]
region = "eu"
instance_type = "h100-box"
gpu_model = "H100"
gpu_count = 1
ram_gib = 200
price_usd_hr = 1.5
observed = "2026-11-29"

[[offers]]
region = "us"
instance_type = "t4-box"
gpu_model = "T4"
gpu_count = 1
ram_gib = 32
price_usd_hr = 0.3
observed = "2026-11-29"
`

type recJSON struct {
	Estimate struct {
		DeviceTotalGiB float64 `json:"device_total_gib"`
	} `json:"estimate"`
	Offers []struct {
		Provider       string   `json:"provider"`
		Region         string   `json:"region"`
		InstanceType   string   `json:"instance_type"`
		Purchase       string   `json:"purchase"`
		PriceUSDHr     float64  `json:"price_usd_hr"`
		NeedPerGPUGiB  float64  `json:"need_per_gpu_gib"`
		SparePerGPUGiB float64  `json:"spare_per_gpu_gib"`
		ObservedAt     string   `json:"observed_at"`
		Source         string   `json:"source"`
		EstHours       *float64 `json:"est_hours"`
		EstCostUSD     *float64 `json:"est_cost_usd"`
	} `json:"offers"`
	Ladder   []map[string]any `json:"ladder"`
	Warnings []string         `json:"warnings"`
}

func TestRecommendFiltersAndPurchase(t *testing.T) {
	db, cfg := staticDB(t, fixturePrices)
	// Restricted to the H100 rows of the fixture, the purchase and region filters decide.
	tests := []struct {
		name     string
		args     []string
		wantType string
		wantReg  string
		wantBuy  string
		wantCost float64
	}{
		{"on-demand by default: eu is cheaper", nil, "h100-box", "eu", "on-demand", 1.5},
		{"spot", []string{"--purchase", "spot"}, "h100-box", "us", "spot", 0.9},
		{"any takes the cheapest of both", []string{"--purchase", "any"}, "h100-box", "us", "spot", 0.9},
		{"region filter", []string{"--region", "us"}, "h100-box", "us", "on-demand", 2.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--config", cfg, "recommend", "--model", "llama-2-7b", "--task", "qlora", "--seq-len", "512", "--provider", "static", "--gpu-model", "H100", "-o", "json"}, tt.args...)
			r := runCLI(t, db, false, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var out recJSON
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Offers) == 0 {
				t.Fatal("no offers")
			}
			o := out.Offers[0]
			if o.Provider != "static" || o.InstanceType != tt.wantType || o.Region != tt.wantReg || o.Purchase != tt.wantBuy || o.PriceUSDHr != tt.wantCost {
				t.Errorf("best = %+v; want %s %s %s at %v", o, tt.wantType, tt.wantReg, tt.wantBuy, tt.wantCost)
			}
			if o.NeedPerGPUGiB <= out.Estimate.DeviceTotalGiB || o.SparePerGPUGiB <= 0 || o.ObservedAt != "2026-11-29T00:00:00Z" || o.Source != "file" {
				t.Errorf("offer fields = %+v (estimate %v GiB)", o, out.Estimate.DeviceTotalGiB)
			}
		})
	}
}

func TestRecommendNoFitExit3(t *testing.T) {
	db, cfg := staticDB(t, fixturePrices)
	r := runCLI(t, db, false, "--config", cfg, "recommend", "--model", "llama-2-70b", "--task", "full-ft", "--provider", "static")
	if r.code != 3 {
		t.Fatalf("exit %d; want 3 (stderr %s)", r.code, r.stderr)
	}
	for _, want := range []string{"memory: needs", "GiB per GPU", "GiB usable per GPU"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
	// JSON still goes to stdout, with empty offers and the nearest miss.
	j := runCLI(t, db, false, "--config", cfg, "recommend", "--model", "llama-2-70b", "--task", "full-ft", "--provider", "static", "-o", "json")
	var out map[string]any
	if err := json.Unmarshal([]byte(j.stdout), &out); err != nil || j.code != 3 {
		t.Fatalf("exit %d, %v", j.code, err)
	}
	if offers, _ := out["offers"].([]any); len(offers) != 0 || out["nearest_miss"] == "" {
		t.Errorf("json = %v", out)
	}
}

func TestRecommendTableCSVAndSnapshotWarning(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, true, "recommend", "--model", "llama-2-7b", "--task", "qlora", "--top", "3")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasPrefix(lines[0], "llama-2-7b, qlora") || !strings.Contains(lines[0], "GiB per GPU") {
		t.Errorf("summary line = %q", lines[0])
	}
	// Ranked by the cost of the work: the first price column is $/M TOK, $/HR beside it;
	// QLoRA with checkpointing already runs where a million tokens cost least, so no rung
	// saves, and the answer says so. Per hour, LoRA over a bf16 base has a ladder.
	if h := lines[3]; !regexp.MustCompile(`PURCHASE +\$/M TOK +\$/HR `).MatchString(h) {
		t.Errorf("table header %q: want the ranked $/M TOK first, $/HR beside it", h)
	}
	if !strings.Contains(r.stdout, "savings ladder: none of") || strings.Contains(r.stdout, "CHANGE") {
		t.Errorf("a ladder although the job is on the cheapest offer per token:\n%s", r.stdout)
	}
	l := runCLI(t, db, true, "recommend", "--model", "llama-2-7b", "--task", "lora", "--top", "3", "--rank", "hourly")
	if !strings.Contains(l.stdout, "savings ladder") || !strings.Contains(l.stdout, "--task qlora") || !strings.Contains(l.stdout, "plan (the cheapest combination)") {
		t.Errorf("lora table lacks the ladder or the plan:\n%s", l.stdout)
	}
	if !strings.Contains(r.stderr, "embedded snapshot") || !strings.Contains(r.stderr, "picker refresh") {
		t.Errorf("stderr lacks the snapshot warning: %q", r.stderr)
	}
	c := runCLI(t, db, false, "recommend", "--model", "llama-2-7b", "--task", "qlora", "--top", "3", "-o", "csv", "--tokens", "1e8")
	recs, err := csv.NewReader(strings.NewReader(c.stdout)).ReadAll()
	if err != nil || len(recs) != 4 {
		t.Fatalf("csv rows = %d (%v); want header + 3", len(recs), err)
	}
	if strings.Join(recs[0], ",") != strings.Join(fitColumns, ",") {
		t.Errorf("csv header = %v", recs[0])
	}
	if recs[1][slices.Index(fitColumns, "est_cost_usd")] == "" {
		t.Errorf("est_cost_usd empty with --tokens: %v", recs[1])
	}
	// The cost of a million trained tokens is the price over the tokens an hour trains.
	price, _ := strconv.ParseFloat(recs[1][slices.Index(fitColumns, "price_usd_hr")], 64)
	tps, _ := strconv.ParseFloat(recs[1][slices.Index(fitColumns, "tokens_per_s")], 64)
	perM, err := strconv.ParseFloat(recs[1][slices.Index(fitColumns, "usd_per_m_tokens")], 64)
	if want := price / (tps * 3600) * 1e6; err != nil || math.Abs(perM-want) > 1e-3*want+1e-6 {
		t.Errorf("usd_per_m_tokens %q; want %.6f from price %v and %v tokens/s", recs[1][slices.Index(fitColumns, "usd_per_m_tokens")], want, price, tps)
	}
}

func TestRecommendBadInput(t *testing.T) {
	db := tempDB(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"recommend", "--model", "llama-9-7b"}, "llama"},
		{[]string{"recommend", "--model", "llama-2-7b", "--batch", "0"}, "batch"},
		{[]string{"recommend", "--model", "llama-2-7b", "--image-count", "10"}, "--image-count"},
		{[]string{"recommend", "--model", "flux.1-dev", "--tokens", "1e6"}, "--image-count"},
		{[]string{"recommend", "--model", "llama-2-7b", "--steps", "20"}, "--steps"},
		{[]string{"recommend", "--model", "flux.1-dev", "--steps", "0"}, "steps"},
		{[]string{"recommend", "--model", "llama-2-7b", "--grad-accum", "4"}, "--grad-accum"},
		{[]string{"recommend", "--model", "llama-2-7b", "--deadline", "2h"}, "--tokens"},
		{[]string{"recommend", "--model", "llama-2-7b", "--rank", "fastest"}, "fastest"},
		{[]string{"recommend", "--model", "llama-2-7b", "--tokens", "lots"}, "lots"},
		{[]string{"recommend", "--model", "llama-2-7b", "--headroom", "-5"}, "headroom"},
		{[]string{"recommend", "--model", "llama-2-7b", "--gpu-model", "Z100"}, "Z100"},
		{[]string{"estimate", "--model", "llama-2-7b", "--task", "inference", "--shard", "zero3", "--gpus", "2"}, "zero3"},
		{[]string{"estimate", "--model", "llama-2-7b", "--resolution", "512x512"}, "resolution"},
	}
	for _, tt := range tests {
		r := runCLI(t, db, false, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 mentioning %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestJobSummaryNamesTheParallelism: a multi-GPU job's headline says how the GPUs share it
// in words, not as the bare "none" of --shard.
func TestJobSummaryNamesTheParallelism(t *testing.T) {
	for _, tc := range []struct {
		job  fit.Job
		want string
	}{
		{fit.Job{Task: fit.TaskQLoRA, GPUs: 3, Shard: fit.ShardNone}, "3 GPUs data parallel"},
		{fit.Job{Task: fit.TaskImageGen, GPUs: 2, Shard: fit.ShardNone}, "2 GPUs one replica each"},
		{fit.Job{Task: fit.TaskFullFT, GPUs: 8, Shard: "zero3"}, "8 GPUs zero3"},
		{fit.Job{Task: fit.TaskInference, GPUs: 4, Shard: "tp"}, "4 GPUs tp"},
	} {
		if got := jobSummary(tc.job); !strings.Contains(got, tc.want) || strings.Contains(got, "GPUs none") {
			t.Errorf("jobSummary(%+v) = %q; want %q", tc.job, got, tc.want)
		}
	}
}
