package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// TestRecommendCSVBill: `recommend -o csv` ends each row with the JSON's bill parts
// (compute, boot, restart, disk, egress), the spot band and the capacity word, the
// same figures as `-o json` of the same command; an offer its provider reported sold
// out says false, one it reported nothing about is empty.
func TestRecommendCSVBill(t *testing.T) {
	db := tempDB(t)
	args := []string{"recommend", "--model", "llama-2-7b", "--task", "lora", "--tokens", "1e8", "--purchase", "any", "--top", "100",
		"--provider", "verda", "--dataset-gb", "50"}
	type fit struct {
		Provider, Region, Zone string
		InstanceType           string `json:"instance_type"`
		Purchase               string
		Available              *bool
		Bill                   map[string]any
		SpotRisk               *struct{ Band string } `json:"spot_risk"`
	}
	run := func() ([]fit, [][]string) {
		t.Helper()
		j := runCLI(t, db, false, append(args, "-o", "json")...)
		var out struct{ Offers []fit }
		if j.code != 0 || json.Unmarshal([]byte(j.stdout), &out) != nil || len(out.Offers) < 2 {
			t.Fatalf("json: exit %d, %.400s %s", j.code, j.stdout, j.stderr)
		}
		c := runCLI(t, db, false, append(args, "-o", "csv")...)
		recs, err := csv.NewReader(strings.NewReader(c.stdout)).ReadAll()
		if c.code != 0 || err != nil || len(recs) != len(out.Offers)+1 {
			t.Fatalf("csv: exit %d, %d rows (%v); want %d", c.code, len(recs), err, len(out.Offers)+1)
		}
		if !slices.Equal(recs[0], fitColumns) {
			t.Fatalf("header %v; want %v", recs[0], fitColumns)
		}
		return out.Offers, recs[1:]
	}
	col := func(row []string, name string) string { return row[slices.Index(fitColumns, name)] }
	check := func(fits []fit, rows [][]string) {
		t.Helper()
		spot := 0
		for i, f := range fits {
			row := rows[i]
			if col(row, "instance_type") != f.InstanceType || col(row, "region") != f.Region || col(row, "purchase") != f.Purchase {
				t.Fatalf("row %d is %v; the JSON's offer %d is %s %s %s", i, row[:10], i, f.InstanceType, f.Region, f.Purchase)
			}
			if f.Bill == nil {
				t.Fatalf("offer %d has no bill with --tokens", i)
			}
			for _, k := range []string{"compute_usd", "boot_usd", "restart_usd", "disk_usd", "disk_gib", "egress_usd", "upload_gb"} {
				want, _ := f.Bill[k].(float64)
				got, err := strconv.ParseFloat(col(row, k), 64)
				if err != nil || math.Abs(got-want) > 1e-3 {
					t.Errorf("%s %s: %s %q; the JSON's %v", f.InstanceType, f.Purchase, k, col(row, k), want)
				}
			}
			wantBand := ""
			if f.SpotRisk != nil {
				wantBand, spot = f.SpotRisk.Band, spot+1
			}
			if col(row, "spot_band") != wantBand {
				t.Errorf("%s %s: spot_band %q; the JSON's %q", f.InstanceType, f.Purchase, col(row, "spot_band"), wantBand)
			}
			wantAvail := ""
			if f.Available != nil {
				wantAvail = fmt.Sprint(*f.Available)
			}
			if col(row, "available") != wantAvail {
				t.Errorf("%s %s: available %q; the JSON's %q", f.InstanceType, f.Purchase, col(row, "available"), wantAvail)
			}
		}
		if spot == 0 {
			t.Errorf("no spot offer among %d with --purchase any: the band column is untested", len(fits))
		}
	}
	fits, rows := run()
	check(fits, rows)
	if d, _ := strconv.ParseFloat(col(rows[0], "disk_usd"), 64); d <= 0 {
		t.Errorf("disk_usd %v with --dataset-gb 50; want a priced disk", d)
	}

	// Mark the best offer sold out: it ranks after the launchable ones (--top shows every
	// fit of the provider) and says false.
	f := fits[0]
	o := pricing.Offer{Provider: f.Provider, Region: f.Region, Zone: f.Zone, InstanceType: f.InstanceType, Purchase: pricing.Purchase(f.Purchase), Available: pricing.SoldOut}
	storeCapacity(t, db, o)
	fits, rows = run()
	check(fits, rows)
	sold := 0
	for _, row := range rows {
		if col(row, "available") == "false" {
			sold++
			if col(row, "instance_type") != o.InstanceType || col(row, "region") != o.Region {
				t.Errorf("sold out: %v; want only %s in %s", row[:4], o.InstanceType, o.Region)
			}
		}
	}
	if last := rows[len(rows)-1]; sold != 1 || col(last, "available") != "false" {
		t.Errorf("%d rows say sold out, the last %v; want the one marked, ranked after the launchable %d (--top covers them all)", sold, last[:4], len(rows)-1)
	}
}

// storeCapacity stores o's capacity word (o.Available) in the database at db, as a
// refresh of o's provider does.
func storeCapacity(t *testing.T, db string, o pricing.Offer) {
	t.Helper()
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.WriteCapacity(t.Context(), o.Provider, nil, []pricing.Offer{o}, fixedNow); err != nil {
		t.Fatal(err)
	}
}
