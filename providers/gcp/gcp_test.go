package gcp

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

var testNow = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

const (
	machinesPath = "/compute/v1/projects/test-project/aggregated/machineTypes"
	accelsPath   = "/compute/v1/projects/test-project/aggregated/acceleratorTypes"
	skusPath     = "/v1/services/6F81-5844-456A/skus"
	testAPIKey   = "test-billing-key"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeGoogle answers the three REST list calls with fixtures in Google's REST JSON,
// following nextPageToken -> pageToken.
type fakeGoogle struct {
	t     *testing.T
	pages map[string][][]byte // path -> pages
	// fault may answer instead of the fixtures; n counts earlier calls to the path.
	fault func(w http.ResponseWriter, path string, n int) bool

	mu      sync.Mutex
	calls   map[string]int
	keys    map[string][]string // path -> X-Goog-Api-Key values seen
	authHdr []string
}

func newFakeGoogle(t *testing.T) *fakeGoogle {
	return &fakeGoogle{
		t: t,
		pages: map[string][][]byte{
			machinesPath: {readFixture(t, "machine_types_page1.json"), readFixture(t, "machine_types_page2.json")},
			accelsPath:   {readFixture(t, "accelerator_types_page1.json"), readFixture(t, "accelerator_types_page2.json")},
			skusPath:     {readFixture(t, "skus_page1.json"), readFixture(t, "skus_page2.json"), readFixture(t, "skus_page3.json")},
		},
		calls: map[string]int{},
		keys:  map[string][]string{},
	}
}

var pageTokenRe = regexp.MustCompile(`"nextPageToken"\s*:\s*"([^"]*)"`)

func (f *fakeGoogle) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

func (f *fakeGoogle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pages, ok := f.pages[r.URL.Path]
	if r.Method != http.MethodGet || !ok {
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	switch r.URL.Path {
	case machinesPath:
		if q.Get("filter") != machineFilter || q.Get("maxResults") != "500" {
			f.t.Errorf("machineTypes query %v", q)
		}
	case skusPath:
		if q.Get("currencyCode") != "USD" || q.Get("pageSize") != "5000" {
			f.t.Errorf("skus query %v", q)
		}
	}
	f.mu.Lock()
	n := f.calls[r.URL.Path]
	f.calls[r.URL.Path] = n + 1
	f.keys[r.URL.Path] = append(f.keys[r.URL.Path], r.Header.Get("X-Goog-Api-Key")+q.Get("key"))
	if a := r.Header.Get("Authorization"); a != "" {
		f.authHdr = append(f.authHdr, a)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if f.fault != nil && f.fault(w, r.URL.Path, n) {
		return
	}
	body := pages[0]
	if tok := q.Get("pageToken"); tok != "" {
		body = nil
		for i := 0; i < len(pages)-1; i++ {
			if m := pageTokenRe.FindSubmatch(pages[i]); m != nil && string(m[1]) == tok {
				body = pages[i+1]
			}
		}
		if body == nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":400,"message":"Invalid page token","status":"INVALID_ARGUMENT"}}`)
			return
		}
	}
	w.Write(body)
}

func (f *fakeGoogle) serve(t *testing.T) string {
	return providertest.Serve(t, f).URL
}

func newTestProvider(t *testing.T, endpoint string, regions []string, opts ...Option) *Provider {
	t.Helper()
	t.Setenv("PICKER_TEST_GCP_KEY", testAPIKey)
	opts = append([]Option{WithClock(func() time.Time { return testNow }), WithRetry(4, time.Millisecond)}, opts...)
	p, err := New(Config{Common: providers.Common{Regions: regions, Endpoint: endpoint}, Project: "test-project", APIKeyEnv: "PICKER_TEST_GCP_KEY"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type want struct {
	typ      string
	purchase pricing.Purchase
	price    float64
	model    string
	count    float64
	mem      float64
	vcpus    float64
	ram      float64
}

// wantOffers are the us-central1 offers of the fixtures, each price computed by hand
// from the SKUs in testdata (vCPUs × core + RAM GiB × RAM + GPUs × GPU [+ local SSD GiB
// × GiB-month price / 730]).
var wantOffers = []want{
	// a2-highgpu-1g: 12 vCPU, 87040 MiB = 85 GiB, 1 × A100 40GB.
	// on-demand: 12×0.031611 + 85×0.004237 + 2.933908 = 0.379332 + 0.360145 + 2.933908 = 3.673385
	{"a2-highgpu-1g", pricing.OnDemand, 3.673385, "A100", 1, 40, 12, 85},
	// spot: 12×0.012644 + 85×0.001695 + 1.173563 = 0.151728 + 0.144075 + 1.173563 = 1.469366
	{"a2-highgpu-1g", pricing.Spot, 1.469366, "A100", 1, 40, 12, 85},
	// a2-ultragpu-1g: 12 vCPU, 170 GiB, 1 × A100 80GB, 375 GiB local SSD included.
	// on-demand: 0.379332 + 170×0.004237 + 3.92808 + 375×0.08/730
	//          = 0.379332 + 0.72029 + 3.92808 + 0.041096 = 5.068798
	{"a2-ultragpu-1g", pricing.OnDemand, 5.068798, "A100-80GB", 1, 80, 12, 170},
	// spot: 0.151728 + 170×0.001695 + 1.571232 + 375×0.048/730
	//     = 0.151728 + 0.28815 + 1.571232 + 0.024658 = 2.035768
	{"a2-ultragpu-1g", pricing.Spot, 2.035768, "A100-80GB", 1, 80, 12, 170},
	// a3-highgpu-8g: 208 vCPU, 1916928 MiB = 1872 GiB, 8 × H100, 6000 GiB local SSD.
	// on-demand: 208×0.03 + 1872×0.004 + 8×10 + 6000×0.08/730 = 6.24 + 7.488 + 80 + 0.657534 = 94.385534
	{"a3-highgpu-8g", pricing.OnDemand, 94.385534, "H100", 8, 80, 208, 1872},
	// spot: 208×0.012 + 1872×0.0016 + 8×2.25 + 6000×0.048/730 = 2.496 + 2.9952 + 18 + 0.394521 = 23.885721
	{"a3-highgpu-8g", pricing.Spot, 23.885721, "H100", 8, 80, 208, 1872},
	// g2-standard-8: 8 vCPU, 32 GiB, 1 × L4.
	// on-demand: 8×0.024988 + 32×0.002928 + 0.56004 = 0.199904 + 0.093696 + 0.56004 = 0.85364
	{"g2-standard-8", pricing.OnDemand, 0.85364, "L4", 1, 24, 8, 32},
	// spot: 8×0.009995 + 32×0.001171 + 0.224016 = 0.07996 + 0.037472 + 0.224016 = 0.341448
	{"g2-standard-8", pricing.Spot, 0.341448, "L4", 1, 24, 8, 32},
	// n1-standard-4 (4 vCPU, 15 GiB) + 1 T4: 4×0.031611 + 15×0.004237 + 0.35 = 0.126444 + 0.063555 + 0.35 = 0.539999
	{"n1-standard-4+nvidia-tesla-t4x1", pricing.OnDemand, 0.539999, "T4", 1, 16, 4, 15},
	// spot: 4×0.006655 + 15×0.000892 + 0.14 = 0.02662 + 0.01338 + 0.14 = 0.18
	{"n1-standard-4+nvidia-tesla-t4x1", pricing.Spot, 0.18, "T4", 1, 16, 4, 15},
	// n1-standard-8 (8 vCPU, 30 GiB) + 1 T4: 0.252888 + 0.12711 + 0.35 = 0.729998
	{"n1-standard-8+nvidia-tesla-t4x1", pricing.OnDemand, 0.729998, "T4", 1, 16, 8, 30},
	// spot: 0.05324 + 0.02676 + 0.14 = 0.22
	{"n1-standard-8+nvidia-tesla-t4x1", pricing.Spot, 0.22, "T4", 1, 16, 8, 30},
	// n1-standard-16 (16 vCPU, 60 GiB) + 2 T4: 0.505776 + 0.25422 + 0.7 = 1.459996
	{"n1-standard-16+nvidia-tesla-t4x2", pricing.OnDemand, 1.459996, "T4", 2, 16, 16, 60},
	// spot: 0.10648 + 0.05352 + 0.28 = 0.44
	{"n1-standard-16+nvidia-tesla-t4x2", pricing.Spot, 0.44, "T4", 2, 16, 16, 60},
	// n1-standard-32 (32 vCPU, 120 GiB) + 4 T4 (the T4's maximumCardsPerInstance):
	// 1.011552 + 0.50844 + 1.4 = 2.919992
	{"n1-standard-32+nvidia-tesla-t4x4", pricing.OnDemand, 2.919992, "T4", 4, 16, 32, 120},
	// spot: 0.21296 + 0.10704 + 0.56 = 0.88
	{"n1-standard-32+nvidia-tesla-t4x4", pricing.Spot, 0.88, "T4", 4, 16, 32, 120},
}

func checkOffers(t *testing.T, snap *providers.Snapshot) {
	t.Helper()
	providertest.CheckSnapshot(t, snap)
	got := map[string]pricing.Offer{}
	for _, o := range snap.Offers {
		got[o.InstanceType+"/"+string(o.Purchase)] = o
		if o.Region != "us-central1" || o.Zone != "" {
			t.Errorf("offer %s: region %q zone %q; want us-central1, no zone", o.Key(), o.Region, o.Zone)
		}
		if o.Provider != "gcp" || o.Currency != "USD" || o.Source != pricing.SourceAPI || !o.ObservedAt.Equal(testNow) {
			t.Errorf("offer %s: provider %q currency %q source %q observed %v", o.Key(), o.Provider, o.Currency, o.Source, o.ObservedAt)
		}
	}
	if len(snap.Offers) != len(wantOffers) {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		})
		t.Errorf("got %d offers, want %d: %v", len(snap.Offers), len(wantOffers), keys)
	}
	for _, w := range wantOffers {
		o, ok := got[w.typ+"/"+string(w.purchase)]
		if !ok {
			t.Errorf("missing %s %s", w.typ, w.purchase)
			continue
		}
		if math.Abs(o.PriceUSDHr-w.price) > 1e-6 || o.GPUModel != w.model || o.GPUCount != w.count || o.GPUMemGiB != w.mem || o.VCPUs != w.vcpus || o.RAMGiB != w.ram {
			t.Errorf("%s %s: got %v USD/h %s x%v %v GiB %v vCPU %v GiB; want %v %s x%v %v GiB %v vCPU %v GiB",
				w.typ, w.purchase, o.PriceUSDHr, o.GPUModel, o.GPUCount, o.GPUMemGiB, o.VCPUs, o.RAMGiB,
				w.price, w.model, w.count, w.mem, w.vcpus, w.ram)
		}
	}
}

func TestFetchEndToEnd(t *testing.T) {
	fake := newFakeGoogle(t)
	p := newTestProvider(t, fake.serve(t), nil)
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	checkOffers(t, snap)
	if snap.Regions != nil {
		t.Errorf("regions %v; want nil (every region) when none configured", snap.Regions)
	}
	for path, n := range map[string]int{machinesPath: 2, accelsPath: 2, skusPath: 3} {
		if got := fake.count(path); got != n {
			t.Errorf("%s: %d calls; want %d (one per page)", path, got, n)
		}
	}
	// Missing SKUs skip machines with a warning that names them.
	for _, w := range []string{
		`n1-standard-8+nvidia-tesla-v100x1 on-demand skipped: no GPU SKU for nvidia-tesla-v100 in us-central1`,
		`g2-standard-8 on-demand skipped: no "G2" Instance Core SKU in europe-west4`,
		`a3-ultragpu-8g spot skipped: no "A3Ultra" Instance Core SKU in europe-west4`,
	} {
		if !slices.ContainsFunc(snap.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("warnings %q\nwant one containing %q", snap.Warnings, w)
		}
	}
	// An http:// endpoint is an emulator: no credentials at all, not even the API key.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.authHdr) > 0 || slices.ContainsFunc(fake.keys[skusPath], func(k string) bool { return k != "" }) {
		t.Errorf("emulator got credentials: Authorization %q, keys %q", fake.authHdr, fake.keys[skusPath])
	}
}

func TestRegionsFilter(t *testing.T) {
	fake := newFakeGoogle(t)
	p := newTestProvider(t, fake.serve(t), []string{"us-central1"})
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkOffers(t, snap)
	if !slices.Equal(snap.Regions, []string{"us-central1"}) {
		t.Errorf("regions %v", snap.Regions)
	}
	for _, w := range snap.Warnings {
		if strings.Contains(w, "europe-west4") {
			t.Errorf("warning about an unconfigured region: %s", w)
		}
	}
}

// Over https (not an emulator) the billing calls carry the API key from api_key_env,
// and the compute calls do not.
func TestAPIKeySent(t *testing.T) {
	fake := newFakeGoogle(t)
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	p := newTestProvider(t, srv.URL, nil, WithHTTPClient(srv.Client()))
	if _, err := p.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for _, k := range fake.keys[skusPath] {
		if k != testAPIKey {
			t.Errorf("billing call key %q; want %q", k, testAPIKey)
		}
	}
	for _, k := range append(fake.keys[machinesPath], fake.keys[accelsPath]...) {
		if k != "" {
			t.Errorf("compute call carried the billing key %q", k)
		}
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T) func(w http.ResponseWriter, path string, n int) bool
	}{
		{"429 then success", func(t *testing.T) func(http.ResponseWriter, string, int) bool {
			return func(w http.ResponseWriter, path string, n int) bool {
				if n > 0 {
					return false
				}
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write(readFixture(t, "error_rate_limit_exceeded.json"))
				return true
			}
		}},
		{"5xx then success", func(t *testing.T) func(http.ResponseWriter, string, int) bool {
			return func(w http.ResponseWriter, path string, n int) bool {
				if n > 1 {
					return false
				}
				w.WriteHeader([]int{http.StatusInternalServerError, http.StatusBadGateway}[n])
				io.WriteString(w, `{"error":{"code":500,"message":"backend error","status":"INTERNAL"}}`)
				return true
			}
		}},
		{"truncated body then success", func(t *testing.T) func(http.ResponseWriter, string, int) bool {
			return func(w http.ResponseWriter, path string, n int) bool {
				if n > 0 {
					return false
				}
				full := readFixture(t, map[string]string{machinesPath: "machine_types_page1.json", accelsPath: "accelerator_types_page1.json", skusPath: "skus_page1.json"}[path])
				w.Header().Set("Content-Length", strconv.Itoa(len(full)))
				w.Write(full[:len(full)/2]) // the connection drops short of Content-Length
				return true
			}
		}},
		{"cut JSON then success", func(t *testing.T) func(http.ResponseWriter, string, int) bool {
			return func(w http.ResponseWriter, path string, n int) bool {
				if n > 0 || path != skusPath {
					return false
				}
				full := readFixture(t, "skus_page1.json")
				w.Write(full[:len(full)/3]) // complete HTTP, incomplete JSON
				return true
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeGoogle(t)
			fake.fault = tc.fault(t)
			p := newTestProvider(t, fake.serve(t), []string{"us-central1"})
			snap, err := p.Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			checkOffers(t, snap)
		})
	}
}

func TestPermanentFailure(t *testing.T) {
	fake := newFakeGoogle(t)
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		if path != skusPath {
			return false
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`)
		return true
	}
	p := newTestProvider(t, fake.serve(t), nil)
	_, err := p.Fetch(context.Background())
	if err == nil {
		t.Fatal("Fetch succeeded; want an error")
	}
	if !strings.Contains(err.Error(), "list skus") || !strings.Contains(err.Error(), "503") {
		t.Errorf("error %q; want it to name the call and the status", err)
	}
	if pricing.ErrorCode(err) != pricing.Unavailable {
		t.Errorf("code %q; want unavailable", pricing.ErrorCode(err))
	}
	if n := fake.count(skusPath); n != 4 {
		t.Errorf("%d ListSkus attempts; want 4", n)
	}
}

// A 403 (bad key, API disabled) is not retried.
func TestNoRetryOnPermissionDenied(t *testing.T) {
	fake := newFakeGoogle(t)
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error":{"code":403,"message":"Required 'compute.machineTypes.list' permission","status":"PERMISSION_DENIED"}}`)
		return true
	}
	p := newTestProvider(t, fake.serve(t), nil)
	if _, err := p.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "compute.machineTypes.list") {
		t.Fatalf("Fetch: %v; want the permission error", err)
	}
	if n := fake.count(machinesPath); n != 1 {
		t.Errorf("%d attempts; want 1", n)
	}
}

func TestMissingSKUsNeverPricedZero(t *testing.T) {
	fake := newFakeGoogle(t)
	fake.pages[skusPath] = [][]byte{[]byte(`{"skus":[],"nextPageToken":""}`)}
	p := newTestProvider(t, fake.serve(t), nil)
	_, err := p.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no prices found") {
		t.Fatalf("Fetch with no SKUs: %v; want a no-prices error", err)
	}
}

func TestCancelMidFetch(t *testing.T) {
	fake := newFakeGoogle(t)
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 4)
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		if path == skusPath {
			started <- struct{}{}
			<-release
		}
		return false
	}
	p := newTestProvider(t, fake.serve(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	start := time.Now()
	_, err := p.Fetch(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch: %v; want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Fetch took %v", d)
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providers.Provider {
		return newTestProvider(t, newFakeGoogle(t).serve(t), nil)
	})
}

func TestConfig(t *testing.T) {
	if _, err := New(Config{}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("no project: %v; want invalid", err)
	}
	p, err := New(Config{Project: "p"})
	if err != nil || p.cfg.APIKeyEnv != DefaultAPIKeyEnv {
		t.Errorf("defaults: %v, api_key_env %q", err, p.cfg.APIKeyEnv)
	}
	if _, err := New(Config{Project: "p", Common: providers.Common{Endpoint: "localhost:8085"}}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("endpoint without scheme: %v", err)
	}
	if _, err := Descriptor.New(Config{Project: "p"}); err != nil {
		t.Errorf("Descriptor.New: %v", err)
	}
	if _, err := Descriptor.New(struct{}{}); err == nil {
		t.Error("Descriptor.New with a wrong type: want an error")
	}
}

func TestClassify(t *testing.T) {
	for desc, want := range map[string][2]string{
		"A2 Instance Core running in Americas":                                          {kindCore, "A2"},
		"Spot Preemptible N1 Predefined Instance Ram running in Paris":                  {kindRAM, "N1 Predefined"},
		"Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas":      {kindGPU, "nvidia-tesla-t4"},
		"Nvidia Tesla A100 GPU running in Americas":                                     {kindGPU, "nvidia-tesla-a100"},
		"Nvidia A100 80GB GPU running in Americas":                                      {kindGPU, "nvidia-a100-80gb"},
		"H100 80GB Mega GPU running in Americas":                                        {kindGPU, "nvidia-h100-mega-80gb"},
		"Spot Preemptible H200 141GB GPU running in Americas":                           {kindGPU, "nvidia-h200-141gb"},
		"A4 Nvidia B200 (1 gpu slice) running in Belgium":                               {kindSlice, "A4"},
		"SSD backed Local Storage attached to Spot Preemptible VMs running in Americas": {kindSSD, ""},
		"Commitment v1: Nvidia Tesla T4 GPU running in Americas for 1 Year":             {"", ""},
		"A2 Sole Tenancy Instance Core running in Americas":                             {"", ""},
		"Nvidia Tesla T4 Virtual Workstation GPU running in Americas":                   {"", ""},
		"DWS Calendar Mode A4 Nvidia B200 (1 gpu slice) running in Americas":            {"", ""},
		"Network Internet Egress from Americas to Americas":                             {"", ""},
	} {
		kind, fam, _ := classify(desc)
		if kind != want[0] || fam != want[1] {
			t.Errorf("classify(%q) = %q, %q; want %q, %q", desc, kind, fam, want[0], want[1])
		}
	}
}

// TestRetryAfterHTTPDate: a 429 whose Retry-After is an HTTP date (RFC 9110 §10.2.3
// allows either form) waits until that date, read against the policy's clock; the copy
// of the retry policy gcp used to keep read only delay-seconds and fell back to backoff.
func TestRetryAfterHTTPDate(t *testing.T) {
	const wantWait = 7 * time.Second
	fake := newFakeGoogle(t)
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		if n > 0 || path != skusPath {
			return false
		}
		w.Header().Set("Retry-After", testNow.Add(wantWait).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write(readFixture(t, "error_rate_limit_exceeded.json"))
		return true
	}
	sl := &providertest.Sleeps{}
	p := newTestProvider(t, fake.serve(t), []string{"us-central1"}, WithPolicy(httpx.Policy{
		MaxAttempts: 3, MaxRetryAfter: time.Minute, Now: func() time.Time { return testNow }, Sleep: sl.Sleep,
	}))
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	checkOffers(t, snap)
	if waits := sl.Waits(); len(waits) != 1 || waits[0] != wantWait {
		t.Errorf("waits %v, want [%v] (the Retry-After date minus now)", waits, wantWait)
	}
}
