package recommend

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// throughputCase is one row of testdata/throughput_measured.csv (a copy of
// shared/calibration/throughput_measured.csv), mapped the way throughput_score.py maps it
// to flags, except that the exact GPU count and job are kept (the time model needs no
// memory fit) and the row's engine and layer split are passed on.
type throughputCase struct {
	id, kind string // kind: training task, inference-decode or inference-prefill
	model    *model.Model
	job      fit.Job
	gpu      pricing.GPU
	gpus     int
	engine   string
	pipeline bool
	pcie     bool    // the row's card is the PCIe variant of the catalog's SXM model
	fp8      bool    // fp8 training (Transformer Engine): linear layers at the fp8 peak
	measured float64 // tokens/s per GPU
}

var (
	paramsNoteRe = regexp.MustCompile(`params=([0-9.]+(?:[eE][+-]?[0-9]+)?)`)
	pcieNoteRe   = regexp.MustCompile(`\b\d+GB PCIe\b`)
)

func loadThroughputCases(t *testing.T, path string) []throughputCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	get := func(row []string, k string) string { return strings.TrimSpace(row[col[k]]) }
	var out []throughputCase
	for n, row := range rows[1:] {
		c := throughputCase{id: get(row, "id")}
		where := func(format string, args ...any) {
			t.Fatalf("%s:%d (%s): "+format, append([]any{path, n + 2, c.id}, args...)...)
		}
		var err error
		if m := paramsNoteRe.FindStringSubmatch(get(row, "note")); m != nil {
			c.model, err = model.ModelFromParams(m[1])
		} else {
			var ok bool
			if c.model, ok, err = model.CatalogModel(get(row, "model")); err == nil && !ok {
				err = fmt.Errorf("%q is not in the catalog", get(row, "model"))
			}
		}
		if err != nil {
			where("model: %v", err)
		}
		if c.measured, err = strconv.ParseFloat(get(row, "tokens_per_s_per_gpu"), 64); err != nil {
			where("tokens_per_s_per_gpu: %v", err)
		}
		if c.gpus, err = strconv.Atoi(get(row, "gpus")); err != nil {
			where("gpus: %v", err)
		}
		var ok bool
		if c.gpu, ok = pricing.LookupGPU(get(row, "gpu_model")); !ok {
			where("gpu_model %q not in the catalog", get(row, "gpu_model"))
		}
		flags := map[string]string{"task": get(row, "task"), "precision": get(row, "precision"),
			"batch": get(row, "batch"), "seq-len": get(row, "seq_len"), "gpus": get(row, "gpus"),
			"lora-r": get(row, "lora_r"), "offload": get(row, "offload")}
		if strings.HasPrefix(flags["precision"], "fp8") {
			c.fp8, flags["precision"] = true, "bf16-mixed"
		}
		if q := get(row, "quant"); q == "fp8" {
			flags["quant"] = "int8" // fp8 weights: one byte each, as the scorer maps them
		} else if q != "" && q != "none" && flags["task"] != "qlora" {
			flags["quant"] = q
		}
		if get(row, "grad_ckpt") == "true" {
			flags["grad-ckpt"] = "true"
		}
		switch s := get(row, "shard"); s {
		case "pipeline":
			c.pipeline = true
		case "hsdp":
			flags["shard"] = "fsdp"
		default:
			flags["shard"] = s
		}
		if flags["task"] == string(fit.TaskInference) && c.gpus > 1 {
			flags["shard"] = "tp"
		}
		// NVIDIA DeepLearningExamples' BERT (2019 code) computes attention unfused:
		// softmax and dropout over the score matrix, i.e. --attention eager.
		if strings.Contains(get(row, "note"), "DeepLearningExamples") {
			flags["attention"] = "eager"
		}
		for k, v := range flags {
			if v == "" {
				delete(flags, k)
			}
		}
		if c.job, err = fit.ParseJob(flags); err != nil {
			where("%v", err)
		}
		c.kind = string(c.job.Task)
		if c.job.Task == fit.TaskInference {
			c.kind = "inference-" + strings.TrimSuffix(get(row, "metric"), "_tokens_per_s")
		}
		// The note names a PCIe card where the catalog's model is the SXM part ("A100
		// 40GB PCIe 250W"): timed as recommend times an instance of PCIe cards.
		c.pcie = pcieNoteRe.MatchString(get(row, "note"))
		// The source says which engine measured the row.
		if src := get(row, "source") + " " + get(row, "note"); strings.Contains(src, "llama.cpp") {
			c.engine = jobtime.EngineLlamaCpp
		}
		out = append(out, c)
	}
	return out
}

// predictThroughput is the time model's tokens/s per GPU for a case.
func predictThroughput(t *testing.T, c throughputCase) float64 {
	t.Helper()
	res, err := fit.Estimate(c.model, c.job)
	if err != nil {
		t.Fatalf("%s: %v", c.id, err)
	}
	tm := jobtime.TimeModelFor(c.model, res)
	tm.Engine, tm.Pipeline, tm.FP8 = c.engine, c.pipeline, c.fp8
	link := -1.0
	if c.pcie {
		link = 0
	}
	g, ok := jobtime.TimeGPUFor(c.gpu, res.Job.Precision, float64(c.gpus), link)
	if !ok {
		t.Fatalf("%s: %s lacks datasheet figures", c.id, c.gpu.Model)
	}
	tim, ok := tm.Estimate(&g)
	if !ok {
		t.Fatalf("%s: no timing", c.id)
	}
	if c.kind == "inference-prefill" {
		return tim.PrefillTokensPerSec / float64(c.gpus)
	}
	return tim.TokensPerSec / float64(c.gpus)
}

// tputStats is throughput_score.py's summary: cases within ±tol and the median error
// factor exp(median |ln(pred/meas)|).
type tputStats struct {
	n, within int
	factors   []float64
}

func (s *tputStats) add(pred, meas float64) {
	s.n++
	if math.Abs(pred/meas-1) <= 0.25 {
		s.within++
	}
	s.factors = append(s.factors, math.Exp(math.Abs(math.Log(pred/meas))))
}

func (s *tputStats) median() float64 {
	if len(s.factors) == 0 {
		return math.NaN()
	}
	f := append([]float64(nil), s.factors...)
	sort.Float64s(f)
	if len(f)%2 == 1 {
		return f[len(f)/2]
	}
	return (f[len(f)/2-1] + f[len(f)/2]) / 2 // statistics.median
}

// TestThroughputCalibration scores the time model on the published measurements and
// gates it: at least 70 % of all rows within ±25 % and a median error factor of at most
// 1.25 (issue 15), training and decode each reported.
func TestThroughputCalibration(t *testing.T) {
	cases := loadThroughputCases(t, "testdata/throughput_measured.csv")
	if len(cases) < 50 {
		t.Fatalf("%d cases; want the 55 published rows", len(cases))
	}
	all := &tputStats{}
	byKind := map[string]*tputStats{}
	for _, c := range cases {
		pred := predictThroughput(t, c)
		all.add(pred, c.measured)
		group := "training"
		if c.job.Task == fit.TaskInference {
			group = c.kind
		}
		if byKind[group] == nil {
			byKind[group] = &tputStats{}
		}
		byKind[group].add(pred, c.measured)
		mark := ""
		if math.Abs(pred/c.measured-1) > 0.25 {
			mark = "MISS"
		}
		t.Logf("%-30s %-18s %-12s %2d  measured %9.1f  model %9.1f  x%.2f %s", c.id, c.kind, c.gpu.Model, c.gpus, c.measured, pred, pred/c.measured, mark)
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		s := byKind[k]
		t.Logf("%-18s n=%2d within ±25%%: %2d (%.0f%%)  median error factor %.2fx", k, s.n, s.within, 100*float64(s.within)/float64(s.n), s.median())
	}
	frac := float64(all.within) / float64(all.n)
	t.Logf("all                n=%2d within ±25%%: %2d (%.0f%%)  median error factor %.2fx", all.n, all.within, 100*frac, all.median())
	if frac < 0.70 {
		t.Errorf("%d/%d = %.0f%% of rows within ±25%%; want >= 70%%", all.within, all.n, 100*frac)
	}
	if med := all.median(); med > 1.25 {
		t.Errorf("median error factor %.2f; want <= 1.25", med)
	}
}
