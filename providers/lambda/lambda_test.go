package lambda

import (
	"context"
	"errors"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

const testKey = "secret_test_key_0123456789"

var clock = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// lambdaServer answers GET /api/v1/instance-types like cloud.lambda.ai: a Bearer key is
// required (the error envelope otherwise), the body is testdata/instance_types.json
// unless body is set; hook may answer a request itself.
type lambdaServer struct {
	body     string
	hook     func(w http.ResponseWriter, attempt int) bool
	requests atomic.Int32
}

func (s *lambdaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.requests.Add(1))
	if r.Method != http.MethodGet || r.URL.Path != "/api/v1/instance-types" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		b, _ := os.ReadFile("testdata/error_invalid_api_key.json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write(b)
		return
	}
	if s.hook != nil && s.hook(w, n) {
		return
	}
	if s.body != "" {
		w.Write([]byte(s.body))
		return
	}
	b, _ := os.ReadFile("testdata/instance_types.json")
	w.Write(b)
}

func setup(t *testing.T, s *lambdaServer, cfg Config, sl *providertest.Sleeps) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint = srv.URL
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "PICKER_TEST_LAMBDA_KEY"
	}
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, sl), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// offer is an offer in a region listed in regions_with_capacity_available: available.
func offer(region, typ, model string, count, mem, vcpus, ram, price float64) pricing.Offer {
	return pricing.Offer{Provider: "lambda", Region: region, InstanceType: typ, GPUModel: model, GPUCount: count,
		GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: ram, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD",
		ObservedAt: clock, Source: pricing.SourceAPI, Available: pricing.AvailableNow}
}

// soldOut is an offer include_unavailable lists in a region without capacity.
func soldOut(o pricing.Offer) pricing.Offer {
	o.Available = pricing.SoldOut
	return o
}

// Worked out by hand from testdata/instance_types.json (types in name order, regions
// with capacity in name order; cents / 100 = USD per hour for the whole instance):
//
//	gpu_1x_a10            75 c  -> 0.75   "A10 (24 GB PCIe)"   us-east-1, us-west-1
//	gpu_1x_gh200          149 c -> 1.49   "GH200 (96 GB)"      us-east-3
//	gpu_1x_h100_pcie      249 c -> 2.49   "H100 (80 GB PCIe)"  us-south-1   -> H100-PCIE
//	gpu_1x_rtx6000        50 c  -> 0.50   "RTX 6000 (24 GB)"   us-south-1   -> RTX6000 (Turing)
//	gpu_8x_a100_80gb_sxm4 1432 c -> 14.32 no capacity anywhere -> no offer by default
//	gpu_8x_b200_sxm6      4792 c -> 47.92 "B200 (180 GB SXM6)" us-east-1
//	gpu_8x_h100_sxm5      2392 c -> 23.92 "H100 (80 GB SXM5)"  us-east-3    -> H100 (SXM)
var wantDefault = []pricing.Offer{
	offer("us-east-1", "gpu_1x_a10", "A10", 1, 24, 30, 200, 0.75),
	offer("us-west-1", "gpu_1x_a10", "A10", 1, 24, 30, 200, 0.75),
	offer("us-east-3", "gpu_1x_gh200", "GH200", 1, 96, 64, 432, 1.49),
	offer("us-south-1", "gpu_1x_h100_pcie", "H100-PCIE", 1, 80, 26, 200, 2.49),
	offer("us-south-1", "gpu_1x_rtx6000", "RTX6000", 1, 24, 14, 46, 0.50),
	offer("us-east-1", "gpu_8x_b200_sxm6", "B200", 8, 180, 208, 2900, 47.92),
	offer("us-east-3", "gpu_8x_h100_sxm5", "H100", 8, 80, 208, 1800, 23.92),
}

func TestFetch(t *testing.T) {
	// include_unavailable: every type in each of the 4 regions seen anywhere
	// (us-east-1, us-east-3, us-south-1, us-west-1): 7 types x 4 = 28 offers.
	var all []pricing.Offer
	for _, typ := range []struct {
		name, model          string
		count, mem, cpu, ram float64
		price                float64
	}{
		{"gpu_1x_a10", "A10", 1, 24, 30, 200, 0.75},
		{"gpu_1x_gh200", "GH200", 1, 96, 64, 432, 1.49},
		{"gpu_1x_h100_pcie", "H100-PCIE", 1, 80, 26, 200, 2.49},
		{"gpu_1x_rtx6000", "RTX6000", 1, 24, 14, 46, 0.50},
		{"gpu_8x_a100_80gb_sxm4", "A100-80GB", 8, 80, 240, 1800, 14.32},
		{"gpu_8x_b200_sxm6", "B200", 8, 180, 208, 2900, 47.92},
		{"gpu_8x_h100_sxm5", "H100", 8, 80, 208, 1800, 23.92},
	} {
		for _, r := range []string{"us-east-1", "us-east-3", "us-south-1", "us-west-1"} {
			o := offer(r, typ.name, typ.model, typ.count, typ.mem, typ.cpu, typ.ram, typ.price)
			// Available where the answer lists capacity (wantDefault), sold out elsewhere.
			if !slices.ContainsFunc(wantDefault, func(w pricing.Offer) bool { return w.Key() == o.Key() }) {
				o = soldOut(o)
			}
			all = append(all, o)
		}
	}
	tests := []struct {
		name        string
		cfg         Config
		want        []pricing.Offer
		wantRegions []string
	}{
		{"regions with capacity", Config{}, wantDefault, nil},
		{"include_unavailable", Config{IncludeUnavailable: true}, all, nil},
		{"regions filter", Config{Common: providers.Common{Regions: []string{"us-east-3"}}},
			[]pricing.Offer{wantDefault[2], wantDefault[6]}, []string{"us-east-3"}},
		{"regions filter with include_unavailable, a region nobody has capacity in",
			Config{Common: providers.Common{Regions: []string{"asia-northeast-1"}}, IncludeUnavailable: true},
			[]pricing.Offer{
				soldOut(offer("asia-northeast-1", "gpu_1x_a10", "A10", 1, 24, 30, 200, 0.75)),
				soldOut(offer("asia-northeast-1", "gpu_1x_gh200", "GH200", 1, 96, 64, 432, 1.49)),
				soldOut(offer("asia-northeast-1", "gpu_1x_h100_pcie", "H100-PCIE", 1, 80, 26, 200, 2.49)),
				soldOut(offer("asia-northeast-1", "gpu_1x_rtx6000", "RTX6000", 1, 24, 14, 46, 0.50)),
				soldOut(offer("asia-northeast-1", "gpu_8x_a100_80gb_sxm4", "A100-80GB", 8, 80, 240, 1800, 14.32)),
				soldOut(offer("asia-northeast-1", "gpu_8x_b200_sxm6", "B200", 8, 180, 208, 2900, 47.92)),
				soldOut(offer("asia-northeast-1", "gpu_8x_h100_sxm5", "H100", 8, 80, 208, 1800, 23.92)),
			}, []string{"asia-northeast-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PICKER_TEST_LAMBDA_KEY", testKey)
			snap, err := setup(t, &lambdaServer{}, tt.cfg, nil).Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			providertest.DiffOffers(t, snap.Offers, tt.want)
			if !reflect.DeepEqual(snap.Regions, tt.wantRegions) {
				t.Errorf("Regions = %v, want %v", snap.Regions, tt.wantRegions)
			}
			if len(snap.Warnings) != 0 {
				t.Errorf("Warnings = %q, want none", snap.Warnings)
			}
			providertest.CheckSnapshot(t, snap)
		})
	}
}

func TestErrors(t *testing.T) {
	fixture, err := os.ReadFile("testdata/instance_types.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(fixture)
	cut := strings.Index(body, `"price_cents_per_hour": 249`) + len(`"price_cents_per_hour": 2`)
	tests := []struct {
		name     string
		env      string // value of the key variable; "-" leaves it unset
		cfg      Config
		srv      *lambdaServer
		want     string
		code     pricing.Code
		requests int32
	}{
		{name: "API key variable unset", env: "-", want: "lambda: no API key: environment variable PICKER_TEST_LAMBDA_KEY is unset or empty", code: pricing.Invalid},
		{name: "API key variable empty", env: "", want: "environment variable PICKER_TEST_LAMBDA_KEY is unset or empty", code: pricing.Invalid},
		{name: "key refused", env: "wrong", want: "lambda: instance types: HTTP 401: global/invalid-api-key: API key is invalid, expired, or deleted. (the key is read from PICKER_TEST_LAMBDA_KEY)", code: pricing.Invalid, requests: 1},
		{name: "truncated body", env: testKey, srv: &lambdaServer{body: body[:cut]},
			want: "lambda: instance types: truncated JSON body: ends inside data.gpu_1x_h100_pcie.instance_type.price_cents_per_hour", code: pricing.Unavailable, requests: 1},
		{name: "price not a number", env: testKey, srv: &lambdaServer{body: strings.Replace(body, `"price_cents_per_hour": 75`, `"price_cents_per_hour": "seventy-five"`, 1)},
			want: "lambda: instance types: malformed JSON at data.instance_type.price_cents_per_hour", code: pricing.Unavailable, requests: 1},
		{name: "price missing", env: testKey, srv: &lambdaServer{body: strings.Replace(body, `"price_cents_per_hour": 75,`, ``, 1)},
			want: "lambda: instance type gpu_1x_a10: instance_type.price_cents_per_hour is missing", code: pricing.Unavailable, requests: 1},
		{name: "data missing", env: testKey, srv: &lambdaServer{body: `{"error": null}`},
			want: "lambda: instance types: data is missing", code: pricing.Unavailable, requests: 1},
		{name: "no instance types", env: testKey, srv: &lambdaServer{body: `{"data": {}}`},
			want: "lambda: the API listed no GPU instance types", code: pricing.Unavailable, requests: 1},
		{name: "everything sold out", env: testKey, srv: &lambdaServer{body: `{"data": {"gpu_1x_a10": {"instance_type": {"name": "gpu_1x_a10", "description": "1x A10 (24 GB PCIe)", "gpu_description": "A10 (24 GB PCIe)", "price_cents_per_hour": 75, "specs": {"vcpus": 30, "memory_gib": 200, "storage_gib": 1400, "gpus": 1}}, "regions_with_capacity_available": []}}}`},
			want: "lambda: no instance type has capacity in any region (1 sold out); set include_unavailable = true", code: pricing.Unavailable, requests: 1},
		{name: "500 until the bound", env: testKey, srv: &lambdaServer{hook: func(w http.ResponseWriter, _ int) bool {
			http.Error(w, `{"error": {"code": "provider/internal-error", "message": "boom"}}`, http.StatusInternalServerError)
			return true
		}}, want: "lambda: instance types: provider/internal-error: boom: GET http://", code: pricing.Unavailable, requests: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env == "-" {
				t.Setenv("PICKER_TEST_LAMBDA_KEY", "")
				os.Unsetenv("PICKER_TEST_LAMBDA_KEY")
			} else {
				t.Setenv("PICKER_TEST_LAMBDA_KEY", tt.env)
			}
			s := tt.srv
			if s == nil {
				s = &lambdaServer{}
			}
			_, err := setup(t, s, tt.cfg, nil).Fetch(context.Background())
			if err == nil {
				t.Fatal("Fetch succeeded; want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), testKey) || (tt.env != "" && tt.env != "-" && strings.Contains(err.Error(), "Bearer")) {
				t.Errorf("error %q leaks the key", err)
			}
			if c := pricing.ErrorCode(err); c != tt.code {
				t.Errorf("code %q, want %q", c, tt.code)
			}
			if got := s.requests.Load(); got != tt.requests {
				t.Errorf("requests = %d, want %d", got, tt.requests)
			}
		})
	}
}

func TestRetryAfterThenSuccess(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", testKey)
	s := &lambdaServer{hook: func(w http.ResponseWriter, n int) bool {
		if n > 1 {
			return false
		}
		w.Header().Set("Retry-After", "2")
		http.Error(w, `{"error": {"code": "global/rate-limited", "message": "slow down"}}`, http.StatusTooManyRequests)
		return true
	}}
	sl := &providertest.Sleeps{}
	snap, err := setup(t, s, Config{}, sl).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	providertest.DiffOffers(t, snap.Offers, wantDefault)
	if want := []time.Duration{2 * time.Second}; !reflect.DeepEqual(sl.Waits(), want) {
		t.Errorf("sleeps = %v, want %v", sl.Waits(), want)
	}
	if got := s.requests.Load(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
}

// TestUnknownGPU: a GPU the catalog lacks is kept under its raw name and reported.
func TestUnknownGPU(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", testKey)
	body := `{"data": {"gpu_1x_x900": {"instance_type": {"name": "gpu_1x_x900", "description": "1x X900 (64 GB)", "gpu_description": "X900 (64 GB)", "price_cents_per_hour": 199, "specs": {"vcpus": 16, "memory_gib": 128, "storage_gib": 512, "gpus": 1}}, "regions_with_capacity_available": [{"name": "us-west-1", "description": "California, USA"}]}}}`
	snap, err := setup(t, &lambdaServer{body: body}, Config{}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	providertest.DiffOffers(t, snap.Offers, []pricing.Offer{offer("us-west-1", "gpu_1x_x900", "X900 (64 GB)", 1, 64, 16, 128, 1.99)})
	if want := []string{`lambda: gpu_1x_x900: unknown GPU "X900 (64 GB)" kept as is`}; !reflect.DeepEqual(snap.Warnings, want) {
		t.Errorf("Warnings = %q, want %q", snap.Warnings, want)
	}
}

func TestConformance(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", testKey)
	providertest.Run(t, func(t *testing.T) providers.Provider {
		return setup(t, &lambdaServer{}, Config{}, nil)
	})
}

func TestCancelled(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", testKey)
	ctx, cancel := context.WithCancel(context.Background())
	s := &lambdaServer{hook: func(w http.ResponseWriter, _ int) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}}
	p := setup(t, s, Config{}, nil)
	p.client.Policy.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	if _, err := p.Fetch(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch error = %v, want context.Canceled", err)
	}
	if got := s.requests.Load(); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}
}

func TestDescriptor(t *testing.T) {
	if Descriptor.Name != "lambda" {
		t.Errorf("Name = %q", Descriptor.Name)
	}
	for _, cfg := range []any{Config{}, &Config{}} {
		if _, err := Descriptor.New(cfg); err != nil {
			t.Errorf("Descriptor.New(%T): %v", cfg, err)
		}
	}
	if _, err := Descriptor.New(struct{}{}); err == nil {
		t.Error("Descriptor.New(struct{}{}) succeeded; want a type error")
	}
	if _, err := New(Config{Common: providers.Common{Endpoint: "ftp://x"}}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("New with an ftp endpoint: %v, want an invalid-config error", err)
	}
}
