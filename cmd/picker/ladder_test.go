package main

import (
	"encoding/json"
	"strings"
	"testing"
)

type ladderJSON struct {
	Offers []struct {
		InstanceType  string  `json:"instance_type"`
		Region        string  `json:"region"`
		NeedPerGPUGiB float64 `json:"need_per_gpu_gib"`
	} `json:"offers"`
	Ladder []ladderStepJSON `json:"ladder"`
	Plan   *ladderStepJSON  `json:"plan"`
}

type ladderStepJSON struct {
	Change        string   `json:"change"`
	Flags         string   `json:"flags"`
	NeedPerGPUGiB float64  `json:"need_per_gpu_gib"`
	SavingPct     *float64 `json:"saving_pct"`
	Slowdown      float64  `json:"slowdown"`
	Cheapest      *struct {
		InstanceType string `json:"instance_type"`
		Region       string `json:"region"`
	} `json:"cheapest"`
}

// TestRecommendLadderFlagsReproduce runs `picker recommend` on the embedded snapshot, then
// again with each rung's and the plan's flags added, as a user would paste them.
func TestRecommendLadderFlagsReproduce(t *testing.T) {
	db := tempDB(t)
	jobs := [][]string{
		{"--model", "llama-3-8b", "--task", "full-ft"},
		{"--model", "llama-3-8b", "--task", "lora", "--batch", "4"},
		{"--model", "flux.1-dev"},
	}
	for _, job := range jobs {
		job = append(job, "--rank", "hourly") // TestRankingByCostOfWork checks the default's
		r := runCLI(t, db, false, append(append([]string{"recommend"}, job...), "-o", "json")...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", job, r.code, r.stderr)
		}
		var rec ladderJSON
		if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
			t.Fatal(err)
		}
		steps := rec.Ladder
		if rec.Plan == nil {
			t.Errorf("%v: no plan", job)
		} else {
			steps = append(steps, *rec.Plan)
		}
		if len(rec.Ladder) == 0 {
			t.Errorf("%v: empty ladder", job)
		}
		for _, st := range steps {
			if st.SavingPct == nil || *st.SavingPct <= 0 {
				t.Errorf("%v %s: saving %v", job, st.Flags, st.SavingPct)
			}
			args := append(append(append([]string{"recommend"}, job...), strings.Fields(st.Flags)...), "-o", "json")
			r := runCLI(t, db, false, args...)
			var got ladderJSON
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || len(got.Offers) == 0 {
				t.Errorf("%v: exit %d %s", args, r.code, r.stderr)
				continue
			}
			o := got.Offers[0]
			if o.InstanceType != st.Cheapest.InstanceType || o.Region != st.Cheapest.Region || o.NeedPerGPUGiB != st.NeedPerGPUGiB {
				t.Errorf("%v: top %s %s need %v; the ladder said %s %s need %v", args, o.InstanceType, o.Region, o.NeedPerGPUGiB, st.Cheapest.InstanceType, st.Cheapest.Region, st.NeedPerGPUGiB)
			}
		}
	}
	// The table shows the plan and, with -v, the rungs left out.
	r := runCLI(t, db, false, "recommend", "--model", "llama-3-8b", "--task", "lora", "--rank", "hourly", "-v")
	for _, want := range []string{"savings ladder", "plan (the cheapest combination)", "left out of the ladder", "does not lower the need per GPU"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("recommend -v table lacks %q:\n%s", want, r.stdout)
		}
	}
}
