package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/providertest"
)

// gpuCloud is one of issue 29's REST adapters as `picker refresh` meets it: a fake API
// answering from the adapter's own fixtures (providers/NAME/testdata, from
// shared/reference/providers) in its wire format, the key it wants, and what a refresh
// of those fixtures must store.
type gpuCloud struct {
	name   string
	files  map[string]string // route -> fixture under providers/
	auth   func(r *http.Request) bool
	keyEnv string // "" when the adapter needs no key
	// pageTwo is the fixture answered for ?page=2 (DigitalOcean's next link).
	pageTwo string
	// offers is how many offers the fixtures give (worked out in each adapter's test);
	// instance, region and price name one of them, and from/to the fixture text that
	// changes its price for the second refresh, whose history then has two intervals.
	offers                  int
	instance, region        string
	from, to                string
	before, after           float64
	changeRoute, changeFile string // the route whose body changes, from this fixture
}

const gpuCloudKey = "gpu-cloud-secret-key-0123456789"

func gpuClouds() []gpuCloud {
	bearer := func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+gpuCloudKey }
	return []gpuCloud{
		{
			name: "digitalocean", keyEnv: "PICKER_TEST_DO_TOKEN", auth: bearer,
			files:   map[string]string{"GET /v2/sizes": "digitalocean/testdata/sizes_doc_example_exact.json"},
			pageTwo: "digitalocean/testdata/sizes_gpu.json",
			offers:  2, instance: "gpu-h100x8-640gb", region: "nyc1", before: 23.92, after: 21.52,
			changeFile: "digitalocean/testdata/sizes_gpu.json",
			from:       `"price_hourly": 23.92`, to: `"price_hourly": 21.52`,
		},
		{
			name: "cudo", files: map[string]string{
				"GET /v1/vms/machine-types": "cudo/testdata/vms_machine_types.json",
				"GET /v1/vms/gpu-models":    "cudo/testdata/vms_gpu_models.json",
			},
			offers: 6, instance: "epyc-rome-rtx-a5000_1x4v8gb", region: "no-luster-1", before: 0.5556, after: 0.4956,
			changeRoute: "GET /v1/vms/machine-types", changeFile: "cudo/testdata/vms_machine_types.json",
			from: `"0.520000"`, to: `"0.460000"`,
		},
		{
			name: "fluidstack", keyEnv: "PICKER_TEST_FLUIDSTACK_KEY",
			auth:   func(r *http.Request) bool { return r.Header.Get("api-key") == gpuCloudKey },
			files:  map[string]string{"GET /list_available_configurations": "fluidstack/testdata/list_available_configurations.json"},
			offers: 12, instance: "H100_SXM5_80GB::8", region: "NORWAY", before: 23.12, after: 20.72,
			changeRoute: "GET /list_available_configurations", changeFile: "fluidstack/testdata/list_available_configurations.json",
			from: `"2.89"`, to: `"2.59"`,
		},
		{
			name: "shadeform", keyEnv: "PICKER_TEST_SHADEFORM_KEY",
			auth:   func(r *http.Request) bool { return r.Header.Get("X-API-KEY") == gpuCloudKey },
			files:  map[string]string{"GET /v1/instances/types": "shadeform/testdata/instances_types.json"},
			offers: 4, instance: "denvr:H100_sxm5x8", region: "houston-usa-1", before: 14, after: 13.2,
			changeRoute: "GET /v1/instances/types", changeFile: "shadeform/testdata/instances_types.json",
			from: `"hourly_price": 1400`, to: `"hourly_price": 1320`,
		},
		{
			name: "primeintellect", keyEnv: "PICKER_TEST_PRIME_KEY", auth: bearer,
			files:  map[string]string{"GET /api/v1/availability/gpus": "primeintellect/testdata/availability_gpus_page.json"},
			offers: 2, instance: "runpod:NVIDIA-H100-PCIe:1x", region: "US-KS-2", before: 2.69, after: 2.39,
			changeRoute: "GET /api/v1/availability/gpus", changeFile: "primeintellect/testdata/availability_gpus_page.json",
			from: `"onDemand": 2.69`, to: `"onDemand": 2.39`,
		},
	}
}

// TestRefreshGPUCloudsEndToEnd: `picker refresh --provider NAME` against each fake API
// lands the fixtures' offers in the store as live offers; a second refresh with one
// price changed adds an interval, which `picker history` shows after the first.
func TestRefreshGPUCloudsEndToEnd(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "providers", path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range gpuClouds() {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{}
			for route, f := range c.files {
				files[route] = filepath.Join("..", "..", "providers", f)
			}
			s := &providertest.Routes{Files: files, Auth: c.auth}
			var page2 atomic.Value
			if c.pageTwo != "" {
				page2.Store(read(c.pageTwo))
				s.Hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
					if r.URL.Query().Get("page") != "2" {
						return false
					}
					w.Write([]byte(page2.Load().(string)))
					return true
				}
			}
			srv := providertest.Serve(t, s)
			section := fmt.Sprintf("[providers.%s]\nenabled = true\nendpoint = %q\n", c.name, srv.URL)
			if c.keyEnv != "" {
				t.Setenv(c.keyEnv, gpuCloudKey)
				section += fmt.Sprintf("api_key_env = %q\n", c.keyEnv)
			}
			cfg := filepath.Join(t.TempDir(), "c.toml")
			if err := os.WriteFile(cfg, []byte(section), 0o644); err != nil {
				t.Fatal(err)
			}
			db := tempDB(t)
			refresh := func() {
				t.Helper()
				r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", c.name, "-o", "json")
				if r.code != 0 {
					t.Fatalf("refresh exit %d: %s", r.code, r.stderr)
				}
				if strings.Contains(r.stdout+r.stderr, gpuCloudKey) {
					t.Fatal("the API key was printed")
				}
				var res []struct {
					Provider   string `json:"provider"`
					OffersSeen int    `json:"offers_seen"`
					Error      string `json:"error"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 || res[0].OffersSeen != c.offers || res[0].Error != "" {
					t.Fatalf("refresh results %q (%v); want %d offers seen", r.stdout, err, c.offers)
				}
			}
			refresh()
			var offers []pricing.Offer
			o := runCLI(t, db, false, "offers", "--provider", c.name, "-o", "json")
			if err := json.Unmarshal([]byte(o.stdout), &offers); err != nil {
				t.Fatalf("offers: %v (%s)", err, o.stderr)
			}
			live := 0
			for _, of := range offers {
				if of.Source == pricing.SourceAPI {
					live++
				}
			}
			// CPU-only or not-yet-known GPUs aside, every current offer is the refresh's:
			// the snapshot's rows of this provider were closed (no region split).
			if live != c.offers || len(offers) != c.offers {
				t.Errorf("%d offers stored, %d live; want the refresh's %d, all live", len(offers), live, c.offers)
			}
			changed := strings.Replace(read(c.changeFile), c.from, c.to, 1)
			if c.pageTwo != "" {
				page2.Store(changed)
			} else {
				s.SetBody(c.changeRoute, changed)
			}
			refresh()
			h := runCLI(t, db, false, "history", "--provider", c.name, "--instance-type", c.instance, "--region", c.region, "-o", "json")
			var rows []historyRow
			if err := json.Unmarshal([]byte(h.stdout), &rows); err != nil {
				t.Fatalf("history: %v (exit %d, %s)", err, h.code, h.stderr)
			}
			if len(rows) != 2 || rows[0].PriceUSDHr != c.before || rows[0].ValidTo == nil || rows[1].PriceUSDHr != c.after || rows[1].ValidTo != nil {
				t.Errorf("history of %s in %s = %+v; want %v closed, then %v current", c.instance, c.region, rows, c.before, c.after)
			}
		})
	}
}
