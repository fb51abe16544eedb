package shadeform

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

const (
	testKey = "sf_test_key_0123456789"
	keyEnv  = "PICKER_TEST_SHADEFORM_KEY"
	route   = "GET /v1/instances/types"
)

var clock = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// server answers like api.shadeform.ai: X-API-KEY required, the types from testdata.
func server() *providertest.Routes {
	return &providertest.Routes{
		Files: map[string]string{route: "testdata/instances_types.json"},
		Auth:  func(r *http.Request) bool { return r.Header.Get("X-API-KEY") == testKey },
	}
}

func setup(t *testing.T, s *providertest.Routes, cfg Config) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint = srv.URL
	cfg.APIKeyEnv = keyEnv
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, nil), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offer(region, typ, model string, count, mem, vcpus, ram float64, purchase pricing.Purchase, price float64, avail pricing.Availability) pricing.Offer {
	return pricing.Offer{Provider: Name, Region: region, InstanceType: typ, GPUModel: model, GPUCount: count,
		GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: ram, Purchase: purchase, PriceUSDHr: price, Currency: "USD",
		ObservedAt: clock, Source: pricing.SourceAPI, Available: avail}
}

// Worked out by hand from testdata/instances_types.json: hourly_price is cents for the
// whole instance (1400 -> 14.00, 210 -> 2.10); the spot entry's "1.50" is dollars; one
// offer per availability entry, available as the entry says.
var want = []pricing.Offer{
	offer("houston-usa-1", "denvr:H100_sxm5x8", "H100", 8, 80, 208, 940, pricing.OnDemand, 14, pricing.AvailableNow),
	offer("us-central-1", "hyperstack:A6000", "A6000", 1, 48, 8, 58, pricing.OnDemand, 2.1, pricing.AvailableNow),
	offer("us-central-2", "hyperstack:A6000", "A6000", 1, 48, 8, 58, pricing.OnDemand, 2.1, pricing.SoldOut),
	offer("us-central-1", "hyperstack:A6000", "A6000", 1, 48, 8, 58, pricing.Spot, 1.5, pricing.AvailableNow),
}

func TestFetch(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	for _, tt := range []struct {
		name        string
		cfg         Config
		want        []pricing.Offer
		wantRegions []string
	}{
		{"every cloud and region", Config{}, want, nil},
		{"clouds filter", Config{Clouds: []string{"Hyperstack"}}, want[1:], nil},
		{"regions filter", Config{Common: providers.Common{Regions: []string{"us-central-1"}}}, []pricing.Offer{want[1], want[3]}, []string{"us-central-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := setup(t, server(), tt.cfg).Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			providertest.DiffOffers(t, snap.Offers, tt.want)
			if !reflect.DeepEqual(snap.Regions, tt.wantRegions) || len(snap.Warnings) != 0 {
				t.Errorf("Regions = %v (want %v), warnings %q", snap.Regions, tt.wantRegions, snap.Warnings)
			}
			providertest.CheckSnapshot(t, snap)
			t.Logf("fixture: %s", providertest.Tally(snap.Offers))
		})
	}
}

func TestPCIeH100AndSpotWithoutPrice(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	s := server()
	s.SetBody(route, `{"instance_types": [{"cloud": "lambdalabs", "shade_instance_type": "H100", "cloud_instance_type": "gpu_1x_h100_pcie",
  "configuration": {"memory_in_gb": 200, "storage_in_gb": 512, "vcpus": 26, "num_gpus": 1, "gpu_type": "H100", "interconnect": "pcie", "vram_per_gpu_in_gb": 80},
  "hourly_price": 249, "availability": [{"region": "us-south-1", "available": true, "rental_type": "on_demand"},
   {"region": "us-south-1", "available": true, "rental_type": "spot"}]}]}`)
	snap, err := setup(t, s, Config{}).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	providertest.DiffOffers(t, snap.Offers, []pricing.Offer{offer("us-south-1", "lambdalabs:H100", "H100-PCIE", 1, 80, 26, 200, pricing.OnDemand, 2.49, pricing.AvailableNow)})
	if w := []string{"shadeform: lambdalabs:H100: spot in us-south-1 has no hourly_price; skipped"}; !reflect.DeepEqual(snap.Warnings, w) {
		t.Errorf("Warnings = %q, want %q", snap.Warnings, w)
	}
}

func TestErrors(t *testing.T) {
	b, err := os.ReadFile("testdata/instances_types.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	for _, tt := range []struct {
		name, env, body, want string
		code                  pricing.Code
	}{
		{name: "key unset", env: "-", want: "shadeform: no API key: environment variable " + keyEnv + " is unset or empty", code: pricing.Invalid},
		{name: "key refused", env: "wrong", want: "shadeform: instance types: the API refused the key read from " + keyEnv, code: pricing.Invalid},
		{name: "truncated", env: testKey, body: body[:strings.Index(body, `"hourly_price": 210`)+17], want: "shadeform: instance types: truncated JSON body: ends inside instance_types[1].hourly_price", code: pricing.Unavailable},
		{name: "price missing", env: testKey, body: strings.Replace(body, `"hourly_price": 1400,`, ``, 1), want: "shadeform: instance_types[0] (denvr:H100_sxm5x8): hourly_price is missing", code: pricing.Unavailable},
		{name: "instance_types missing", env: testKey, body: `{}`, want: "shadeform: instance types: instance_types is missing", code: pricing.Unavailable},
		{name: "none", env: testKey, body: `{"instance_types": []}`, want: "shadeform: the API listed no GPU offers", code: pricing.Unavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(keyEnv, tt.env)
			if tt.env == "-" {
				os.Unsetenv(keyEnv)
			}
			s := server()
			if tt.body != "" {
				s.SetBody(route, tt.body)
			}
			_, err := setup(t, s, Config{}).Fetch(context.Background())
			providertest.WantError(t, err, tt.want, tt.code, testKey)
		})
	}
}

func TestConformance(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, server(), Config{}) })
}

func TestProgress(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	s := server()
	_, log := providertest.FetchProgress(t, setup(t, s, Config{}), "requests", 1)
	if done := log.DoneParts(); !reflect.DeepEqual(done, []string{"instance types"}) || s.Requests() != 1 {
		t.Errorf("parts done %v, %d requests; want the one instance types request", done, s.Requests())
	}
}

func TestDescriptor(t *testing.T) {
	providertest.CheckDescriptor(t, Descriptor, Name, providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Shadeform platform, Settings, API keys"},
		Config{}, Config{Common: providers.Common{Endpoint: "ftp://x"}})
}

// BenchmarkFetch is one refresh's fetch of the fixtures from a local fake API (issue
// 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	b.Setenv(keyEnv, testKey)
	srv := providertest.Serve(b, server())
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: keyEnv}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}
