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

// firstTokensPerSec runs `picker recommend <args> -o json` on the embedded snapshot and
// returns the first offer's tokens/s.
func firstTokensPerSec(t *testing.T, db string, args ...string) float64 {
	t.Helper()
	r := runCLI(t, db, false, append(append([]string{"recommend"}, args...), "-o", "json")...)
	if r.code != 0 {
		t.Fatalf("picker recommend %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	var out struct {
		Offers []timedOffer `json:"offers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Offers) == 0 || out.Offers[0].TokensPerSec == nil {
		t.Fatalf("picker recommend %s: no timed offer: %s", strings.Join(args, " "), r.stdout)
	}
	return *out.Offers[0].TokensPerSec
}

// TestRecommendFP8AndSplitTimedFromFlags: the time model's knobs are flags. --quant fp8
// on an H100 decodes faster than the same job in bf16 (one byte per weight, fp8 GEMMs);
// a pre-quantized fp8 checkpoint likewise; --split layer on two GPUs is slower than
// tensor parallel (the GPUs take turns).
func TestRecommendFP8AndSplitTimedFromFlags(t *testing.T) {
	db := tempDB(t)
	h100 := []string{"--gpu-model", "H100", "--gpus", "1"}
	bf16 := firstTokensPerSec(t, db, append([]string{"--model", "llama-3.1-8b"}, h100...)...)
	fp8 := firstTokensPerSec(t, db, append([]string{"--model", "llama-3.1-8b", "--quant", "fp8"}, h100...)...)
	if fp8 < 1.5*bf16 {
		t.Errorf("--quant fp8 on H100 decodes at %.1f tok/s, bf16 at %.1f; want fp8 at least 1.5x faster", fp8, bf16)
	}
	ckpt := firstTokensPerSec(t, db, append([]string{"--model", "qwen3-32b-fp8"}, h100...)...)
	dense := firstTokensPerSec(t, db, append([]string{"--model", "qwen3-32b"}, h100...)...)
	if ckpt < 1.5*dense {
		t.Errorf("qwen3-32b-fp8 on H100 decodes at %.1f tok/s, qwen3-32b at %.1f; want the fp8 checkpoint at least 1.5x faster", ckpt, dense)
	}
	job := []string{"--model", "llama-2-70b", "--quant", "int4", "--engine", "llama.cpp", "--gpu-model", "RTX4090", "--gpus", "2"}
	layer := firstTokensPerSec(t, db, append(job, "--split", "layer")...)
	tensor := firstTokensPerSec(t, db, append(job, "--split", "tensor")...) // llama.cpp's own default is the layer split
	if layer >= 0.8*tensor {
		t.Errorf("--split layer %.1f tok/s, tensor %.1f; want the layer split clearly slower", layer, tensor)
	}
}
