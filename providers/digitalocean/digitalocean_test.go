package digitalocean

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

const (
	testKey = "dop_v1_test_0123456789"
	keyEnv  = "PICKER_TEST_DO_TOKEN"
)

var clock = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// doServer answers GET /v2/sizes as api.digitalocean.com does: a Bearer token is
// required; page 1 is the EXACT doc example (testdata/sizes_doc_example_exact.json),
// whose links.pages.next is an absolute api.digitalocean.com URL for page 2, and page 2
// is testdata/sizes_gpu.json (no next link). pages overrides the bodies by page number.
type doServer struct {
	pages    map[string]string
	requests atomic.Int32
	mu       sync.Mutex
	queries  []string
}

func (s *doServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	s.queries = append(s.queries, r.URL.RawQuery)
	s.mu.Unlock()
	if r.Method != http.MethodGet || r.URL.Path != "/v2/sizes" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"id": "Unauthorized", "message": "Unable to authenticate you"}`))
		return
	}
	pg := r.URL.Query().Get("page")
	if b, ok := s.pages[pg]; ok {
		w.Write([]byte(b))
		return
	}
	file := map[string]string{"1": "testdata/sizes_doc_example_exact.json", "2": "testdata/sizes_gpu.json"}[pg]
	b, err := os.ReadFile(file)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Write(b)
}

func setup(t *testing.T, s *doServer, cfg Config) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint = srv.URL
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = keyEnv
	}
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, nil), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offer(region, slug, model string, count, mem, vcpus, ram, price float64) pricing.Offer {
	return pricing.Offer{Provider: Name, Region: region, InstanceType: slug, GPUModel: model, GPUCount: count,
		GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: ram, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD",
		ObservedAt: clock, Source: pricing.SourceAPI, Available: pricing.AvailableNow}
}

// Worked out by hand from the two pages: page 1's only size is a Basic Droplet that the
// doc example gives gpu_info (skipped, with a warning); page 2 has a CPU Droplet (no
// gpu_info) and two GPU sizes in nyc1. memory 1966080 MB = 1920 GiB; vram 640 GiB over
// 8 H100 = 80 each, 1536 over 8 MI300X = 192 each.
var want = []pricing.Offer{
	offer("nyc1", "gpu-h100x8-640gb", "H100", 8, 80, 160, 1920, 23.92),
	offer("nyc1", "gpu-mi300x8-1536gb", "MI300X", 8, 192, 160, 1920, 15.92),
}

func TestFetch(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	s := &doServer{}
	snap, err := setup(t, s, Config{}).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !reflect.DeepEqual(snap.Offers, want) {
		t.Errorf("offers:\n got  %+v\n want %+v", snap.Offers, want)
	}
	if w := []string{"digitalocean: s-1vcpu-1gb skipped: gpu_info on a size that is not a GPU Droplet (gpu-*)"}; !reflect.DeepEqual(snap.Warnings, w) {
		t.Errorf("Warnings = %q, want %q", snap.Warnings, w)
	}
	// The first page asks for 200 sizes; the second follows the doc's next link, pointed
	// at the test server.
	if w := []string{"page=1&per_page=200", "page=2&per_page=1"}; !reflect.DeepEqual(s.queries, w) {
		t.Errorf("queries = %q, want %q", s.queries, w)
	}
	providertest.CheckSnapshot(t, snap)
	t.Logf("fixture: %s", providertest.Tally(snap.Offers))
}

// A page-2 body in the fixture's shape with the cases the fixture lacks: a size listed
// in two regions, one with no region (not offered now: no offer), one the API says is
// not available (kept, marked unavailable), and the region filter.
const moreSizes = `{"sizes": [
 {"slug": "gpu-h100x1-80gb", "memory": 245760, "vcpus": 20, "disk": 720, "price_hourly": 3.39, "regions": ["nyc2", "tor1"], "available": true,
  "gpu_info": {"count": 1, "model": "nvidia_h100", "vram": {"amount": 80, "unit": "gib"}}},
 {"slug": "gpu-l40sx1-48gb", "memory": 65536, "vcpus": 8, "price_hourly": 1.57, "regions": [], "available": true,
  "gpu_info": {"count": 1, "model": "nvidia_l40s", "vram": {"amount": 48, "unit": "gib"}}},
 {"slug": "gpu-6000adax1-48gb", "memory": 65536, "vcpus": 8, "disk": 500, "price_hourly": 1.57, "regions": ["tor1"], "available": false,
  "gpu_info": {"count": 1, "model": "nvidia_rtx6000_ada", "vram": {"amount": 48, "unit": "gib"}}}
 ], "links": {}, "meta": {"total": 3}}`

func TestRegionsAndAvailability(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	h1 := func(region string) pricing.Offer {
		return offer(region, "gpu-h100x1-80gb", "H100", 1, 80, 20, 240, 3.39)
	}
	ada := offer("tor1", "gpu-6000adax1-48gb", "RTX6000-Ada", 1, 48, 8, 64, 1.57)
	ada.Available = pricing.SoldOut
	for _, tt := range []struct {
		name    string
		regions []string
		want    []pricing.Offer
	}{
		{"every region", nil, []pricing.Offer{h1("nyc2"), h1("tor1"), ada}},
		{"tor1 only", []string{"tor1"}, []pricing.Offer{h1("tor1"), ada}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := setup(t, &doServer{pages: map[string]string{"2": moreSizes}}, Config{Common: providers.Common{Regions: tt.regions}}).Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if !reflect.DeepEqual(snap.Offers, tt.want) {
				t.Errorf("offers:\n got  %+v\n want %+v", snap.Offers, tt.want)
			}
			if !reflect.DeepEqual(snap.Regions, tt.regions) {
				t.Errorf("Regions = %v, want %v", snap.Regions, tt.regions)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	gpu, err := os.ReadFile("testdata/sizes_gpu.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(gpu)
	loop := `{"sizes": [], "links": {"pages": {"next": "https://api.digitalocean.com/v2/sizes?page=2&per_page=1"}}}`
	tests := []struct {
		name     string
		env      string
		pages    map[string]string
		want     string
		code     pricing.Code
		requests int32
	}{
		{name: "token unset", env: "-", want: "digitalocean: no API key: environment variable " + keyEnv + " is unset or empty", code: pricing.Invalid},
		{name: "token refused", env: "wrong", want: "digitalocean: sizes page 1: the API refused the key read from " + keyEnv + ": GET http://", code: pricing.Invalid, requests: 1},
		{name: "truncated page 2", env: testKey, pages: map[string]string{"2": body[:strings.Index(body, `"price_hourly": 23.92`)+16]},
			want: "digitalocean: sizes page 2: truncated JSON body: ends inside sizes[1].price_hourly", code: pricing.Unavailable, requests: 2},
		{name: "price missing", env: testKey, pages: map[string]string{"2": strings.Replace(body, `"price_hourly": 15.92,`, ``, 1)},
			want: "digitalocean: size gpu-mi300x8-1536gb: price_hourly is missing", code: pricing.Unavailable, requests: 2},
		{name: "sizes missing", env: testKey, pages: map[string]string{"1": `{"links": {}}`},
			want: "digitalocean: sizes page 1: sizes is missing", code: pricing.Unavailable, requests: 1},
		{name: "next link loops", env: testKey, pages: map[string]string{"2": loop},
			want: "digitalocean: sizes: page token \"https://api.digitalocean.com/v2/sizes?pa…\" came back after 2 pages: the server's pagination loops", code: pricing.Unavailable, requests: 2},
		{name: "no GPU size", env: testKey, pages: map[string]string{"2": `{"sizes": [], "links": {}}`},
			want: "digitalocean: the API listed no GPU offers", code: pricing.Unavailable, requests: 2},
		{name: "every GPU size sold out", env: testKey, pages: map[string]string{"2": strings.NewReplacer(`["nyc2", "tor1"]`, `[]`, `["tor1"]`, `[]`).Replace(moreSizes)},
			want: "digitalocean: no valid offers among 3 listed", code: pricing.Unavailable, requests: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(keyEnv, tt.env)
			if tt.env == "-" {
				os.Unsetenv(keyEnv)
			}
			s := &doServer{pages: tt.pages}
			_, err := setup(t, s, Config{}).Fetch(context.Background())
			providertest.WantError(t, err, tt.want, tt.code, testKey)
			if got := s.requests.Load(); got != tt.requests {
				t.Errorf("requests = %d, want %d", got, tt.requests)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, &doServer{}, Config{}) })
}

func TestProgressPages(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	_, log := providertest.FetchProgress(t, setup(t, &doServer{}, Config{}), "requests", 1)
	if got := log.Pages(); !reflect.DeepEqual(got, map[string]int{"sizes": 2}) {
		t.Errorf("pages = %v, want sizes: 2", got)
	}
}

func TestDescriptor(t *testing.T) {
	providertest.CheckDescriptor(t, Descriptor, Name, providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "DigitalOcean control panel, API, Tokens (read scope)"},
		Config{}, Config{Common: providers.Common{Endpoint: "ftp://x"}})
}

// BenchmarkFetch is one refresh's fetch of the fixtures (two pages) from a local fake
// API (issue 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	b.Setenv(keyEnv, testKey)
	srv := providertest.Serve(b, &doServer{})
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: keyEnv}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}
