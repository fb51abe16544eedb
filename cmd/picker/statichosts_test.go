package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// staticHostsHeader is a price file's header with the host-fact columns.
const staticHostsHeader = "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date," +
	"reliability,max_cuda,driver,net_up_mbps,net_down_mbps,disk_gb,verification\n"

// TestStaticHostFacts: a user's price file states host facts in the host columns
// (CSV) or keys (TOML); a refresh stores them, `offers -o json` and `offers -v` show
// them, recommend excludes the old-CUDA host and --min-reliability leaves out the
// flaky one; a bad value fails the refresh (exit 1, as any static file the refresh
// cannot read: TestStaticPriceFiles) naming the file, line and column, and the stored
// prices stay.
func TestStaticHostFacts(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.csv")
	good := staticHostsHeader +
		"static,lab,,host-a,H100,1,80,16,128,1.00,,,0.99,12.4,550.54.15,800,900,500,verified\n" +
		"static,lab,,host-b,H100,1,80,16,128,0.50,,,0.90,12.8,570.124.06,,,,unverified\n" +
		"static,lab,,host-c,H100,1,80,16,128,0.25,,,,11.8,,,,,\n" +
		"static,lab,,plain,H100,1,80,16,128,2.00,,,,,,,,,\n"
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(prices, good)
	cfg := filepath.Join(dir, "c.toml")
	write(cfg, fmt.Sprintf("[providers.static]\nfiles = [%q]\n", prices))
	db := tempDB(t)
	cli := func(args ...string) result {
		return runCLI(t, db, false, append([]string{"--config", cfg}, args...)...)
	}
	if r := cli("refresh", "--provider", "static"); r.code != 0 {
		t.Fatalf("refresh: exit %d: %s", r.code, r.stderr)
	}
	hosts := func() map[string]pricing.Host {
		t.Helper()
		r := cli("offers", "--provider", "static", "-o", "json")
		var offers []pricing.Offer
		if err := json.Unmarshal([]byte(r.stdout), &offers); r.code != 0 || err != nil {
			t.Fatalf("offers: exit %d, %v: %s", r.code, err, r.stderr)
		}
		out := map[string]pricing.Host{}
		for _, o := range offers {
			out[o.InstanceType] = o.Host
		}
		return out
	}
	want := map[string]pricing.Host{
		"host-a": {Reliability: 0.99, MaxCUDA: 12.4, Driver: "550.54.15", NetUpMbps: 800, NetDownMbps: 900, DiskGB: 500, Verification: pricing.HostVerified},
		"host-b": {Reliability: 0.9, MaxCUDA: 12.8, Driver: "570.124.06", Verification: pricing.HostUnverified},
		"host-c": {MaxCUDA: 11.8},
		"plain":  {},
	}
	if got := hosts(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored host facts\n%v\nwant\n%v", got, want)
	}
	if r := cli("offers", "--provider", "static", "-v"); r.code != 0 || !strings.Contains(r.stdout, "RELIABILITY") || !strings.Contains(r.stdout, "550.54.15") {
		t.Errorf("offers -v: exit %d, no host columns:\n%s%s", r.code, r.stdout, r.stderr)
	}
	type answer struct {
		Offers []struct {
			InstanceType string `json:"instance_type"`
		} `json:"offers"`
		Excluded []recommend.Exclusion `json:"excluded"`
	}
	rec := func(extra ...string) answer {
		t.Helper()
		r := cli(append([]string{"recommend", "--model", "llama-2-7b", "--task", "qlora", "--provider", "static", "--top", "10", "-o", "json"}, extra...)...)
		var out answer
		if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil {
			t.Fatalf("recommend %v: exit %d, %v: %s", extra, r.code, err, r.stderr)
		}
		return out
	}
	types := func(rec answer) string {
		var s []string
		for _, f := range rec.Offers {
			s = append(s, f.InstanceType)
		}
		return strings.Join(s, ",")
	}
	all := rec()
	if got := types(all); got != "host-b,host-a,plain" {
		t.Errorf("recommend offers %s; want host-b,host-a,plain (host-c's CUDA 11.8 is too old)", got)
	}
	if len(all.Excluded) != 1 || all.Excluded[0].Code != recommend.ExclOldCUDA || all.Excluded[0].Offers != 1 {
		t.Errorf("excluded %+v; want H100's one old-cuda host", all.Excluded)
	}
	if got := types(rec("--min-reliability", "0.95")); got != "host-a,plain" {
		t.Errorf("--min-reliability 0.95: offers %s; want host-a,plain", got)
	}

	// Bad values: the refresh fails naming the file, line and column; nothing stored changes.
	for _, c := range []struct{ col, cell, row string }{
		{"reliability", "98", "static,lab,,host-x,H100,1,80,16,128,1,,,98,12.4,,,,,\n"},
		{"max_cuda", "abc", "static,lab,,host-x,H100,1,80,16,128,1,,,,abc,,,,,\n"},
		{"max_cuda", "120", "static,lab,,host-x,H100,1,80,16,128,1,,,,120,,,,,\n"},
		{"driver", "latest", "static,lab,,host-x,H100,1,80,16,128,1,,,,,latest,,,,\n"},
		{"net_down_mbps", "-5", "static,lab,,host-x,H100,1,80,16,128,1,,,,,,,-5,,\n"},
		{"disk_gb", "5e9", "static,lab,,host-x,H100,1,80,16,128,1,,,,,,,,5e9,\n"},
		{"verification", "trusted", "static,lab,,host-x,H100,1,80,16,128,1,,,,,,,,,trusted\n"},
	} {
		write(prices, good+c.row)
		r := cli("refresh", "--provider", "static")
		if where := prices + ":6: " + c.col; r.code != 1 || !strings.Contains(r.stdout+r.stderr, where+` "`+c.cell+`"`) {
			t.Errorf("%s %q: exit %d, output %q %q; want 1 naming %s", c.col, c.cell, r.code, r.stdout, r.stderr, where)
		}
		if got := hosts(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the failed refresh (%s) the stored offers are\n%v", c.col, got)
		}
	}

	// TOML states the same facts by key.
	tomlPath := filepath.Join(dir, "prices.toml")
	write(cfg, fmt.Sprintf("[providers.static]\nfiles = [%q]\n", tomlPath))
	write(tomlPath, "[[offers]]\nregion = \"lab\"\ninstance_type = \"host-t\"\ngpu_model = \"H100\"\nprice_usd_hr = 1.5\n"+
		"reliability = 0.97\nmax_cuda = 12.2\ndriver = \"535.183.01\"\nnet_up_mbps = 100\nnet_down_mbps = 200\ndisk_gb = 300\nverification = \"verified\"\n")
	if r := cli("refresh", "--provider", "static"); r.code != 0 {
		t.Fatalf("refresh TOML: exit %d: %s", r.code, r.stderr)
	}
	wantT := pricing.Host{Reliability: 0.97, MaxCUDA: 12.2, Driver: "535.183.01", NetUpMbps: 100, NetDownMbps: 200, DiskGB: 300, Verification: pricing.HostVerified}
	if got := hosts(); len(got) != 1 || got["host-t"] != wantT {
		t.Errorf("TOML host facts %v; want host-t %+v", got, wantT)
	}
	write(tomlPath, "[[offers]]\nregion = \"lab\"\ninstance_type = \"host-t\"\ngpu_model = \"H100\"\nprice_usd_hr = 1.5\nreliability = 1.5\n")
	if r := cli("refresh", "--provider", "static"); r.code != 1 || !strings.Contains(r.stdout+r.stderr, tomlPath+":1 (host-t): reliability 1.5: ") {
		t.Errorf("TOML reliability 1.5: exit %d, output %q %q; want 1 naming %s:1 and reliability", r.code, r.stdout, r.stderr, tomlPath)
	}
}
