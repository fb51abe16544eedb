package main

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// gcpWithDisks is gcpFixtures with a fourth ListSkus page: the gcp adapter's EXACT
// Persistent Disk SKUs (providers/gcp/testdata/skus_pd_capacity.json) with their
// serviceRegions set to us-central1, where the fixtures price GPUs.
func gcpWithDisks(t *testing.T) string {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "providers", "gcp", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pd := bytes.ReplaceAll(read("skus_pd_capacity.json"), []byte(`"us-east4"`), []byte(`"us-central1"`))
	pages := [][]byte{read("skus_page1.json"), read("skus_page2.json"),
		bytes.Replace(read("skus_page3.json"), []byte(`"nextPageToken": ""`), []byte(`"nextPageToken": "pd-page"`), 1), pd}
	rest, _ := url.Parse(gcpFixtures(t))
	proxy := httputil.NewSingleHostReverseProxy(rest)
	return providertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/services/6F81-5844-456A/skus" {
			proxy.ServeHTTP(w, r)
			return
		}
		tok := r.URL.Query().Get("pageToken")
		for i, p := range pages {
			prev := ""
			if i > 0 {
				var v struct {
					NextPageToken string `json:"nextPageToken"`
				}
				_ = json.Unmarshal(pages[i-1], &v)
				prev = v.NextPageToken
			}
			if (i == 0 && tok == "") || (i > 0 && prev != "" && prev == tok) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(p)
				return
			}
		}
		http.NotFound(w, r)
	})).URL
}

// TestRefreshStoresDiskPricesThroughPickerFetch: `picker refresh` of gcp in picker-fetch
// reads the Persistent Disk prices from the SKUs it lists (asked for by the refresh, sent
// back in the summary), stores them with their time, `picker recommend` prices the job's
// disk at the stored pd-ssd price, and `picker providers` shows the read.
func TestRefreshStoresDiskPricesThroughPickerFetch(t *testing.T) {
	bin := providertest.BuildFetch(t)
	cfg := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(cfg, []byte("[providers.gcp]\nendpoint = \""+gcpWithDisks(t)+"\"\nproject = \"p1\"\nregions = [\"us-central1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PICKER_FETCH": bin}
	db := tempDB(t)
	if r := runCLIEnv(t, env, "--db", db, "--config", cfg, "-q", "refresh", "--provider", "gcp"); r.code != 0 {
		t.Fatalf("refresh: exit %d, %s", r.code, r.stderr)
	}
	r := runCLIEnv(t, env, "--db", db, "--config", cfg, "providers")
	if !strings.Contains(r.stdout, "spot/storage: gcp: 0 spot bands, 1 storage prices, read ") {
		t.Errorf("providers: %s; want gcp's disk price read", r.stdout)
	}
	r = runCLIEnv(t, env, "--db", db, "--config", cfg, "recommend", "--model", "llama-2-7b", "--task", "lora", "--tokens", "1e8",
		"--provider", "gcp", "--region", "us-central1", "--dataset-gb", "100", "--top", "1", "-o", "json")
	var out struct {
		Offers []struct {
			BilledHours float64 `json:"billed_hours"`
			Bill        struct {
				DiskUSD     float64 `json:"disk_usd"`
				DiskGiB     float64 `json:"disk_gib"`
				DiskProduct string  `json:"disk_product"`
				DiskSource  string  `json:"disk_source"`
			} `json:"bill"`
		} `json:"offers"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || len(out.Offers) != 1 {
		t.Fatalf("recommend: exit %d %.300s %s", r.code, r.stdout, r.stderr)
	}
	b, h := out.Offers[0].Bill, out.Offers[0].BilledHours
	if b.DiskProduct != "pd-ssd" || !strings.Contains(b.DiskSource, "Cloud Billing Catalog") || math.Abs(b.DiskUSD-b.DiskGiB*0.187*h/730) > 0.001 {
		t.Errorf("bill %+v over %v h; want the stored pd-ssd price, $0.187/GiB-month", b, h)
	}
}
