package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
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

const testKey = "rp_test_key_abcdef"

var clock = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// graphqlServer answers POST /graphql like api.runpod.io: it checks the request is a
// JSON GraphQL query for gpuTypes, records the Authorization header, and answers with
// testdata/gpu_types.json unless body is set; hook may answer a request itself.
type graphqlServer struct {
	body     string
	hook     func(w http.ResponseWriter, attempt int) bool
	requests atomic.Int32
	mu       sync.Mutex
	auth     []string
}

func (s *graphqlServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.requests.Add(1))
	s.mu.Lock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/graphql" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var req struct {
		Query string `json:"query"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &req); err != nil || !strings.Contains(req.Query, "gpuTypes") || !strings.Contains(req.Query, "lowestPrice(input: {gpuCount: 1})") {
		http.Error(w, `{"errors":[{"message":"bad request body"}]}`, http.StatusBadRequest)
		return
	}
	if a := r.Header.Get("Authorization"); a != "" && a != "Bearer "+testKey {
		http.Error(w, `{"errors":[{"message":"Unauthorized"}]}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.hook != nil && s.hook(w, n) {
		return
	}
	if s.body != "" {
		io.WriteString(w, s.body)
		return
	}
	f, _ := os.ReadFile("testdata/gpu_types.json")
	w.Write(f)
}

func setup(t *testing.T, s *graphqlServer, cfg Config, sl *providertest.Sleeps) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint = srv.URL
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "PICKER_TEST_RUNPOD_KEY"
	}
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, sl), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// expected offers from testdata/gpu_types.json, computed by hand: price = k x the
// per-GPU price, vCPUs = k x minVcpu, RAM = k x minMemory. Spot: the cloud's own
// secureSpotPrice/communitySpotPrice; without them, lowestPrice.minimumBidPrice goes to
// the cheaper cloud on demand.
//
//	RTX A5000  secure 0.27, community 0.16, no per-cloud spot, bid 0.16 -> community;
//	           maxGpuCount 2 -> 1, 2; 4 vCPU, 24 GiB per GPU
//	H100 SXM   secure 2.99 (spot 1.95), community 2.69 (spot 1.75); max 8 -> 1, 2, 4, 8;
//	           20 vCPU, 125 GiB per GPU
//	RTX 4090   secure 0.69, community 0.34, bid 0.29 -> community; max 2; no vCPU/RAM
//	A100 SXM   secure only 1.49, bid 1.29 -> secure; max 6 -> 1, 2, 4, 6; 16 vCPU, 117 GiB
//	H200 SXM   secure only 3.99, lowestPrice all null -> no spot; max 1
//	unknown    skipped
//
// columns: instance type, purchase, USD/h, GPU model, GPUs, GiB per GPU, vCPUs, RAM GiB
const wantTable = `
1x_RTX-A5000_SECURE     on-demand 0.27  RTXA5000  1 24  4   24
2x_RTX-A5000_SECURE     on-demand 0.54  RTXA5000  2 24  8   48
1x_RTX-A5000_COMMUNITY  on-demand 0.16  RTXA5000  1 24  4   24
1x_RTX-A5000_COMMUNITY  spot      0.16  RTXA5000  1 24  4   24
2x_RTX-A5000_COMMUNITY  on-demand 0.32  RTXA5000  2 24  8   48
2x_RTX-A5000_COMMUNITY  spot      0.32  RTXA5000  2 24  8   48
1x_H100-SXM_SECURE      on-demand 2.99  H100      1 80  20  125
1x_H100-SXM_SECURE      spot      1.95  H100      1 80  20  125
2x_H100-SXM_SECURE      on-demand 5.98  H100      2 80  40  250
2x_H100-SXM_SECURE      spot      3.9   H100      2 80  40  250
4x_H100-SXM_SECURE      on-demand 11.96 H100      4 80  80  500
4x_H100-SXM_SECURE      spot      7.8   H100      4 80  80  500
8x_H100-SXM_SECURE      on-demand 23.92 H100      8 80  160 1000
8x_H100-SXM_SECURE      spot      15.6  H100      8 80  160 1000
1x_H100-SXM_COMMUNITY   on-demand 2.69  H100      1 80  20  125
1x_H100-SXM_COMMUNITY   spot      1.75  H100      1 80  20  125
2x_H100-SXM_COMMUNITY   on-demand 5.38  H100      2 80  40  250
2x_H100-SXM_COMMUNITY   spot      3.5   H100      2 80  40  250
4x_H100-SXM_COMMUNITY   on-demand 10.76 H100      4 80  80  500
4x_H100-SXM_COMMUNITY   spot      7     H100      4 80  80  500
8x_H100-SXM_COMMUNITY   on-demand 21.52 H100      8 80  160 1000
8x_H100-SXM_COMMUNITY   spot      14    H100      8 80  160 1000
1x_RTX-4090_SECURE      on-demand 0.69  RTX4090   1 24  0   0
2x_RTX-4090_SECURE      on-demand 1.38  RTX4090   2 24  0   0
1x_RTX-4090_COMMUNITY   on-demand 0.34  RTX4090   1 24  0   0
1x_RTX-4090_COMMUNITY   spot      0.29  RTX4090   1 24  0   0
2x_RTX-4090_COMMUNITY   on-demand 0.68  RTX4090   2 24  0   0
2x_RTX-4090_COMMUNITY   spot      0.58  RTX4090   2 24  0   0
1x_A100-SXM_SECURE      on-demand 1.49  A100-80GB 1 80  16  117
1x_A100-SXM_SECURE      spot      1.29  A100-80GB 1 80  16  117
2x_A100-SXM_SECURE      on-demand 2.98  A100-80GB 2 80  32  234
2x_A100-SXM_SECURE      spot      2.58  A100-80GB 2 80  32  234
4x_A100-SXM_SECURE      on-demand 5.96  A100-80GB 4 80  64  468
4x_A100-SXM_SECURE      spot      5.16  A100-80GB 4 80  64  468
6x_A100-SXM_SECURE      on-demand 8.94  A100-80GB 6 80  96  702
6x_A100-SXM_SECURE      spot      7.74  A100-80GB 6 80  96  702
1x_H200-SXM_SECURE      on-demand 3.99  H200      1 141 0   0
`

func parseWant(t *testing.T, table string, keep func(instanceType string) bool) []pricing.Offer {
	t.Helper()
	var out []pricing.Offer
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(line)
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				t.Fatalf("bad want line %q: %v", line, err)
			}
			return v
		}
		if keep != nil && !keep(f[0]) {
			continue
		}
		out = append(out, pricing.Offer{Provider: "runpod", Region: "global", InstanceType: f[0], GPUModel: f[3],
			GPUCount: num(4), GPUMemGiB: num(5), VCPUs: num(6), RAMGiB: num(7), Purchase: pricing.Purchase(f[1]),
			PriceUSDHr: num(2), Currency: "USD", ObservedAt: clock, Source: pricing.SourceAPI})
	}
	return out
}

func TestFetch(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		key      string // value of the key variable; "" leaves it empty
		keep     func(string) bool
		wantWarn []string
	}{
		{name: "both clouds, no key", cfg: Config{}},
		{name: "both clouds, key sent", cfg: Config{}, key: testKey},
		{name: "secure only", cfg: Config{Clouds: []string{"secure"}}, keep: func(s string) bool { return strings.HasSuffix(s, "_SECURE") }},
		{name: "community only", cfg: Config{Clouds: []string{"Community"}}, keep: func(s string) bool { return strings.HasSuffix(s, "_COMMUNITY") }},
		{name: "regions are ignored with a warning", cfg: Config{Common: providers.Common{Regions: []string{"US"}}},
			wantWarn: []string{`runpod: regions US ignored: gpuTypes prices are global (region "global")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PICKER_TEST_RUNPOD_KEY", tt.key)
			s := &graphqlServer{}
			snap, err := setup(t, s, tt.cfg, nil).Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			providertest.DiffOffers(t, snap.Offers, parseWant(t, wantTable, tt.keep))
			if snap.Regions != nil || snap.Failed != nil {
				t.Errorf("Regions = %v, Failed = %v; want nil (global prices)", snap.Regions, snap.Failed)
			}
			if !reflect.DeepEqual(snap.Warnings, tt.wantWarn) {
				t.Errorf("Warnings = %q, want %q", snap.Warnings, tt.wantWarn)
			}
			wantAuth := ""
			if tt.key != "" {
				wantAuth = "Bearer " + testKey
			}
			if !reflect.DeepEqual(s.auth, []string{wantAuth}) {
				t.Errorf("Authorization headers = %q, want [%q]", s.auth, wantAuth)
			}
			providertest.CheckSnapshot(t, snap)
		})
	}
}

func TestErrors(t *testing.T) {
	fixture, err := os.ReadFile("testdata/gpu_types.json")
	if err != nil {
		t.Fatal(err)
	}
	gqlErr, err := os.ReadFile("testdata/graphql_error.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(fixture)
	cut := strings.Index(body, `"securePrice": 2.99`) + len(`"securePrice": 2.`)
	tests := []struct {
		name     string
		key      string
		srv      *graphqlServer
		want     string
		code     pricing.Code
		requests int32
	}{
		{name: "GraphQL errors with HTTP 200", srv: &graphqlServer{body: string(gqlErr)},
			want: `runpod: gpuTypes: GraphQL error: GRAPHQL_VALIDATION_FAILED: Cannot query field "lowestPrices" on type "GpuType". Did you mean "lowestPrice"?`,
			code: pricing.Unavailable, requests: 1},
		{name: "GraphQL errors next to partial data", srv: &graphqlServer{body: `{"data": {"gpuTypes": []}, "errors": [{"message": "upstream timeout"}]}`},
			want: "runpod: gpuTypes: GraphQL error: upstream timeout", code: pricing.Unavailable, requests: 1},
		{name: "truncated body", srv: &graphqlServer{body: body[:cut]},
			want: "runpod: gpuTypes: truncated JSON body: ends inside data.gpuTypes[1].securePrice", code: pricing.Unavailable, requests: 1},
		{name: "price of the wrong type", srv: &graphqlServer{body: strings.Replace(body, `"securePrice": 0.27`, `"securePrice": "0.27"`, 1)},
			want: "runpod: gpuTypes: malformed JSON at data.gpuTypes.securePrice: want float64, got string", code: pricing.Unavailable, requests: 1},
		{name: "data null", srv: &graphqlServer{body: `{"data": null}`},
			want: "runpod: gpuTypes: data is missing", code: pricing.Unavailable, requests: 1},
		{name: "gpuTypes missing", srv: &graphqlServer{body: `{"data": {}}`},
			want: "runpod: gpuTypes: data.gpuTypes is missing", code: pricing.Unavailable, requests: 1},
		{name: "only the unknown pseudo type", srv: &graphqlServer{body: `{"data": {"gpuTypes": [{"id": "unknown", "displayName": "unknown", "memoryInGb": 0, "maxGpuCount": 0, "secureCloud": false, "communityCloud": false, "securePrice": null, "communityPrice": null, "secureSpotPrice": null, "communitySpotPrice": null, "lowestPrice": null}]}}`},
			want: "runpod: no GPU type has a price in the selected clouds (1 types listed)", code: pricing.Unavailable, requests: 1},
		{name: "key refused", key: "wrong-key",
			want: "runpod: gpuTypes: the API refused the key read from PICKER_TEST_RUNPOD_KEY", code: pricing.Invalid, requests: 1},
		{name: "500 until the bound", srv: &graphqlServer{hook: func(w http.ResponseWriter, _ int) bool {
			http.Error(w, "upstream connect error", http.StatusInternalServerError)
			return true
		}}, want: "HTTP 500 Internal Server Error: upstream connect error (gave up after 5 attempts)", code: pricing.Unavailable, requests: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PICKER_TEST_RUNPOD_KEY", tt.key)
			s := tt.srv
			if s == nil {
				s = &graphqlServer{}
			}
			_, err := setup(t, s, Config{}, nil).Fetch(context.Background())
			if err == nil {
				t.Fatal("Fetch succeeded; want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
			if tt.key != "" && strings.Contains(err.Error(), tt.key) {
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
	t.Setenv("PICKER_TEST_RUNPOD_KEY", "")
	s := &graphqlServer{hook: func(w http.ResponseWriter, n int) bool {
		if n > 1 {
			return false
		}
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}}
	sl := &providertest.Sleeps{}
	snap, err := setup(t, s, Config{}, sl).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	providertest.DiffOffers(t, snap.Offers, parseWant(t, wantTable, nil))
	if want := []time.Duration{5 * time.Second}; !reflect.DeepEqual(sl.Waits(), want) {
		t.Errorf("sleeps = %v, want %v", sl.Waits(), want)
	}
	if got := s.requests.Load(); got != 2 {
		t.Errorf("requests = %d, want 2 (the POST body is resent)", got)
	}
}

// TestUnknownGPU: a GPU the catalog lacks is kept under its raw id and reported.
func TestUnknownGPU(t *testing.T) {
	t.Setenv("PICKER_TEST_RUNPOD_KEY", "")
	body := `{"data": {"gpuTypes": [{"id": "NVIDIA X900", "displayName": "X900", "memoryInGb": 64, "maxGpuCount": 1, "secureCloud": true, "communityCloud": false, "securePrice": 1.1, "communityPrice": null, "secureSpotPrice": null, "communitySpotPrice": null, "lowestPrice": null}]}}`
	snap, err := setup(t, &graphqlServer{body: body}, Config{}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	want := []pricing.Offer{{Provider: "runpod", Region: "global", InstanceType: "1x_X900_SECURE", GPUModel: "NVIDIA X900",
		GPUCount: 1, GPUMemGiB: 64, Purchase: pricing.OnDemand, PriceUSDHr: 1.1, Currency: "USD", ObservedAt: clock, Source: pricing.SourceAPI}}
	providertest.DiffOffers(t, snap.Offers, want)
	if w := []string{`runpod: unknown GPU "NVIDIA X900" kept as is`}; !reflect.DeepEqual(snap.Warnings, w) {
		t.Errorf("Warnings = %q, want %q", snap.Warnings, w)
	}
}

func TestCounts(t *testing.T) {
	p := func(n int) *int { return &n }
	tests := []struct {
		max  *int
		want []int
	}{
		{nil, []int{1, 2, 4, 8}},
		{p(0), []int{1, 2, 4, 8}},
		{p(1), []int{1}},
		{p(2), []int{1, 2}},
		{p(3), []int{1, 2, 3}},
		{p(8), []int{1, 2, 4, 8}},
		{p(10), []int{1, 2, 4, 8, 10}},
		{p(32), []int{1, 2, 4, 8}},
	}
	for _, tt := range tests {
		if got := counts(tt.max); !reflect.DeepEqual(got, tt.want) {
			m := "nil"
			if tt.max != nil {
				m = fmt.Sprint(*tt.max)
			}
			t.Errorf("counts(%s) = %v, want %v", m, got, tt.want)
		}
	}
}

func TestConformance(t *testing.T) {
	t.Setenv("PICKER_TEST_RUNPOD_KEY", "")
	providertest.Run(t, func(t *testing.T) providers.Provider {
		return setup(t, &graphqlServer{}, Config{}, nil)
	})
}

func TestCancelled(t *testing.T) {
	t.Setenv("PICKER_TEST_RUNPOD_KEY", "")
	ctx, cancel := context.WithCancel(context.Background())
	s := &graphqlServer{hook: func(w http.ResponseWriter, _ int) bool {
		w.WriteHeader(http.StatusBadGateway)
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
}

func TestNewAndDescriptor(t *testing.T) {
	if _, err := New(Config{Clouds: []string{"secure", "spot"}}); pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), `runpod: clouds: "spot"`) {
		t.Errorf("New with clouds=spot: %v, want an invalid-config error naming it", err)
	}
	if Descriptor.Name != "runpod" {
		t.Errorf("Name = %q", Descriptor.Name)
	}
	for _, cfg := range []any{Config{}, &Config{}} {
		if _, err := Descriptor.New(cfg); err != nil {
			t.Errorf("Descriptor.New(%T): %v", cfg, err)
		}
	}
	if _, err := Descriptor.New(42); err == nil {
		t.Error("Descriptor.New(42) succeeded; want a type error")
	}
}

// Issue 18, case 8: RunPod's transient GraphQL error (HTTP 200, INTERNAL_SERVER_ERROR,
// "try again") is retried under the shared policy; a validation error is not (above).
func TestTransientGraphQLErrorRetried(t *testing.T) {
	const transient = `{"errors":[{"message":"Something went wrong. Please try again later.","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`
	t.Run("then success", func(t *testing.T) {
		t.Setenv("PICKER_TEST_RUNPOD_KEY", "")
		s := &graphqlServer{hook: func(w http.ResponseWriter, n int) bool {
			if n <= 2 {
				io.WriteString(w, transient)
				return true
			}
			return false
		}}
		var sl providertest.Sleeps
		p := setup(t, s, Config{}, &sl)
		snap, err := p.Fetch(context.Background())
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if len(snap.Offers) == 0 || s.requests.Load() != 3 {
			t.Errorf("%d offers after %d requests; want offers after 3", len(snap.Offers), s.requests.Load())
		}
	})
	t.Run("until the bound", func(t *testing.T) {
		t.Setenv("PICKER_TEST_RUNPOD_KEY", "")
		s := &graphqlServer{body: transient}
		var sl providertest.Sleeps
		p := setup(t, s, Config{}, &sl)
		_, err := p.Fetch(context.Background())
		if err == nil || !strings.Contains(err.Error(), "INTERNAL_SERVER_ERROR") || !strings.Contains(err.Error(), "gave up after 5 attempts") {
			t.Errorf("error %v", err)
		}
		if pricing.ErrorCode(err) != pricing.Unavailable || s.requests.Load() != 5 {
			t.Errorf("code %v after %d requests; want Unavailable after 5", pricing.ErrorCode(err), s.requests.Load())
		}
	})
}
