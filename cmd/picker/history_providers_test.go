package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// `picker history --gpu-model` spans every offer of the model, so its table names each
// row's provider and instance (and its GPU count and price per GPU-hour), grouped by
// offer: ordered by time alone, rows of different providers read as one price moving
// (issue 26: an H100 "drop" from $12.29 to $1.29 was two providers' snapshot dates).
func TestHistoryByGPUModelTable(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "history", "--gpu-model", "H100")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if want := "PROVIDER\tREGION\tINSTANCE\tGPUS\tPURCHASE\tVALID FROM\tVALID TO\t$/HR\t$/GPU-H"; lines[0] != want {
		t.Fatalf("header %q, want %q", lines[0], want)
	}
	var rows []historyRow
	if err := json.Unmarshal([]byte(runCLI(t, db, false, "history", "--gpu-model", "H100", "-o", "json").stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if len(lines)-1 != len(rows) || len(rows) == 0 {
		t.Fatalf("%d table rows, %d JSON rows", len(lines)-1, len(rows))
	}
	var table []string
	providers := map[string]bool{}
	prev := ""
	for _, l := range lines[1:] {
		c := strings.Split(l, "\t")
		if len(c) != 9 {
			t.Fatalf("row %q has %d cells, want 9", l, len(c))
		}
		if c[0] < prev {
			t.Errorf("row %q after a %s row: the rows are not grouped by provider", l, prev)
		}
		prev = c[0]
		providers[c[0]] = true
		table = append(table, c[0]+" "+c[2]+" "+c[4]+" "+c[5])
	}
	for _, h := range rows {
		if k := h.Provider + " " + h.InstanceType + " " + h.Purchase + " " + h.ValidFrom.Format(time.RFC3339); !slices.Contains(table, k) {
			t.Errorf("the table lacks %s", k)
		}
	}
	if len(providers) < 5 {
		t.Errorf("H100 rows name %d providers, want the snapshot's many", len(providers))
	}
	// The per-GPU price of an 8-GPU instance is an eighth of its price.
	for _, l := range lines[1:] {
		if c := strings.Split(l, "\t"); c[0] == "aws" && c[2] == "p5.48xlarge" && c[3] == "8" && c[8] != "6.88" {
			t.Errorf("aws p5.48xlarge per GPU-hour %s, want 6.88 (55.04 / 8)", c[8])
		}
	}
	// An offer's own history keeps its table: provider and instance are the question.
	r = runCLI(t, db, false, "history", "--provider", "aws", "--instance-type", "p5.48xlarge")
	if !strings.HasPrefix(r.stdout, "REGION\tPURCHASE\tVALID FROM\tVALID TO\t$/HR\n") {
		t.Errorf("an offer's history: %q", r.stdout)
	}
}

// `picker providers`: a provider whose prices are still the embedded snapshot's was
// never refreshed live, whatever run the seed recorded; its last success is "never"
// (null, with snapshot_date), and the last attempt is the newest live refresh with its
// outcome, or never. The table, JSON and CSV agree.
func TestProvidersLastSuccessAndAttempt(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.csv")
	csvText := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date\n" +
		"static,lab,,box1,H100,1,80,16,128,0.5,,\n"
	if err := os.WriteFile(prices, []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	observed := fixedNow.Add(-5 * time.Hour)
	if err := os.Chtimes(prices, observed, observed); err != nil {
		t.Fatal(err)
	}
	// lambda is enabled without its API key: its live refresh fails.
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[providers.static]\nfiles = [%q]\n[providers.lambda]\nenabled = true\napi_key_env = \"PICKER_TEST_NO_SUCH_KEY\"\n", prices)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := tempDB(t)
	if r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", "static"); r.code != 0 {
		t.Fatalf("refresh static: exit %d: %s", r.code, r.stderr)
	}
	if r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", "lambda"); r.code != 1 {
		t.Fatalf("refresh lambda without a key: exit %d, want 1: %s", r.code, r.stderr)
	}

	var rows []providerRow
	if err := json.Unmarshal([]byte(runCLI(t, db, false, "--config", cfg, "providers", "-o", "json").stdout), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]providerRow{}
	for _, r := range rows {
		got[r.Name] = r
	}
	aws, lambda, static := got["aws"], got["lambda"], got["static"]
	awsDate := time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC) // the snapshot's aws rows
	if aws.LastSuccess != nil || aws.SnapshotDate == nil || !aws.SnapshotDate.Equal(awsDate) || aws.LastAttempt != nil || aws.LastAttemptStatus != "" {
		t.Errorf("aws (snapshot only) = last success %v, snapshot %v, attempt %v %q; want never, 2026-07-20, never",
			aws.LastSuccess, aws.SnapshotDate, aws.LastAttempt, aws.LastAttemptStatus)
	}
	if lambda.LastSuccess != nil || lambda.SnapshotDate == nil || lambda.LastAttempt == nil || lambda.LastAttemptStatus != "failed" || lambda.ConsecutiveFailures != 1 {
		t.Errorf("lambda (one failed live refresh) = last success %v, snapshot %v, attempt %v %q; want never, the snapshot's date, a failed attempt",
			lambda.LastSuccess, lambda.SnapshotDate, lambda.LastAttempt, lambda.LastAttemptStatus)
	}
	if static.LastSuccess == nil || static.SnapshotDate != nil || static.LastAttempt == nil || !static.LastAttempt.Equal(*static.LastSuccess) || static.LastAttemptStatus != "ok" {
		t.Errorf("static (refreshed) = last success %v, snapshot %v, attempt %v %q; want its refresh as both",
			static.LastSuccess, static.SnapshotDate, static.LastAttempt, static.LastAttemptStatus)
	}

	table := runCLI(t, db, false, "--config", cfg, "providers").stdout
	lines := strings.Split(table, "\n")
	if want := "PROVIDER\tENABLED\tNEEDS\tLAST SUCCESS\tLAST ATTEMPT\tAGE\tOFFERS\tSOURCE\tFAILURES\tLAST ERROR"; lines[0] != want {
		t.Fatalf("header %q, want %q", lines[0], want)
	}
	cells := func(name string) []string {
		for _, l := range lines {
			if c := strings.Split(l, "\t"); c[0] == name {
				return c
			}
		}
		t.Fatalf("no %s row in\n%s", name, table)
		return nil
	}
	if c := cells("aws"); c[3] != "never" || c[4] != "never" {
		t.Errorf("aws row %q: want never refreshed, never attempted", c)
	}
	if c := cells("lambda"); c[2] != "api key $PICKER_TEST_NO_SUCH_KEY" || c[3] != "never" || c[4] != lambda.LastAttempt.Format(time.RFC3339)+" failed" {
		t.Errorf("lambda row %q: want never refreshed, the failed attempt", c)
	}
	if c := cells("static"); c[3] != static.LastSuccess.Format(time.RFC3339) || c[4] != c[3]+" ok" {
		t.Errorf("static row %q: want its refresh as last success and attempt", c)
	}

	recs, err := csv.NewReader(strings.NewReader(runCLI(t, db, false, "--config", cfg, "providers", "-o", "csv").stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := "name,adapter,enabled,last_success,age,offers,sources,last_error,consecutive_failures,last_attempt,last_attempt_status,snapshot_date,needs"; strings.Join(recs[0], ",") != want {
		t.Errorf("CSV header %v, want %s", recs[0], want)
	}
	for _, rec := range recs[1:] {
		if rec[0] == "aws" && (rec[3] != "" || rec[9] != "" || rec[10] != "" || rec[11] != awsDate.Format(time.RFC3339)) {
			t.Errorf("aws CSV row %q", rec)
		}
		if rec[0] == "lambda" && (rec[3] != "" || rec[10] != "failed") {
			t.Errorf("lambda CSV row %q", rec)
		}
	}
}
