package main

import (
	"encoding/json"
	"strings"
	"testing"
)

type clusterFit struct {
	Provider          string  `json:"provider"`
	InstanceType      string  `json:"instance_type"`
	PriceUSDHr        float64 `json:"price_usd_hr"`
	Nodes             int     `json:"nodes"`
	ClusterPriceUSDHr float64 `json:"cluster_price_usd_hr"`
	Layout            string  `json:"layout"`
	Interconnect      string  `json:"interconnect"`
}

// TestRecommendNodesAuto runs issue 13's commands on the embedded snapshot: 405B serving
// and a 70B full fine-tune with --nodes auto return multi-node plans priced per hour
// (nodes × the instance price) with their layout.
func TestRecommendNodesAuto(t *testing.T) {
	db := tempDB(t)
	for _, args := range [][]string{
		{"recommend", "--model", "llama-3.1-405b", "--nodes", "auto", "-o", "json"},
		{"recommend", "--model", "llama-3.1-70b", "--task", "full-ft", "--nodes", "auto", "-o", "json"},
	} {
		r := runCLI(t, db, false, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		var out struct {
			Offers          []clusterFit `json:"offers"`
			CheapestCluster *clusterFit  `json:"cheapest_cluster"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		plans := out.Offers
		if out.CheapestCluster != nil {
			plans = append(plans, *out.CheapestCluster)
		}
		found := false
		for _, p := range plans {
			if p.Nodes < 2 {
				continue
			}
			found = true
			if p.Layout == "" || p.Interconnect == "" || p.ClusterPriceUSDHr < float64(p.Nodes)*p.PriceUSDHr-0.01 {
				t.Errorf("%v: plan %+v lacks layout, interconnect or the N x price", args, p)
			}
		}
		if !found {
			t.Errorf("%v: no multi-node plan in %s", args, r.stdout)
		}
	}
}

// TestNodesAndQuantBadInput: --nodes where no offered type has an interconnect, and a
// --quant that contradicts a pre-quantized checkpoint, are exit 2 with the reason.
func TestNodesAndQuantBadInput(t *testing.T) {
	db := tempDB(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"recommend", "--model", "llama-3.1-405b", "--nodes", "2", "--provider", "lambda"}, []string{"--nodes 2", "interconnect"}},
		{[]string{"estimate", "--model", "gpt-oss-120b", "--quant", "nf4"}, []string{"--quant nf4", "MXFP4"}},
		{[]string{"estimate", "--model", "llama-2-7b", "--nodes", "zero"}, []string{"--nodes"}},
		{[]string{"estimate", "--model", "llama-2-7b", "--kv-cache-dtype", "fp4"}, []string{"--kv-cache-dtype"}},
	} {
		r := runCLI(t, db, false, c.args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, r.code, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, r.stderr, w)
			}
		}
	}
	// The estimate table names total and active parameters.
	r := runCLI(t, db, false, "estimate", "--model", "deepseek-v3")
	if r.code != 0 || !strings.Contains(r.stdout, "671.03B params, 37.55B active") {
		t.Errorf("estimate deepseek-v3: %d %s", r.code, r.stdout)
	}
}

// TestParamsDisagreeWithModel: --params with --model must describe the same model.
func TestParamsDisagreeWithModel(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "estimate", "--model", "llama-2-7b", "--params", "70b")
	if r.code != 2 || !strings.Contains(r.stderr, "--params 70b") || !strings.Contains(r.stderr, "6738415616") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if r := runCLI(t, db, false, "estimate", "--model", "llama-2-7b", "--params", "7b"); r.code != 0 {
		t.Errorf("--params 7b with llama-2-7b: exit %d: %s", r.code, r.stderr)
	}
}
