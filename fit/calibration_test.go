package fit

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
)

// calibrationColumns maps a cases CSV column to the job flag it holds (score.py's FLAGS).
var calibrationColumns = map[string]string{
	"task": "task", "precision": "precision", "quant": "quant", "double_quant": "double-quant",
	"optimizer": "optimizer", "batch": "batch", "seq_len": "seq-len", "grad_ckpt": "grad-ckpt",
	"attention": "attention", "lora_r": "lora-r", "lora_targets": "lora-targets", "gpus": "gpus",
	"shard": "shard", "offload": "offload", "resolution": "resolution", "images": "images",
	"framework": "framework", "lora_dropout": "lora-dropout",
}

type calCase struct {
	id, model, compare, task string
	measured                 float64
	flags                    map[string]string
}

func loadCases(t *testing.T, path string) []calCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, need := range []string{"id", "model", "compare", "measured_gib"} {
		if _, ok := col[need]; !ok {
			t.Fatalf("%s: missing column %s", path, need)
		}
	}
	var out []calCase
	for _, row := range rows[1:] {
		c := calCase{id: row[col["id"]], model: row[col["model"]], compare: row[col["compare"]], flags: map[string]string{}}
		if c.id == "" {
			continue
		}
		// Measured files (tools/measure_vram.py) mark cases the harness could not run.
		if i, ok := col["status"]; ok && row[i] != "ok" {
			continue
		}
		c.measured, err = strconv.ParseFloat(row[col["measured_gib"]], 64)
		if err != nil {
			t.Fatalf("%s: case %s: measured_gib %q", path, c.id, row[col["measured_gib"]])
		}
		for name, flag := range calibrationColumns {
			if i, ok := col[name]; ok && strings.TrimSpace(row[i]) != "" {
				c.flags[flag] = strings.TrimSpace(row[i])
			}
		}
		c.task = c.flags["task"]
		out = append(out, c)
	}
	return out
}

// judge is score.py's rule: allocated/device within ±tol; exceeds: estimate > measured;
// fits: estimate <= measured.
func judge(compare string, measured, est, tol float64) bool {
	switch compare {
	case "allocated", "reserved", "device":
		return math.Abs(est/measured-1) <= tol+1e-12
	case "exceeds":
		return est > measured
	case "fits":
		return est <= measured
	}
	return false
}

// runCalibration scores every case of a cases CSV the way score.py scores the built CLI.
func runCalibration(t *testing.T, path string) (pass, n int) {
	pass, _, n = runCalibrationTol(t, path)
	return pass, n
}

// runCalibrationTol is runCalibration that also counts the cases within ±10 %
// (exceeds/fits cases count as passing both when they pass).
func runCalibrationTol(t *testing.T, path string) (pass, pass10, n int) {
	cases := loadCases(t, path)
	type tally struct{ pass, n int }
	byCompare, byTask := map[string]*tally{}, map[string]*tally{}
	var errs []float64
	for _, c := range cases {
		if c.measured <= 0 { // not measured (skipped on the GPU run, or a template row)
			continue
		}
		est, ok, msg := math.NaN(), false, ""
		m, err := builtinModel(c.model)
		var res *Result
		if err == nil {
			var job Job
			if job, err = ParseJob(c.flags); err == nil {
				res, err = Estimate(m, job)
			}
		}
		if err != nil {
			msg = err.Error()
		} else {
			est = res.DeviceTotalGiB
			switch c.compare {
			case "allocated":
				est = res.PeakAllocatedGiB
			case "reserved":
				est = res.PeakReservedGiB
			}
			ok = judge(c.compare, c.measured, est, 0.15)
			if judge(c.compare, c.measured, est, 0.10) {
				pass10++
			}
			if c.compare == "allocated" || c.compare == "reserved" || c.compare == "device" {
				errs = append(errs, math.Abs(est/c.measured-1))
			}
		}
		for k, m := range map[string]map[string]*tally{c.compare: byCompare, c.task: byTask} {
			if m[k] == nil {
				m[k] = &tally{}
			}
			m[k].n++
			if ok {
				m[k].pass++
			}
		}
		n++
		if ok {
			pass++
		}
		verdict := "PASS"
		if !ok {
			verdict = "MISS"
		}
		if res != nil {
			b := res.Breakdown
			msg = fmt.Sprintf("[w %.2f g %.2f o %.2f a %.2f kv %.2f ws %.2f]", b.Weights, b.Gradients, b.Optimizer, b.Activations, b.KVCache, b.Workspace)
		}
		t.Logf("%-15s %-9s %-9s measured %7.2f  estimate %7.2f  err %+6.1f%%  %s %s", c.id, c.task, c.compare, c.measured, est, (est/c.measured-1)*100, verdict, msg)
	}
	sort.Float64s(errs)
	med := math.NaN()
	if len(errs) > 0 {
		med = errs[len(errs)/2]
	}
	summary := func(m map[string]*tally) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d/%d", k, m[k].pass, m[k].n))
		}
		return strings.Join(parts, "  ")
	}
	t.Logf("%s: pass %d/%d (%.1f%%) within ±15%%; median abs err %.1f%%", path, pass, n, 100*float64(pass)/float64(n), 100*med)
	t.Logf("by compare: %s", summary(byCompare))
	t.Logf("by task:    %s", summary(byTask))
	t.Logf("within ±10%%: %d/%d", pass10, n)
	return pass, pass10, n
}

// TestCalibration holds the estimator to the measured cases copied from
// shared/calibration/vram_cases.csv together with our own H200 measurements
// (testdata/measured_gpu.csv, peak allocated), each run with the framework its source used
// (the cases' framework column): at least 85 % within ±15 % and 70 % within ±10 %
// (issue 12), and the public cases alone at least 75 % within ±15 %.
func TestCalibration(t *testing.T) {
	pub, pub10, n1 := runCalibrationTol(t, "testdata/vram_cases.csv")
	own, own10, n2 := runCalibrationTol(t, "testdata/measured_gpu.csv")
	if n1 == 0 || n2 == 0 {
		t.Fatal("no cases")
	}
	n := n1 + n2
	if frac := float64(pub+own) / float64(n); frac < 0.85 {
		t.Errorf("calibration: %d/%d = %.1f%% of cases within ±15%%, want >= 85%%", pub+own, n, 100*frac)
	}
	if frac := float64(pub10+own10) / float64(n); frac < 0.70 {
		t.Errorf("calibration: %d/%d = %.1f%% of cases within ±10%%, want >= 70%%", pub10+own10, n, 100*frac)
	}
	if frac := float64(pub) / float64(n1); frac < 0.75 {
		t.Errorf("calibration: public cases %d/%d = %.1f%% within ±15%%, want >= 75%%", pub, n1, 100*frac)
	}
	t.Logf("together: %d/%d within ±15%%, %d/%d within ±10%%", pub+own, n, pub10+own10, n)
}

// TestCalibrationRecentModels scores the published figures for the MoE, MLA,
// sliding-window and pre-quantized models of issue 13 (testdata/vram_cases_recent.csv,
// a source per row): at least 80 % within ±15 % (fits/exceeds judged as score.py does).
func TestCalibrationRecentModels(t *testing.T) {
	pass, n := runCalibration(t, "testdata/vram_cases_recent.csv")
	if n < 7 || float64(pass) < 0.8*float64(n) {
		t.Errorf("vram_cases_recent.csv: %d/%d cases pass; want >= 80%% of at least 7", pass, n)
	}
}

// TestGPUCasesEstimate: every case prepared for the GPU run (tools/gpu_cases.csv) is a
// valid job for the estimator, and measured results, once committed as
// testdata/measured_gpu.csv, are scored too (reported, not yet a gate).
func TestGPUCasesEstimate(t *testing.T) {
	cases := loadCases(t, "../tools/gpu_cases.csv")
	if len(cases) < 40 {
		t.Errorf("tools/gpu_cases.csv has %d cases, want >= 40", len(cases))
	}
	for _, c := range cases {
		m, err := builtinModel(c.model)
		if err != nil {
			t.Errorf("%s: %v", c.id, err)
			continue
		}
		job, err := ParseJob(c.flags)
		if err != nil {
			t.Errorf("%s: %v", c.id, err)
			continue
		}
		if _, err := Estimate(m, job); err != nil {
			t.Errorf("%s: %v", c.id, err)
		}
	}
	// Our own H200 measurements (issue 8): peak allocated, and device memory in use (NVML:
	// context + allocator cache + tensors) against device_total_gib. Both are gates.
	const measured = "testdata/measured_gpu.csv"
	if pass, n := runCalibration(t, measured); n < 35 || float64(pass) < 0.8*float64(n) {
		t.Errorf("%s: %d/%d cases within ±15%% of peak allocated; want >= 80%% of at least 35", measured, pass, n)
	}
	if pass, n := runCalibration(t, deviceCases(t, measured)); n < 35 || float64(pass) < 0.8*float64(n) {
		t.Errorf("%s: %d/%d cases within ±15%% of device memory used; want >= 80%% of at least 35", measured, pass, n)
	}
}

// deviceCases rewrites a measured file so each case is judged on device_used_gib
// (compare=device) instead of peak allocated.
func deviceCases(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, row := range rows[1:] {
		row[col["compare"]] = "device"
		row[col["measured_gib"]] = row[col["device_used_gib"]]
		if row[col["measured_gib"]] == "" {
			row[col["measured_gib"]] = "0" // not measured: skipped by runCalibration
		}
	}
	out := filepath.Join(t.TempDir(), "measured_gpu_device.csv")
	o, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(o)
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// builtinModel resolves a case's model as modelref does for the names calibration uses:
// a catalog name, else a raw parameter count (fit never reads files or the network).
func builtinModel(ref string) (*model.Model, error) {
	if m, ok, err := model.CatalogModel(ref); ok || err != nil {
		return m, err
	}
	return model.ModelFromParams(ref)
}
