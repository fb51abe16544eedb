package static

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestYearOneDateRefused: a price file's date of year 1 (Go's zero time, which the store
// took for "unstated" and replaced with the refresh time) or any date before 2000 is an
// error naming the file, in CSV and TOML; a tiny price is dropped by Finalize's floor
// (issue 30).
func TestYearOneDateRefused(t *testing.T) {
	dir := t.TempDir()
	header := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date\n"
	for name, body := range map[string]string{
		"year1.csv":  header + "static,r,,t1,A100,1,40,8,64,1.0,,0001-01-01\n",
		"1999.csv":   header + "static,r,,t1,A100,1,40,8,64,1.0,,1999-12-31\n",
		"year1.toml": "[[offers]]\nregion = \"r\"\ninstance_type = \"t1\"\ngpu_model = \"A100\"\ngpu_count = 1\nprice_usd_hr = 1.0\nobserved = 0001-01-01\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := New(Config{Files: []string{p}}).Fetch(context.Background())
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "before 2000") {
			t.Errorf("%s: %v; want the date refused", name, err)
		}
	}
	p := filepath.Join(dir, "tiny.csv")
	os.WriteFile(p, []byte(header+"static,r,,t1,A100,1,40,8,64,1e-300,,2026-01-01\nstatic,r,,t2,A100,1,40,8,64,1.0,,2026-01-01\n"), 0o644)
	snap, err := New(Config{Files: []string{p}}).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Offers) != 1 || snap.Offers[0].InstanceType != "t2" || !strings.Contains(strings.Join(snap.Warnings, " "), "plausible floor") {
		t.Errorf("offers %d, warnings %q; want the 1e-300 one dropped", len(snap.Offers), snap.Warnings)
	}
}
