package fluidstack

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

const (
	testKey = "fs_test_key_0123456789"
	keyEnv  = "PICKER_TEST_FLUIDSTACK_KEY"
)

var clock = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// fsServer answers GET /list_available_configurations as platform.fluidstack.io does:
// the api-key header is required (401 with the SDK's Message body otherwise); the body
// is testdata/list_available_configurations.json unless body is set.
type fsServer struct {
	body     string
	status   int
	requests atomic.Int32
}

func (s *fsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Method != http.MethodGet || r.URL.Path != "/list_available_configurations" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("api-key") != testKey {
		b, _ := os.ReadFile("testdata/error_unauthorized.json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write(b)
		return
	}
	if s.status != 0 {
		w.WriteHeader(s.status)
		w.Write([]byte(`{"message": "Internal Server Error"}`))
		return
	}
	if s.body != "" {
		w.Write([]byte(s.body))
		return
	}
	b, _ := os.ReadFile("testdata/list_available_configurations.json")
	w.Write(b)
}

func setup(t *testing.T, s *fsServer, cfg Config) *Provider {
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

func offer(region, typ, model string, count, mem, price float64) pricing.Offer {
	return pricing.Offer{Provider: Name, Region: region, InstanceType: typ, GPUModel: model, GPUCount: count,
		GPUMemGiB: mem, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD",
		ObservedAt: clock, Source: pricing.SourceAPI, Available: pricing.AvailableNow}
}

// Worked out by hand from testdata/list_available_configurations.json: price_per_gpu_hr
// times the count, for each count and each region listed.
//
//	H100_SXM5_80GB  "2.89"  1,2,4,8  NORWAY, CANADA  -> H100, 80 GiB
//	RTX_A6000_48GB  "0.80"  1,2,4,8  SWEDEN          -> A6000, 48 GiB
var want = []pricing.Offer{
	offer("NORWAY", "H100_SXM5_80GB::1", "H100", 1, 80, 2.89),
	offer("NORWAY", "H100_SXM5_80GB::2", "H100", 2, 80, 5.78),
	offer("NORWAY", "H100_SXM5_80GB::4", "H100", 4, 80, 11.56),
	offer("NORWAY", "H100_SXM5_80GB::8", "H100", 8, 80, 23.12),
	offer("CANADA", "H100_SXM5_80GB::1", "H100", 1, 80, 2.89),
	offer("CANADA", "H100_SXM5_80GB::2", "H100", 2, 80, 5.78),
	offer("CANADA", "H100_SXM5_80GB::4", "H100", 4, 80, 11.56),
	offer("CANADA", "H100_SXM5_80GB::8", "H100", 8, 80, 23.12),
	offer("SWEDEN", "RTX_A6000_48GB::1", "A6000", 1, 48, 0.8),
	offer("SWEDEN", "RTX_A6000_48GB::2", "A6000", 2, 48, 1.6),
	offer("SWEDEN", "RTX_A6000_48GB::4", "A6000", 4, 48, 3.2),
	offer("SWEDEN", "RTX_A6000_48GB::8", "A6000", 8, 48, 6.4),
}

func TestFetch(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		want        []pricing.Offer
		wantRegions []string
	}{
		{"every region", Config{}, want, nil},
		{"regions filter", Config{Common: providers.Common{Regions: []string{"SWEDEN", "CANADA"}}}, append(append([]pricing.Offer(nil), want[4:8]...), want[8:]...), []string{"CANADA", "SWEDEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(keyEnv, testKey)
			snap, err := setup(t, &fsServer{}, tt.cfg).Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if !reflect.DeepEqual(snap.Offers, tt.want) {
				t.Errorf("offers:\n got  %+v\n want %+v", snap.Offers, tt.want)
			}
			if !reflect.DeepEqual(snap.Regions, tt.wantRegions) {
				t.Errorf("Regions = %v, want %v", snap.Regions, tt.wantRegions)
			}
			if len(snap.Warnings) != 0 {
				t.Errorf("Warnings = %q", snap.Warnings)
			}
			providertest.CheckSnapshot(t, snap)
			t.Logf("fixture: %s", providertest.Tally(snap.Offers))
		})
	}
}

func TestErrors(t *testing.T) {
	fixture, err := os.ReadFile("testdata/list_available_configurations.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(fixture)
	tests := []struct {
		name     string
		env      string // "-": unset
		srv      *fsServer
		want     string
		code     pricing.Code
		requests int32
	}{
		{name: "key unset", env: "-", want: "fluidstack: no API key: environment variable " + keyEnv + " is unset or empty", code: pricing.Invalid},
		{name: "key refused", env: "wrong", want: "fluidstack: configurations: the API refused the key read from " + keyEnv + ": GET http://", code: pricing.Invalid, requests: 1},
		{name: "truncated", env: testKey, srv: &fsServer{body: body[:strings.Index(body, `"2.89"`)+3]},
			want: "fluidstack: configurations: truncated JSON body: ends inside [0].price_per_gpu_hr", code: pricing.Unavailable, requests: 1},
		{name: "price not a number", env: testKey, srv: &fsServer{body: strings.Replace(body, `"2.89"`, `"call us"`, 1)},
			want: "fluidstack: configurations: malformed JSON at price_per_gpu_hr: want float64, got value \"call us\"", code: pricing.Unavailable, requests: 1},
		{name: "price missing", env: testKey, srv: &fsServer{body: strings.Replace(body, `"price_per_gpu_hr": "0.80",`, ``, 1)},
			want: "fluidstack: configurations[1] (RTX_A6000_48GB): price_per_gpu_hr is missing", code: pricing.Unavailable, requests: 1},
		{name: "empty list", env: testKey, srv: &fsServer{body: `[]`}, want: "fluidstack: the API listed no GPU offers", code: pricing.Unavailable, requests: 1},
		{name: "null", env: testKey, srv: &fsServer{body: `null`}, want: "fluidstack: configurations: the answer is null", code: pricing.Unavailable, requests: 1},
		{name: "500 until the bound", env: testKey, srv: &fsServer{status: http.StatusInternalServerError},
			want: "HTTP 500 Internal Server Error", code: pricing.Unavailable, requests: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(keyEnv, tt.env)
			if tt.env == "-" {
				os.Unsetenv(keyEnv)
			}
			s := tt.srv
			if s == nil {
				s = &fsServer{}
			}
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
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, &fsServer{}, Config{}) })
}

func TestProgress(t *testing.T) {
	t.Setenv(keyEnv, testKey)
	s := &fsServer{}
	_, log := providertest.FetchProgress(t, setup(t, s, Config{}), "requests", 1)
	if done := log.DoneParts(); !reflect.DeepEqual(done, []string{"configurations"}) || s.requests.Load() != 1 {
		t.Errorf("parts done %v, %d requests; want the one configurations request", done, s.requests.Load())
	}
}

func TestDescriptor(t *testing.T) {
	providertest.CheckDescriptor(t, Descriptor, Name, providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Fluidstack console, API keys"},
		Config{}, Config{Common: providers.Common{Endpoint: "ftp://x"}})
}

// BenchmarkFetch is one refresh's fetch of the fixtures from a local fake API (issue
// 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	b.Setenv(keyEnv, testKey)
	srv := providertest.Serve(b, &fsServer{})
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: keyEnv}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}
