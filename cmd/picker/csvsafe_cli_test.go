package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 30: a provider's instance type or region that starts with =, +, - or @ is read
// by a spreadsheet as a formula. Every CSV picker prints quotes such text (export's and
// offers' did; recommend's and history's wrote it raw), so no cell of a provider string
// opens as a formula.
func TestCSVOutputsAreSpreadsheetSafe(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.csv")
	csvText := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date\n" +
		"static,@lab,,\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",H100,1,80,16,128,0.5,,\n"
	if err := os.WriteFile(prices, []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[providers.static]\nfiles = [%q]\n", prices)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := tempDB(t)
	if r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", "static"); r.code != 0 {
		t.Fatalf("refresh static: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"recommend", "--model", "llama-2-7b", "--task", "qlora", "--provider", "static", "-o", "csv"},
		{"history", "--gpu-model", "H100", "--provider", "static", "-o", "csv"},
		{"offers", "--provider", "static", "-o", "csv"},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := runCLI(t, db, false, append([]string{"--config", cfg}, args...)...)
			if r.code != 0 {
				t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
			}
			recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
			if err != nil {
				t.Fatalf("%v: not CSV: %v\n%s", args, err, r.stdout)
			}
			if len(recs) < 2 {
				t.Fatalf("%v: no rows:\n%s", args, r.stdout)
			}
			seen := 0
			for _, rec := range recs[1:] {
				for _, cell := range rec {
					if cell != "" && strings.ContainsRune("=@", rune(cell[0])) {
						t.Errorf("%v: cell %q opens as a formula", args, cell)
					}
					if cell == "'=HYPERLINK(\"http://x\",\"y\")" || cell == "'@lab" {
						seen++
					}
				}
			}
			if seen < 2 {
				t.Errorf("%v: the instance type and region are not both printed quoted:\n%s", args, r.stdout)
			}
		})
	}
}
