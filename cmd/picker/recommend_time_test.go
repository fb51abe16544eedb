package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// timedOffer is the part of a recommended offer the time model fills.
type timedOffer struct {
	InstanceType string   `json:"instance_type"`
	Region       string   `json:"region"`
	PriceUSDHr   float64  `json:"price_usd_hr"`
	EstHours     *float64 `json:"est_hours"`
	EstCostUSD   *float64 `json:"est_cost_usd"`
	SetupHours   *float64 `json:"setup_hours"`
	BilledHours  *float64 `json:"billed_hours"`
	TokensPerSec *float64 `json:"tokens_per_s"`
	TTFT         *float64 `json:"ttft_s"`
	USDPerM      *float64 `json:"usd_per_m_output_tokens"`
	Frontier     bool     `json:"frontier"`
}

func recommendTimed(t *testing.T, db, cfg string, args ...string) (code int, offers, frontier []timedOffer, stderr string) {
	t.Helper()
	base := []string{"--config", cfg, "recommend", "--model", "llama-2-7b", "--provider", "static", "-o", "json"}
	r := runCLI(t, db, false, append(base, args...)...)
	var out struct {
		Offers   []timedOffer `json:"offers"`
		Frontier []timedOffer `json:"frontier"`
	}
	if r.stdout != "" {
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
	}
	return r.code, out.Offers, out.Frontier, r.stderr
}

func TestRecommendInferenceTimeFields(t *testing.T) {
	db, cfg := staticDB(t, fixturePrices)
	code, offers, _, stderr := recommendTimed(t, db, cfg, "--task", "inference", "--batch", "4", "--gpu-model", "H100",
		"--prompt-tokens", "1000", "--output-tokens", "200", "--requests", "500", "--engine", "llama.cpp", "--setup", "10m")
	if code != 0 || len(offers) == 0 {
		t.Fatalf("exit %d, %d offers: %s", code, len(offers), stderr)
	}
	for _, o := range offers {
		if o.TokensPerSec == nil || o.TTFT == nil || o.USDPerM == nil || o.EstHours == nil || o.SetupHours == nil || o.BilledHours == nil || o.EstCostUSD == nil {
			t.Fatalf("%s: time fields missing: %+v", o.InstanceType, o)
		}
		if *o.SetupHours != 0.167 { // --setup 10m, rounded to 3 decimals
			t.Errorf("%s: setup_hours %v; want 0.167", o.InstanceType, *o.SetupHours)
		}
		// The static provider bills per minute (no published rule): at least setup + run.
		if *o.BilledHours+0.001 < *o.EstHours+*o.SetupHours || *o.EstCostUSD < *o.BilledHours*o.PriceUSDHr-0.01 {
			t.Errorf("%s: billed %v h / $%v for %v h run + %v h setup at $%v/h", o.InstanceType, *o.BilledHours, *o.EstCostUSD, *o.EstHours, *o.SetupHours, o.PriceUSDHr)
		}
	}
}

func TestRecommendDeadlineAndFrontierCLI(t *testing.T) {
	db, cfg := staticDB(t, fixturePrices)
	job := []string{"--task", "lora", "--seq-len", "1024", "--tokens", "2e7"}
	code, all, _, stderr := recommendTimed(t, db, cfg, job...)
	if code != 0 || len(all) < 2 {
		t.Fatalf("exit %d, %d offers: %s", code, len(all), stderr)
	}
	// A deadline shorter than any offer's setup + run time leaves nothing (exit 3).
	if code, _, _, _ := recommendTimed(t, db, cfg, append(job, "--deadline", "1m")...); code != 3 {
		t.Errorf("--deadline 1m: exit %d; want 3", code)
	}
	if code, offers, _, _ := recommendTimed(t, db, cfg, append(job, "--deadline", "1000h")...); code != 0 || len(offers) != len(all) {
		t.Errorf("--deadline 1000h: exit %d, %d offers; want all %d", code, len(offers), len(all))
	}
	code, ranked, front, _ := recommendTimed(t, db, cfg, append(job, "--rank", "job")...)
	if code != 0 || len(front) == 0 || !front[0].Frontier || ranked[0].InstanceType != front[0].InstanceType || ranked[0].Region != front[0].Region {
		t.Errorf("--rank job: frontier %+v, first offer %+v; want the cheapest job first on both", front, ranked[0])
	}
	r := runCLI(t, db, false, append([]string{"--config", cfg, "-v", "recommend", "--model", "llama-2-7b", "--provider", "static", "--rank", "job"}, job...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "time-cost frontier") || !strings.Contains(r.stdout, "FRONTIER") {
		t.Errorf("-v table lacks the frontier (exit %d):\n%s", r.code, r.stdout)
	}
}

func TestRecommendTimeFlagsBadInput(t *testing.T) {
	db, cfg := staticDB(t, fixturePrices)
	for _, tt := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--engine", "tgi"}, "--engine"},
		{[]string{"--prompt-tokens", "-5"}, "--prompt-tokens"},
		{[]string{"--deadline", "soon", "--tokens", "1e6"}, "--deadline"},
		{[]string{"--deadline", "6h"}, "--deadline"},
		{[]string{"--setup", "-1h"}, "--setup"},
		{[]string{"--mfu", "1.5"}, "--mfu"},
	} {
		code, _, _, stderr := recommendTimed(t, db, cfg, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.mention) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", tt.args, code, stderr, tt.mention)
		}
	}
}

// The HTTP API takes the time flags as query parameters, with the CLI's answer.
func TestAPIRecommendTimeParams(t *testing.T) {
	a, srv := newTestAPI(t)
	q := "model=llama-2-7b&engine=llama.cpp&prompt-tokens=500&output-tokens=100&requests=10&deadline=100h&setup=5m&top=2"
	code, body := get(t, srv.URL+"/v1/recommend?"+q)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	r := runCLI(t, a.st.Path(), false, "recommend", "--model", "llama-2-7b", "--engine", "llama.cpp", "--prompt-tokens", "500",
		"--output-tokens", "100", "--requests", "10", "--deadline", "100h", "--setup", "5m", "--top", "2", "-o", "json")
	if r.code != 0 || string(body) != r.stdout {
		t.Errorf("API body differs from the CLI's (exit %d)", r.code)
	}
	if !strings.Contains(string(body), `"ttft_s"`) {
		t.Errorf("body lacks ttft_s: %.300s", body)
	}
}
