package primeintellect

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

const (
	testKey = "pi_test_key_0123456789"
	keyEnv  = "PICKER_TEST_PRIME_KEY"
	route   = "GET /api/v1/availability/gpus"
)

var clock = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// server answers like api.primeintellect.ai: Bearer key required; the page body is
// testdata/availability_gpus_page.json (both offers, totalCount 2) unless a test sets
// another.
func server() *providertest.Routes {
	return &providertest.Routes{
		Files: map[string]string{route: "testdata/availability_gpus_page.json"},
		Auth:  func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+testKey },
	}
}

// pagedServer serves the fixture's offers one per page (page_size honoured as 1 would
// be), each page saying totalCount 2, as the API pages a long list.
func pagedServer(t testing.TB) *providertest.Routes {
	t.Helper()
	b, err := os.ReadFile("testdata/availability_gpus_page.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := server()
	s.Hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		items := []json.RawMessage{}
		if n >= 1 && n <= len(doc.Items) {
			items = doc.Items[n-1 : n]
		}
		json.NewEncoder(w).Encode(map[string]any{"items": items, "totalCount": len(doc.Items)})
		return true
	}
	return s
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

func mkOffer(region, typ, model string, count, mem, vcpus, ram, price float64) pricing.Offer {
	return pricing.Offer{Provider: Name, Region: region, InstanceType: typ, GPUModel: model, GPUCount: count,
		GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: ram, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD",
		ObservedAt: clock, Source: pricing.SourceAPI, Available: pricing.AvailableNow}
}

// Worked out by hand from testdata/availability_gpus_page.json: H100_80GB on a PCIe
// socket is the H100-PCIE; prices.onDemand is the whole offer's; stock "Available" and
// "Low" both have capacity. The Hyperstack offer's vCPU and RAM (180, 180) are what
// the API says, though Hyperstack lists 28 vCPU / 180 GB for n3-H100x1.
var want = []pricing.Offer{
	mkOffer("CANADA-1", "hyperstack:n3-H100x1:1x", "H100-PCIE", 1, 80, 180, 180, 1.9),
	mkOffer("US-KS-2", "runpod:NVIDIA-H100-PCIe:1x", "H100-PCIE", 1, 80, 16, 251, 2.69),
}

func TestFetch(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	for _, tt := range []struct {
		name  string
		srv   func(testing.TB) *providertest.Routes
		cfg   Config
		want  []pricing.Offer
		pages int
	}{
		{"one page", func(testing.TB) *providertest.Routes { return server() }, Config{}, want, 1},
		{"one offer a page", pagedServer, Config{}, want, 2},
		{"regions filter", pagedServer, Config{Common: providers.Common{Regions: []string{"US-KS-2"}}}, want[1:], 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.srv(t)
			snap, err := setup(t, s, tt.cfg).Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			providertest.DiffOffers(t, snap.Offers, tt.want)
			if len(snap.Warnings) != 0 {
				t.Errorf("Warnings = %q", snap.Warnings)
			}
			if s.Requests() != tt.pages {
				t.Errorf("%d requests, want %d pages", s.Requests(), tt.pages)
			}
			if q := url.Values(s.Last(route).Query); q.Get("page_size") != "100" || q.Get("page") != strconv.Itoa(tt.pages) {
				t.Errorf("last query %v; want page %d of page_size 100", q, tt.pages)
			}
			providertest.CheckSnapshot(t, snap)
			t.Logf("fixture: %s", providertest.Tally(snap.Offers))
		})
	}
}

// The EXACT doc offer alone, then varied the ways the wire format allows: a 2-GPU box
// whose gpuMemory is its total, Community Cloud's own price, a spot offer, no stock.
func TestOfferVariants(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	item, err := os.ReadFile("testdata/availability_gpus_item_exact.json")
	if err != nil {
		t.Fatal(err)
	}
	exact := string(item)
	box := strings.NewReplacer(`"gpuCount": 1`, `"gpuCount": 2`, `"gpuMemory": 80`, `"gpuMemory": 160`, `"onDemand": 1.9`, `"onDemand": 3.8`, `"cloudId": "n3-H100x1"`, `"cloudId": "n3-H100x2"`).Replace(exact)
	community := strings.NewReplacer(`"secure_cloud"`, `"community_cloud"`, `"communityPrice": null`, `"communityPrice": 1.49`).Replace(exact)
	spot := strings.NewReplacer(`"isSpot": null`, `"isSpot": true`, `"onDemand": 1.9`, `"onDemand": 0.95`, `"stockStatus": "Available"`, `"stockStatus": "Unavailable"`).Replace(exact)
	s := server()
	s.SetBody(route, `{"items": [`+exact+`,`+box+`,`+community+`,`+spot+`], "totalCount": 4}`)
	snap, err := setup(t, s, Config{}).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	h := func(typ string, count, price float64) pricing.Offer {
		return mkOffer("CANADA-1", typ, "H100-PCIE", count, 80, 180, 180, price)
	}
	sp := h("hyperstack:n3-H100x1:1x", 1, 0.95)
	sp.Purchase, sp.Available = pricing.Spot, pricing.SoldOut
	providertest.DiffOffers(t, snap.Offers, []pricing.Offer{
		h("hyperstack:n3-H100x1:1x", 1, 1.9),
		h("hyperstack:n3-H100x2:2x", 2, 3.8),
		h("hyperstack:n3-H100x1:1x:community", 1, 1.49),
		sp,
	})
	providertest.CheckSnapshot(t, snap)
}

func TestErrors(t *testing.T) {
	b, err := os.ReadFile("testdata/availability_gpus_page.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	for _, tt := range []struct {
		name, env, body, want string
		code                  pricing.Code
	}{
		{name: "key unset", env: "-", want: "primeintellect: no API key: environment variable " + keyEnv + " is unset or empty", code: pricing.Invalid},
		{name: "key refused", env: "wrong", want: "primeintellect: availability page 1: the API refused the key read from " + keyEnv, code: pricing.Invalid},
		{name: "truncated", env: testKey, body: body[:strings.Index(body, `"onDemand": 2.69`)+12], want: "primeintellect: availability page 1: truncated JSON body: ends inside items[1].prices.onDemand", code: pricing.Unavailable},
		{name: "prices missing", env: testKey, body: `{"items": [{"cloudId": "x", "provider": "runpod", "gpuType": "H100_80GB", "gpuCount": 1}], "totalCount": 1}`, want: "primeintellect: items[0] (runpod x): prices is missing", code: pricing.Unavailable},
		{name: "totalCount missing", env: testKey, body: `{"items": []}`, want: "primeintellect: availability page 1: totalCount is missing", code: pricing.Unavailable},
		// A flaky replica's empty answer is a failure: the last good prices stay.
		{name: "empty", env: testKey, body: `{"items": [], "totalCount": 0}`, want: "primeintellect: the API listed no GPU offers", code: pricing.Unavailable},
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
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, pagedServer(t), Config{}) })
}

func TestProgressPages(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	_, log := providertest.FetchProgress(t, setup(t, pagedServer(t), Config{}), "requests", 1)
	if got := log.Pages(); !reflect.DeepEqual(got, map[string]int{"availability": 2}) {
		t.Errorf("pages = %v, want availability: 2", got)
	}
}

func TestDescriptor(t *testing.T) {
	providertest.CheckDescriptor(t, Descriptor, Name, providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Prime Intellect dashboard, API keys (Availability: Read)"},
		Config{}, Config{Common: providers.Common{Endpoint: "ftp://x"}})
}

// BenchmarkFetch is one refresh's fetch of the fixtures, one offer a page (two pages),
// from a local fake API (issue 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	b.Setenv(keyEnv, testKey)
	srv := providertest.Serve(b, pagedServer(b))
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: keyEnv}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}
