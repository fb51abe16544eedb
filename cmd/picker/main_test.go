package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// fixedNow pins the clock so ages in tables are deterministic.
var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs picker in process against db with no config file.
func runCLI(t *testing.T, db string, tty bool, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	m := Main{Stdout: &out, Stderr: &errb, Args: append([]string{"--db", db}, args...), TTY: &tty,
		Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return fixedNow }}
	code := m.Run(context.Background())
	return result{code, out.String(), errb.String()}
}

func tempDB(t *testing.T) string { return filepath.Join(t.TempDir(), "picker.db") }

func TestOffersJSONFromEmbeddedCatalog(t *testing.T) {
	r := runCLI(t, tempDB(t), false, "offers", "--gpu-model", "H100", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var offers []pricing.Offer
	if err := json.Unmarshal([]byte(r.stdout), &offers); err != nil {
		t.Fatalf("stdout is not a JSON array of offers: %v", err)
	}
	provs := map[string]bool{}
	for i, o := range offers {
		if o.GPUModel != "H100" {
			t.Errorf("offer %s has gpu_model %q", o.Key(), o.GPUModel)
		}
		if o.ObservedAt.IsZero() || o.ObservedAt.After(fixedNow) {
			t.Errorf("offer %s observed at %v", o.Key(), o.ObservedAt)
		}
		if i > 0 && offers[i-1].PriceUSDHr > o.PriceUSDHr {
			t.Errorf("offers not sorted by price at %d: %v > %v", i, offers[i-1].PriceUSDHr, o.PriceUSDHr)
		}
		provs[o.Provider] = true
	}
	if len(provs) < 5 {
		t.Errorf("H100 offers come from %d providers (%v); want at least 5", len(provs), provs)
	}
}

func TestOffersTableTerminalAndPipe(t *testing.T) {
	db := tempDB(t)
	pipe := runCLI(t, db, false, "offers", "--gpu-model", "A100-80GB", "--provider", "lambda", "--limit", "3")
	term := runCLI(t, db, true, "offers", "--gpu-model", "A100-80GB", "--provider", "lambda", "--limit", "3")
	for _, r := range []result{pipe, term} {
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	}
	pl := strings.Split(strings.TrimSpace(pipe.stdout), "\n")
	if len(pl) != 4 {
		t.Fatalf("pipe output has %d lines; want header + 3:\n%s", len(pl), pipe.stdout)
	}
	for _, l := range pl {
		if got := strings.Count(l, "\t"); got != 12 {
			t.Errorf("pipe line has %d tabs; want 12 (13 tab-separated columns): %q", got, l)
		}
	}
	if !strings.HasPrefix(pl[1], "lambda\t") || !strings.Contains(pl[1], "\tA100-80GB\t") {
		t.Errorf("first row %q: want a lambda A100-80GB offer", pl[1])
	}
	if strings.Contains(term.stdout, "\t") {
		t.Errorf("terminal output must be space-aligned, got tabs:\n%s", term.stdout)
	}
	tl := strings.Split(strings.TrimSpace(term.stdout), "\n")
	if len(tl) != 4 || strings.Index(tl[0], "GPU ") != strings.Index(tl[1], "A100-80GB") {
		t.Errorf("terminal columns are not aligned:\n%s", term.stdout)
	}
	if !strings.Contains(term.stderr, "3 offers") {
		t.Errorf("terminal footer missing from stderr: %q", term.stderr)
	}
	// The age column is computed from the pinned clock: lambda rows are dated 2026-08-01.
	if !strings.Contains(pl[1], "\t121 d\t") {
		t.Errorf("row %q: want age 121 d (2026-08-01 to 2026-11-30)", pl[1])
	}
}

func TestExportCSVAtomic(t *testing.T) {
	db := tempDB(t)
	out := filepath.Join(t.TempDir(), "f.csv")
	r := runCLI(t, db, false, "export", "--format", "csv", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	all := runCLI(t, db, false, "offers", "-o", "json")
	var offers []pricing.Offer
	if err := json.Unmarshal([]byte(all.stdout), &offers); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(offers)+1 {
		t.Fatalf("export has %d rows; want header + %d offers", len(recs), len(offers))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, need := range []string{"provider", "instance_type", "price_usd_hr", "price_per_gpu_usd_hr", "price_per_gib_usd_hr", "observed_at"} {
		if _, ok := col[need]; !ok {
			t.Fatalf("export header %v lacks %q", recs[0], need)
		}
	}
	// Check the derived columns on one known row: aws p4d.24xlarge, 8 x A100 40 GiB at 21.957642/h.
	found := false
	for _, rec := range recs[1:] {
		if rec[col["provider"]] == "aws" && rec[col["instance_type"]] == "p4d.24xlarge" {
			found = true
			if got, want := rec[col["price_per_gpu_usd_hr"]], "2.744705"; got != want { // 21.957642 / 8
				t.Errorf("p4d per-GPU price = %s; want %s", got, want)
			}
			if got, want := rec[col["price_per_gib_usd_hr"]], "0.069486"; got != want { // 21.957642 / (8 x 39.50 usable GiB of an A100 40GB)
				t.Errorf("p4d per-GiB price = %s; want %s", got, want)
			}
		}
	}
	if !found {
		t.Error("aws p4d.24xlarge missing from export")
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".f.csv.tmp-*"))
	if len(matches) != 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
}

func TestGPUsListsEveryModel(t *testing.T) {
	r := runCLI(t, tempDB(t), false, "gpus", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rows []gpuRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < len(pricing.GPUs()) {
		t.Fatalf("gpus lists %d models; want every one of the %d in the catalog", len(rows), len(pricing.GPUs()))
	}
	for _, row := range rows {
		if row.Model != "H100" {
			continue
		}
		// Cheapest on-demand H100 per GPU in the snapshot is hyperbolic's 1x-H100 at 1.29.
		if row.CheapestOnDemand == nil || *row.CheapestOnDemand != 1.29 || row.Providers[0].Provider != "hyperbolic" {
			t.Errorf("H100 cheapest = %v from %+v; want 1.29 from hyperbolic", row.CheapestOnDemand, row.Providers[0])
		}
	}
	tbl := runCLI(t, tempDB(t), true, "gpus")
	if !strings.Contains(tbl.stdout, "P4 ") || !strings.Contains(tbl.stdout, "H100-NVL") {
		t.Errorf("gpus table misses models:\n%s", tbl.stdout)
	}
}

func TestHistoryAndProviders(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "history", "--provider", "aws", "--instance-type", "p4d.24xlarge", "-o", "json")
	if r.code != 0 {
		t.Fatalf("history exit %d: %s", r.code, r.stderr)
	}
	var h []historyRow
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || len(h) != 1 || h[0].ValidTo != nil || h[0].PriceUSDHr != 21.957642 {
		t.Fatalf("history = %+v (%v); want one current interval at 21.957642", h, err)
	}
	if r := runCLI(t, db, false, "history", "--provider", "aws", "--instance-type", "p9.huge"); r.code != 2 || !strings.Contains(r.stderr, "p9.huge") {
		t.Errorf("history of an unknown offer: exit %d, %q; want 2 naming it", r.code, r.stderr)
	}
	// By GPU model, under any of its spellings: on a fresh database every current offer
	// of the model has exactly one interval.
	var offers []pricing.Offer
	json.Unmarshal([]byte(runCLI(t, db, false, "offers", "--gpu-model", "A100-80GB", "-o", "json").stdout), &offers)
	r = runCLI(t, db, false, "history", "--gpu-model", "NVIDIA A100-SXM4-80GB", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || len(h) != len(offers) || len(h) == 0 {
		t.Errorf("history --gpu-model: %d rows (%v, exit %d %s), want one per A100-80GB offer (%d)", len(h), err, r.code, r.stderr, len(offers))
	}
	if r := runCLI(t, db, false, "history"); r.code != 2 || !strings.Contains(r.stderr, "--gpu-model") {
		t.Errorf("history with nothing named: exit %d, %q; want 2 saying what it needs", r.code, r.stderr)
	}
	p := runCLI(t, db, false, "providers", "-o", "json")
	var rows []providerRow
	if err := json.Unmarshal([]byte(p.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]providerRow{}
	for _, r := range rows {
		got[r.Name] = r
	}
	if aws := got["aws"]; !aws.Adapter || aws.Enabled || aws.Offers != 79 || aws.Age != "133 d" {
		t.Errorf("aws row = %+v; want adapter, disabled, 79 snapshot offers aged 133 d", aws)
	}
	if nebius := got["nebius"]; nebius.Adapter || nebius.Offers == 0 || nebius.Needs != "" {
		t.Errorf("nebius row = %+v; want a snapshot-only provider with offers", nebius)
	}
	if cudo := got["cudo"]; !cudo.Adapter || cudo.Enabled || cudo.Offers == 0 || cudo.Needs != "optional key $CUDO_API_KEY" {
		t.Errorf("cudo row = %+v; want its adapter, disabled, over the snapshot's offers, needing an optional key", cudo)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, bytes.Repeat([]byte("not a database "), 400), 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badCfg, []byte("[daemon]\nlisten = \"x\"\nlistne = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		db   string
		args []string
		code int
		want []string
	}{
		{"unknown flag", tempDB(t), []string{"offers", "--gpu", "H100"}, 2, []string{"unknown flag: --gpu"}},
		{"unknown command", tempDB(t), []string{"ofers"}, 2, []string{"ofers"}},
		{"unknown gpu", tempDB(t), []string{"offers", "--gpu-model", "H1000"}, 2, []string{`"H1000"`, "H100"}},
		{"bad output", tempDB(t), []string{"offers", "-o", "yaml"}, 2, []string{"yaml"}},
		{"bad purchase", tempDB(t), []string{"offers", "--purchase", "cheap"}, 2, []string{"cheap"}},
		{"bad sort", tempDB(t), []string{"offers", "--sort", "speed"}, 2, []string{"speed"}},
		{"negative vram", tempDB(t), []string{"offers", "--min-vram", "-1"}, 2, []string{"--min-vram"}},
		{"corrupt db", corrupt, []string{"offers"}, 2, []string{"corrupt.db"}},
		{"unwritable db", filepath.Join(blocker, "sub", "p.db"), []string{"offers"}, 1, []string{"p.db"}},
		{"bad config", tempDB(t), []string{"--config", badCfg, "offers"}, 2, []string{"bad.toml:3", "listne"}},
		{"history without provider", tempDB(t), []string{"history"}, 2, []string{"--provider"}},
		{"export bad format", tempDB(t), []string{"export", "--format", "xml"}, 2, []string{"xml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.db, false, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d; want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not mention %q", r.stderr, w)
				}
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
				t.Errorf("stderr shows a panic: %s", r.stderr)
			}
		})
	}
	// A corrupt database is reported, never overwritten.
	b, _ := os.ReadFile(corrupt)
	if !bytes.HasPrefix(b, []byte("not a database")) {
		t.Error("the corrupt database file was modified")
	}
}

func TestRefreshStaticProvider(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "mine.toml")
	if err := os.WriteFile(prices, []byte("[[offers]]\nregion = \"lab\"\ninstance_type = \"box\"\ngpu_model = \"H100\"\ngpu_count = 1\nprice_usd_hr = 0.5\nobserved = \"2026-11-29\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[providers.static]\nfiles = [\""+prices+"\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := tempDB(t)
	r := runCLI(t, db, false, "--config", cfg, "refresh")
	if r.code != 0 {
		t.Fatalf("refresh exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "static\t1\t1\t0\t") {
		t.Errorf("refresh output %q: want static with 1 offer, 1 price change, 0 closed", r.stdout)
	}
	o := runCLI(t, db, false, "offers", "--gpu-model", "H100", "--limit", "1", "-o", "json")
	var offers []pricing.Offer
	if err := json.Unmarshal([]byte(o.stdout), &offers); err != nil || len(offers) != 1 || offers[0].Provider != "static" || offers[0].Source != "file" {
		t.Fatalf("cheapest H100 after refresh = %+v (%v); want the static 0.5/h box", offers, err)
	}
	// A second refresh with the file now broken fails with exit 1 and keeps the price.
	if err := os.WriteFile(prices, []byte("[[offers]]\nprice = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, db, false, "--config", cfg, "refresh")
	if r.code != 1 || !strings.Contains(r.stderr, "static") {
		t.Errorf("refresh of a broken file: exit %d, %q; want 1 naming static", r.code, r.stderr)
	}
	o = runCLI(t, db, false, "offers", "--provider", "static", "-o", "json")
	if err := json.Unmarshal([]byte(o.stdout), &offers); err != nil || len(offers) != 1 {
		t.Errorf("after a failed refresh static offers = %+v; want the last good one kept", offers)
	}
	if r := runCLI(t, db, false, "refresh", "--provider", "nope"); r.code != 2 {
		t.Errorf("refresh --provider nope: exit %d; want 2", r.code)
	}
}
