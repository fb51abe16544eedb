package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestEstimateHeadroomAgrees: estimate's JSON, CSV and text carry the headroom it
// applies and the need per GPU that recommend checks (device_total_gib x (1 +
// headroom/100)), and the three agree, for the default and a given --headroom.
func TestEstimateHeadroomAgrees(t *testing.T) {
	db := tempDB(t)
	job := []string{"estimate", "--model", "llama-2-7b", "--task", "inference", "--batch", "4", "--seq-len", "2048"}
	for _, c := range []struct {
		flags []string
		pct   float64
	}{{nil, 5}, {[]string{"--headroom", "12.5"}, 12.5}} {
		args := append(append([]string(nil), job...), c.flags...)
		r := runCLI(t, db, false, append(args, "-o", "json")...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		var got struct {
			DeviceTotal float64  `json:"device_total_gib"`
			Headroom    *float64 `json:"headroom_pct"`
			Need        *float64 `json:"need_per_gpu_gib"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		if got.Headroom == nil || got.Need == nil {
			t.Fatalf("%v: JSON lacks headroom_pct or need_per_gpu_gib:\n%s", args, r.stdout)
		}
		want := got.DeviceTotal * (1 + c.pct/100)
		if *got.Headroom != c.pct || math.Abs(*got.Need-want) > 0.002 {
			t.Errorf("%v: headroom_pct %v, need_per_gpu_gib %v; want %v and %.3f", args, *got.Headroom, *got.Need, c.pct, want)
		}

		r = runCLI(t, db, false, append(args, "-o", "csv")...)
		rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
		if err != nil || len(rows) != 2 {
			t.Fatalf("%v csv: %v rows, %v:\n%s", args, len(rows), err, r.stdout)
		}
		col := map[string]string{}
		for i, h := range rows[0] {
			col[h] = rows[1][i]
		}
		if h, _ := strconv.ParseFloat(col["headroom_pct"], 64); h != c.pct {
			t.Errorf("%v csv headroom_pct %q; want %v", args, col["headroom_pct"], c.pct)
		}
		if n, _ := strconv.ParseFloat(col["need_per_gpu_gib"], 64); math.Abs(n-*got.Need) > 0.002 {
			t.Errorf("%v csv need_per_gpu_gib %q; JSON says %v", args, col["need_per_gpu_gib"], *got.Need)
		}

		r = runCLI(t, db, false, args...)
		line := "with " + strconv.FormatFloat(c.pct, 'f', -1, 64) + " % headroom (recommend's check): " + strconv.FormatFloat(math.Round(want*100)/100, 'f', -1, 64) + " GiB per GPU"
		if !strings.Contains(r.stdout, line) {
			t.Errorf("%v text lacks %q:\n%s", args, line, r.stdout)
		}
	}
}
