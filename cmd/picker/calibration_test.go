package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// The memory calibration, through the product's own door: every case is the command
// `picker estimate <flags> -o json` that shared/calibration/score.py runs, run in process
// (Main.Run: the same flag parsing, binder and RunEstimate as the binary) and judged as
// score.py judges it. Each case's command is logged, so a user can paste it and get the
// same number.

// calibrationFlags is score.py's FLAGS (a cases CSV column and the estimate flag it holds,
// in the order score.py passes them), plus lora_dropout, a column of our own H200 runs
// (tools/measure_vram.py), passed as --lora-dropout.
var calibrationFlags = []struct{ col, flag string }{
	{"model", "--model"}, {"task", "--task"}, {"precision", "--precision"}, {"quant", "--quant"},
	{"double_quant", "--double-quant"}, {"optimizer", "--optimizer"}, {"batch", "--batch"},
	{"seq_len", "--seq-len"}, {"grad_ckpt", "--grad-ckpt"}, {"attention", "--attention"},
	{"lora_r", "--lora-r"}, {"lora_targets", "--lora-targets"}, {"gpus", "--gpus"}, {"shard", "--shard"},
	{"offload", "--offload"}, {"resolution", "--resolution"}, {"images", "--images"},
	{"framework", "--framework"}, {"lora_dropout", "--lora-dropout"},
	// Columns of the issue-23 cases (vram_cases_stack.csv): accumulation, an
	// encoder–decoder's target length and the node count.
	{"grad_accum", "--grad-accum"}, {"target_tokens", "--target-tokens"}, {"nodes", "--nodes"},
	// The norm kernel (--norm): torchtitan's fused_rmsnorm.
	{"norm", "--norm"},
}

// calibrationDir holds copies of shared/calibration's cases and our own measurements.
const calibrationDir = "testdata/calibration"

type calCase struct {
	id, model, compare, task string
	// source is where the figure was published (the cases' source column, else the id's
	// prefix, which names the source in the older files: lit-hub-04 -> lit-hub), so that
	// the scores can be reported per source and a source the model misses stands out.
	source   string
	measured float64
	args     []string // picker arguments, score.py's build_args
}

// readCSV reads a cases file: '#' lines are comments, the first row names the columns.
func readCSV(t *testing.T, path string) (cols map[string]int, rows [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	all, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(all) < 2 {
		t.Fatalf("%s: no cases", path)
	}
	cols = map[string]int{}
	for i, h := range all[0] {
		cols[h] = i
	}
	return cols, all[1:]
}

func loadCases(t *testing.T, path string) []calCase {
	t.Helper()
	col, rows := readCSV(t, path)
	for _, need := range []string{"id", "model", "compare", "measured_gib"} {
		if _, ok := col[need]; !ok {
			t.Fatalf("%s: missing column %s", path, need)
		}
	}
	var out []calCase
	for n, row := range rows {
		get := func(k string) string {
			if i, ok := col[k]; ok {
				return strings.TrimSpace(row[i])
			}
			return ""
		}
		c := calCase{id: get("id"), model: get("model"), compare: get("compare"), task: get("task"), source: get("source")}
		if c.id == "" {
			continue
		}
		c.source, _, _ = strings.Cut(c.source, " ") // the repository or site
		if c.source == "" {
			c.source = idSource(c.id)
			if _, ok := col["status"]; ok {
				c.source = "own H200 runs (tools/measure_vram.py)"
			}
		}
		// Measured files (tools/measure_vram.py) mark cases the harness could not run.
		if _, ok := col["status"]; ok && get("status") != "ok" {
			continue
		}
		var err error
		if c.measured, err = strconv.ParseFloat(get("measured_gib"), 64); err != nil {
			t.Fatalf("%s:%d: case %s: measured_gib %q", path, n+2, c.id, get("measured_gib"))
		}
		c.args = []string{"estimate"}
		for _, f := range calibrationFlags {
			if v := get(f.col); v != "" {
				c.args = append(c.args, f.flag+"="+v)
			}
		}
		c.args = append(c.args, "-o", "json")
		out = append(out, c)
	}
	return out
}

// idSource is a case id without its trailing number: lit-hub-08b -> lit-hub, peft-ds-02
// -> peft-ds.
func idSource(id string) string {
	parts := strings.Split(id, "-")
	for len(parts) > 1 {
		last := parts[len(parts)-1]
		if last == "" || last[0] < '0' || last[0] > '9' {
			break
		}
		parts = parts[:len(parts)-1]
	}
	return strings.Join(parts, "-")
}

// judge is score.py's rule: allocated/reserved/device within ±tol; exceeds: estimate >
// measured; fits: estimate <= measured.
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

// runEstimateCase runs a case's command in process; the error is the command's first
// line of stderr when it did not exit 0.
func runEstimateCase(t *testing.T, db string, args []string) (*estimateJSON, error) {
	t.Helper()
	r := runCLI(t, db, false, args...)
	if r.code != 0 {
		line, _, _ := strings.Cut(strings.TrimSpace(r.stderr), "\n")
		return nil, fmt.Errorf("exit %d: %s", r.code, line)
	}
	var res estimateJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("picker %s: %v: %s", strings.Join(args, " "), err, r.stdout)
	}
	return &res, nil
}

// estimateJSON is the part of `picker estimate -o json` score.py reads.
type estimateJSON struct {
	PeakAllocatedGiB float64       `json:"peak_allocated_gib"`
	PeakReservedGiB  float64       `json:"peak_reserved_gib"`
	DeviceTotalGiB   float64       `json:"device_total_gib"`
	Breakdown        fit.Breakdown `json:"breakdown_gib"`
}

type calScore struct{ pass, pass10, n int }

// scoreCalibration scores every case of a cases CSV the way score.py scores the binary.
func scoreCalibration(t *testing.T, path string) calScore {
	t.Helper()
	db := tempDB(t)
	type tally struct{ pass, n int }
	byCompare, byTask, bySource := map[string]*tally{}, map[string]*tally{}, map[string]*tally{}
	var s calScore
	var errs []float64
	for _, c := range loadCases(t, path) {
		if c.measured <= 0 { // not measured (skipped on the GPU run, or a template row)
			continue
		}
		est, ok, msg := math.NaN(), false, ""
		res, err := runEstimateCase(t, db, c.args)
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
				s.pass10++
			}
			if c.compare == "allocated" || c.compare == "reserved" || c.compare == "device" {
				errs = append(errs, math.Abs(est/c.measured-1))
			}
			b := res.Breakdown
			msg = fmt.Sprintf("[w %.2f g %.2f o %.2f a %.2f kv %.2f ws %.2f]", b.Weights, b.Gradients, b.Optimizer, b.Activations, b.KVCache, b.Workspace)
		}
		for _, km := range []struct {
			k string
			m map[string]*tally
		}{{c.compare, byCompare}, {c.task, byTask}, {c.source, bySource}} {
			k, m := km.k, km.m
			if m[k] == nil {
				m[k] = &tally{}
			}
			m[k].n++
			if ok {
				m[k].pass++
			}
		}
		s.n++
		verdict := "MISS"
		if ok {
			s.pass++
			verdict = "PASS"
		}
		t.Logf("%-15s %-9s %-9s measured %7.2f  estimate %7.2f  err %+6.1f%%  %s %s\n\tpicker %s", c.id, c.task, c.compare, c.measured, est, (est/c.measured-1)*100, verdict, msg, strings.Join(c.args, " "))
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
	if s.n == 0 {
		t.Fatalf("%s: no measured cases", path)
	}
	t.Logf("%s: pass %d/%d (%.1f%%) within ±15%%; within ±10%% %d/%d; median abs err %.1f%%", path, s.pass, s.n, 100*float64(s.pass)/float64(s.n), s.pass10, s.n, 100*med)
	t.Logf("by compare: %s", summary(byCompare))
	t.Logf("by task:    %s", summary(byTask))
	t.Logf("by source:  %s", summary(bySource))
	return s
}

// TestCalibration holds the estimator, through `picker estimate`, to the measured cases
// copied from shared/calibration/vram_cases.csv together with our own H200 measurements
// (measured_gpu.csv, peak allocated), each run with the framework its source used (the
// cases' framework column). Gates: together at least 85 % within ±15 % and 70 % within
// ±10 % (issue 12), the public cases alone at least 75 % within ±15 %.
func TestCalibration(t *testing.T) {
	pub := scoreCalibration(t, filepath.Join(calibrationDir, "vram_cases.csv"))
	own := scoreCalibration(t, filepath.Join(calibrationDir, "measured_gpu.csv"))
	n := pub.n + own.n
	if frac := float64(pub.pass+own.pass) / float64(n); frac < 0.85 {
		t.Errorf("calibration: %d/%d = %.1f%% of cases within ±15%%, want >= 85%%", pub.pass+own.pass, n, 100*frac)
	}
	if frac := float64(pub.pass10+own.pass10) / float64(n); frac < 0.70 {
		t.Errorf("calibration: %d/%d = %.1f%% of cases within ±10%%, want >= 70%%", pub.pass10+own.pass10, n, 100*frac)
	}
	if frac := float64(pub.pass) / float64(pub.n); frac < 0.75 {
		t.Errorf("calibration: public cases %d/%d = %.1f%% within ±15%%, want >= 75%%", pub.pass, pub.n, 100*frac)
	}
	t.Logf("together: %d/%d within ±15%%, %d/%d within ±10%%", pub.pass+own.pass, n, pub.pass10+own.pass10, n)
}

// TestCalibrationRecentModels scores the published figures for the MoE, MLA,
// sliding-window and pre-quantized models of issue 13 (vram_cases_recent.csv, a source
// per row): at least 80 % within ±15 % (fits/exceeds judged as score.py does).
func TestCalibrationRecentModels(t *testing.T) {
	s := scoreCalibration(t, filepath.Join(calibrationDir, "vram_cases_recent.csv"))
	if s.n < 7 || float64(s.pass) < 0.8*float64(s.n) {
		t.Errorf("vram_cases_recent.csv: %d/%d cases pass; want >= 80%% of at least 7", s.pass, s.n)
	}
}

// TestCalibrationStack scores the published figures of issue 23 (vram_cases_stack.csv:
// sharded and accumulating training on stacks the other files do not exercise; a source,
// an environment and a method per row). These are the closest thing here to unseen data:
// they are scored, not tuned to, so the gate is only that every row is a command picker
// accepts; the scores, per source and per task, are logged so that a source the model
// misses stands out.
func TestCalibrationStack(t *testing.T) {
	path := filepath.Join(calibrationDir, "vram_cases_stack.csv")
	col, rows := readCSV(t, path)
	for _, need := range []string{"source", "environment", "method"} {
		if _, ok := col[need]; !ok {
			t.Fatalf("%s: missing column %s", path, need)
		}
	}
	for _, row := range rows {
		for _, need := range []string{"source", "environment", "method"} {
			if strings.TrimSpace(row[col[need]]) == "" {
				t.Errorf("%s: case %s has no %s", path, row[col["id"]], need)
			}
		}
	}
	db := tempDB(t)
	for _, c := range loadCases(t, path) {
		if _, err := runEstimateCase(t, db, c.args); err != nil {
			t.Errorf("%s: picker %s: %v", c.id, strings.Join(c.args, " "), err)
		}
	}
	if s := scoreCalibration(t, path); s.n != len(rows) {
		t.Errorf("%s: %d of %d rows scored", path, s.n, len(rows))
	}
}

// TestGPUCasesEstimate: every case prepared for the GPU run (tools/gpu_cases.csv) is a
// command picker accepts, and our own H200 measurements (issue 8) are gates on peak
// allocated and on device memory in use (NVML: context + allocator cache + tensors)
// against device_total_gib.
func TestGPUCasesEstimate(t *testing.T) {
	cases := loadCases(t, filepath.Join("..", "..", "tools", "gpu_cases.csv"))
	if len(cases) < 40 {
		t.Errorf("tools/gpu_cases.csv has %d cases, want >= 40", len(cases))
	}
	db := tempDB(t)
	for _, c := range cases {
		if _, err := runEstimateCase(t, db, c.args); err != nil {
			t.Errorf("%s: picker %s: %v", c.id, strings.Join(c.args, " "), err)
		}
	}
	measured := filepath.Join(calibrationDir, "measured_gpu.csv")
	if s := scoreCalibration(t, measured); s.n < 35 || float64(s.pass) < 0.8*float64(s.n) {
		t.Errorf("%s: %d/%d cases within ±15%% of peak allocated; want >= 80%% of at least 35", measured, s.pass, s.n)
	}
	if s := scoreCalibration(t, deviceCases(t, measured)); s.n < 35 || float64(s.pass) < 0.8*float64(s.n) {
		t.Errorf("%s: %d/%d cases within ±15%% of device memory used; want >= 80%% of at least 35", measured, s.pass, s.n)
	}
}

// TestCatalogCoversCalibration: every model named in the calibration cases resolves from
// the catalog, so the accuracy tests never need the network.
func TestCatalogCoversCalibration(t *testing.T) {
	for _, file := range []string{"vram_cases.csv", "vram_cases_recent.csv", "measured_gpu.csv", "vram_cases_stack.csv"} {
		col, rows := readCSV(t, filepath.Join(calibrationDir, file))
		for _, row := range rows {
			ref := strings.TrimSpace(row[col["model"]])
			if ref == "" || strings.HasPrefix(strings.TrimSpace(row[col["id"]]), "#") {
				continue
			}
			if _, ok, err := model.CatalogModel(ref); !ok || err != nil {
				t.Errorf("%s: case %s: model %s not in the catalog (err %v)", file, row[col["id"]], ref, err)
			}
		}
	}
}

// deviceCases rewrites a measured file so each case is judged on device_used_gib
// (compare=device) instead of peak allocated.
func deviceCases(t *testing.T, path string) string {
	t.Helper()
	col, rows := readCSV(t, path)
	header := make([]string, len(col))
	for k, i := range col {
		header[i] = k
	}
	for _, row := range rows {
		row[col["compare"]] = "device"
		row[col["measured_gib"]] = row[col["device_used_gib"]]
		if row[col["measured_gib"]] == "" {
			row[col["measured_gib"]] = "0" // not measured: skipped by scoreCalibration
		}
	}
	out := filepath.Join(t.TempDir(), "measured_gpu_device.csv")
	o, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(o)
	if err := w.WriteAll(append([][]string{header}, rows...)); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
