package static

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/providertest"
)

func TestFetchCSVAndTOML(t *testing.T) {
	p := New(Config{Files: []string{"testdata/prices.csv", "testdata/prices.toml"}})
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// prices.csv: dgx-a100 on-demand; h100x8 on-demand and spot. prices.toml: one box, on-demand and spot.
	type want struct {
		gpu      string
		count    float64
		mem      float64
		purchase pricing.Purchase
		price    float64
		observed string
	}
	wants := map[string]want{
		"dgx-a100/on-demand":    {"A100-80GB", 8, 80, pricing.OnDemand, 12.5, "2026-11-01"},
		"h100x8/on-demand":      {"H100", 8, 80, pricing.OnDemand, 18, "2026-10-15"},
		"h100x8/spot":           {"H100", 8, 80, pricing.Spot, 9.5, "2026-10-15"},
		"rtx4090-box/on-demand": {"RTX4090", 2, 24, pricing.OnDemand, 0.9, "2026-11-20"}, // memory from the GPU catalog
		"rtx4090-box/spot":      {"RTX4090", 2, 24, pricing.Spot, 0.4, "2026-11-20"},
	}
	if len(snap.Offers) != len(wants) {
		t.Fatalf("got %d offers; want %d: %+v", len(snap.Offers), len(wants), snap.Offers)
	}
	for _, o := range snap.Offers {
		w, ok := wants[o.InstanceType+"/"+string(o.Purchase)]
		if !ok {
			t.Errorf("unexpected offer %s", o.Key())
			continue
		}
		if o.Provider != Name || o.Source != pricing.SourceFile || o.GPUModel != w.gpu || o.GPUCount != w.count || o.GPUMemGiB != w.mem || o.PriceUSDHr != w.price || o.ObservedAt.Format("2006-01-02") != w.observed {
			t.Errorf("offer %s = %+v; want %+v", o.Key(), o, w)
		}
	}
}

func TestFetchErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	header := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date\n"
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"bad price", write("bad.csv", header+"static,r,,t1,A100,1,40,8,64,1.0,,2026-01-01\nstatic,r,,t2,A100,1,40,8,64,abc,,2026-01-01\n"), []string{"bad.csv:3", "abc"}},
		{"unknown toml key", write("bad.toml", "[[offers]]\nregion = \"x\"\ninstance_typ = \"y\"\n"), []string{"bad.toml:3", "instance_typ"}},
		{"missing gpu", write("nogpu.toml", "[[offers]]\ninstance_type = \"y\"\nprice_usd_hr = 1.0\n"), []string{"nogpu.toml", "gpu_model"}},
		{"no price", write("noprice.toml", "[[offers]]\ninstance_type = \"y\"\ngpu_model = \"L4\"\n"), []string{"noprice.toml", "price_usd_hr"}},
		{"missing file", filepath.Join(dir, "nope.csv"), []string{"nope.csv"}},
		{"unknown extension", write("p.xlsx", ""), []string{"p.xlsx", ".csv or .toml"}},
		{"empty", write("empty.toml", "# nothing\n"), []string{"no offers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Files: []string{tt.file}}).Fetch(context.Background())
			if err == nil {
				t.Fatal("Fetch succeeded; want an error")
			}
			if pricing.ErrorCode(err) != pricing.Invalid {
				t.Errorf("code = %q; want invalid", pricing.ErrorCode(err))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDuplicateAcrossFiles(t *testing.T) {
	_, err := New(Config{Files: []string{"testdata/prices.csv", "testdata/prices.csv"}}).Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "also in") {
		t.Fatalf("Fetch(same file twice) = %v; want a duplicate-offer error", err)
	}
}

func TestObservedDefaultsToModTime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(p, []byte("[[offers]]\ninstance_type = \"x\"\ngpu_model = \"L4\"\nprice_usd_hr = 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	offers, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) != 1 || !offers[0].ObservedAt.Equal(mt) {
		t.Fatalf("offers = %+v; want one observed at %v", offers, mt)
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providers.Provider {
		return New(Config{Files: []string{"testdata/prices.csv", "testdata/prices.toml"}})
	})
}
