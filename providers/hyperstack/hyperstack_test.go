package hyperstack

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

var clock = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

const (
	keyEnv  = "PICKER_TEST_HYPERSTACK_KEY"
	testKey = "hs-test-key"
)

// newServer is the Infrahub API: the three GETs want header api_key (else the
// ErrorResponseModel body, testdata/error.json, with 401).
func newServer() *providertest.Routes {
	return &providertest.Routes{Files: map[string]string{
		"GET /core/flavors": "testdata/flavors.json", "GET /pricebook": "testdata/pricebook.json", "GET /core/stocks": "testdata/stocks.json",
	}, Denied: "testdata/error.json", Auth: func(r *http.Request) bool { return r.Header.Get("api_key") == testKey }}
}

func setup(t *testing.T, s *providertest.Routes, cfg Config) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint, cfg.APIKeyEnv = srv.URL, keyEnv
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, nil), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offer(typ, model string, count, mem, vcpus, ram float64, buy pricing.Purchase, price float64, avail pricing.Availability) pricing.Offer {
	return pricing.Offer{Provider: "hyperstack", Region: "CANADA-1", InstanceType: typ, GPUModel: model, GPUCount: count, GPUMemGiB: mem,
		VCPUs: vcpus, RAMGiB: ram, Purchase: buy, PriceUSDHr: price, Currency: "USD", ObservedAt: clock, Source: pricing.SourceAPI, Available: avail}
}

// Worked out by hand from testdata: price = gpu_count x the pricebook's value for the
// flavor's GPU (H100-80G-PCIe "1.90", RTX-A6000 "0.50", H100-80G-PCIe-spot "1.52"); the
// spot flavor is the same instance type bought as spot; availability from the stocks'
// configurations for the A6000 (1x 396, 2x 197, 8x 0), else the flavor's
// stock_available. The CPU flavor is not an offer.
var want = []pricing.Offer{
	offer("n3-H100x1", "H100-PCIE", 1, 80, 28, 180, pricing.OnDemand, 1.90, pricing.AvailableNow),
	offer("n3-RTX-A6000x1", "A6000", 1, 48, 28, 58, pricing.OnDemand, 0.50, pricing.AvailableNow),
	offer("n3-RTX-A6000x2", "A6000", 2, 48, 60, 116, pricing.OnDemand, 1.00, pricing.AvailableNow),
	offer("n3-RTX-A6000x8", "A6000", 8, 48, 252, 464, pricing.OnDemand, 4.00, pricing.SoldOut),
	offer("n3-H100x1", "H100-PCIE", 1, 80, 28, 180, pricing.Spot, 1.52, pricing.SoldOut),
}

func TestFetch(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	s := newServer()
	snap, err := setup(t, s, Config{}).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	providertest.DiffOffers(t, snap.Offers, want)
	if len(snap.Warnings) != 0 || snap.Regions != nil {
		t.Errorf("warnings %q, regions %v", snap.Warnings, snap.Regions)
	}
	providertest.CheckSnapshot(t, snap)
	if s.Requests() != 3 {
		t.Errorf("%d requests, want 3", s.Requests())
	}
}

func TestRegions(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	_, err := setup(t, newServer(), Config{Common: providers.Common{Regions: []string{"NORWAY-1"}}}).Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "hyperstack: the API listed no GPU offers") {
		t.Errorf("error %v; want no GPU offers in NORWAY-1 (the fixture has its CPU flavor only)", err)
	}
}

func TestErrors(t *testing.T) {
	b, _ := os.ReadFile("testdata/pricebook.json")
	book := string(b)
	for _, tt := range []struct {
		name, key, route, body, want string
		code                         pricing.Code
	}{
		{"no key", "", "", "", "hyperstack: no API key: environment variable " + keyEnv + " is unset or empty", pricing.Invalid},
		{"key refused", "wrong", "", "", "hyperstack: flavors: the API refused the key read from " + keyEnv, pricing.Invalid},
		{"flavors without data", testKey, "GET /core/flavors", `{"status": true}`, "hyperstack: flavors: data is missing", pricing.Unavailable},
		{"pricebook truncated", testKey, "GET /pricebook", book[:100], "hyperstack: pricebook: truncated JSON body", pricing.Unavailable},
		{"price a word", testKey, "GET /pricebook", strings.Replace(book, `"1.90"`, `"call us"`, 1), "hyperstack: pricebook: malformed JSON at value", pricing.Unavailable},
		{"stocks without stocks", testKey, "GET /core/stocks", `{}`, "hyperstack: stocks: stocks is missing", pricing.Unavailable},
		{"nothing priced", testKey, "GET /pricebook", `[]`, "hyperstack: no valid offers among 5 listed (see warnings: hyperstack: n3-H100x1: GPU H100-80G-PCIe is not in the pricebook; skipped", pricing.Unavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(keyEnv, tt.key)
			s := newServer()
			if tt.route != "" {
				s.SetBody(tt.route, tt.body)
			}
			_, err := setup(t, s, Config{}).Fetch(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tt.want)
			}
			if pricing.ErrorCode(err) != tt.code {
				t.Errorf("code %q, want %q", pricing.ErrorCode(err), tt.code)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, newServer(), Config{}) })
}

// BenchmarkFetch is one refresh's fetch of the fixtures (flavors, pricebook, stocks)
// from a local fake API (issue 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	b.Setenv(keyEnv, testKey)
	srv := providertest.Serve(b, newServer())
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: keyEnv}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}
