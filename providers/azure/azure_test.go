package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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

var clock = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

var filterRegionRe = regexp.MustCompile(`armRegionName eq '([a-z0-9]+)'`)

// retailServer answers like prices.azure.com from testdata/<region>_page<N>.json, page N
// being $skip/1000 + 1; a region or page without a file gets the empty last page. It
// checks the api-version and the $filter clauses the adapter must send. pages maps
// "region/skip" to a body that overrides the files.
type retailServer struct {
	t      *testing.T
	prefix string // path prefix the server lives under (a proxy's)
	pages  map[string]string
	// hook, when set, may answer a request itself (return true).
	hook     func(w http.ResponseWriter, r *http.Request, region string, n int) bool
	requests atomic.Int32
	mu       sync.Mutex
	log      []string // "region/page"
}

func (s *retailServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.URL.Path != s.prefix+"/api/retail/prices" {
		http.Error(w, "no such path "+r.URL.Path, http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	if v := q.Get("api-version"); v != "2023-01-01-preview" {
		http.Error(w, "api-version "+v, http.StatusBadRequest)
		return
	}
	f := q.Get("$filter")
	for _, clause := range []string{"serviceName eq 'Virtual Machines'", "priceType eq 'Consumption'"} {
		if !strings.Contains(f, clause) {
			http.Error(w, "filter lacks "+clause+": "+f, http.StatusBadRequest)
			return
		}
	}
	m := filterRegionRe.FindStringSubmatch(f)
	if m == nil {
		http.Error(w, "filter names no region: "+f, http.StatusBadRequest)
		return
	}
	region := m[1]
	skip := 0
	if v := q.Get("$skip"); v != "" {
		fmt.Sscan(v, &skip)
	}
	n := skip/1000 + 1
	s.mu.Lock()
	s.log = append(s.log, fmt.Sprintf("%s/%d", region, n))
	s.mu.Unlock()
	if s.hook != nil && s.hook(w, r, region, n) {
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if body, ok := s.pages[fmt.Sprintf("%s/%d", region, skip)]; ok {
		fmt.Fprint(w, body)
		return
	}
	b, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("%s_page%d.json", region, n)))
	if err != nil {
		b, _ = os.ReadFile(filepath.Join("testdata", "eastus_page3.json")) // the empty last page
	}
	w.Write(b)
}

func newServer(t *testing.T, s *retailServer) *httptest.Server {
	t.Helper()
	s.t = t
	return providertest.Serve(t, s)
}

func newProvider(t *testing.T, srv *httptest.Server, endpoint string, regions []string, sl *providertest.Sleeps) *Provider {
	t.Helper()
	p, err := New(Config{Common: providers.Common{Endpoint: endpoint, Regions: regions}}, providertest.HTTPOptions(srv, clock, sl)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offer(region, size, model string, count, mem, vcpus, ram float64, purchase pricing.Purchase, price float64) pricing.Offer {
	return pricing.Offer{Provider: "azure", Region: region, InstanceType: size, GPUModel: model, GPUCount: count,
		GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: ram, Purchase: purchase, PriceUSDHr: price, Currency: "USD",
		ObservedAt: clock, Source: pricing.SourceAPI}
}

// wantOffers is what testdata yields for eastus and westeurope, worked out by hand:
//
// eastus page 1 (the reference NC24ads A100 v4 rows plus three more):
//   - Consumption, "NC24ads A100 v4", Linux product, 3.673        -> on-demand 3.673
//   - Consumption, "NC24ads A100 v4 Spot", 0.7345                 -> spot 0.7345
//   - "NC24ads A100 v4 Low Priority" 0.7346                       -> skipped (Low Priority)
//   - productName "... Series Windows" 4.777                      -> skipped (Windows)
//   - type DevTestConsumption 3.673                               -> skipped (Dev/Test)
//   - type Reservation 21033.0 ("1 Year" term total)              -> skipped (not hourly)
//   - Standard_E4ds_v4 0.252                                      -> not a GPU size, ignored
//   - Standard_NC40ads_H100_v5 0.0                                -> zero price, skipped
//   - Standard_ND128isr_NDR_GB200_v6 108.0                        -> GPU size not in the table: warning
//
// eastus page 2 (reached through NextPageLink https://prices.azure.com:443/...$skip=1000,
// rewritten to the test server):
//   - NC4as T4 v3 0.526 -> on-demand; "NC4as T4 v3 Spot" 0.0526 -> spot;
//     "NC4as T4 v3 Low Priority" -> skipped
//   - NV6ads A10 v5 0.454 -> on-demand, 1/6 of an A10 (0.1667 GPU of 24 GiB: a 4 GiB slice, 6 vCPU, 55 GiB)
//
// eastus page 3: Items [] -> end. westeurope page 1 (NextPageLink null): E4ds v4 (ignored),
// ND96isr H100 v5 127.816 on-demand and 38.3448 spot (8x H100 80 GiB, 96 vCPU, 1900 GiB).
var wantOffers = []pricing.Offer{
	offer("eastus", "Standard_NC24ads_A100_v4", "A100-80GB", 1, 80, 24, 220, pricing.OnDemand, 3.673),
	offer("eastus", "Standard_NC24ads_A100_v4", "A100-80GB", 1, 80, 24, 220, pricing.Spot, 0.7345),
	offer("eastus", "Standard_NC4as_T4_v3", "T4", 1, 16, 4, 28, pricing.OnDemand, 0.526),
	offer("eastus", "Standard_NC4as_T4_v3", "T4", 1, 16, 4, 28, pricing.Spot, 0.0526),
	offer("eastus", "Standard_NV6ads_A10_v5", "A10", 0.1667, 24, 6, 55, pricing.OnDemand, 0.454),
	offer("westeurope", "Standard_ND96isr_H100_v5", "H100", 8, 80, 96, 1900, pricing.OnDemand, 127.816),
	offer("westeurope", "Standard_ND96isr_H100_v5", "H100", 8, 80, 96, 1900, pricing.Spot, 38.3448),
}

func TestFetch(t *testing.T) {
	tests := []struct {
		name     string
		prefix   string // the server's path prefix, also appended to the endpoint
		regions  []string
		want     []pricing.Offer
		wantLog  []string
		wantWarn []string
	}{
		{
			name:     "two regions, three pages with an empty last page",
			regions:  []string{"westeurope", "eastus"},
			want:     wantOffers,
			wantLog:  []string{"eastus/1", "eastus/2", "eastus/3", "westeurope/1"},
			wantWarn: []string{"azure: GPU size Standard_ND128isr_NDR_GB200_v6 is not in the size table (seen in eastus); its prices were skipped"},
		},
		{
			name:     "endpoint behind a path prefix keeps the prefix on later pages",
			prefix:   "/proxy/azure",
			regions:  []string{"eastus"},
			want:     wantOffers[:5],
			wantLog:  []string{"eastus/1", "eastus/2", "eastus/3"},
			wantWarn: []string{"azure: GPU size Standard_ND128isr_NDR_GB200_v6 is not in the size table (seen in eastus); its prices were skipped"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &retailServer{prefix: tt.prefix}
			srv := newServer(t, rs)
			p := newProvider(t, srv, srv.URL+tt.prefix+"/", tt.regions, nil)
			snap, err := p.Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			providertest.DiffOffers(t, snap.Offers, tt.want)
			wantRegions := append([]string(nil), tt.regions...)
			if len(wantRegions) == 2 {
				wantRegions = []string{"eastus", "westeurope"}
			}
			if !reflect.DeepEqual(snap.Regions, wantRegions) {
				t.Errorf("Regions = %v, want %v", snap.Regions, wantRegions)
			}
			if len(snap.Failed) != 0 {
				t.Errorf("Failed = %v, want none", snap.Failed)
			}
			if !reflect.DeepEqual(snap.Warnings, tt.wantWarn) {
				t.Errorf("Warnings = %q, want %q", snap.Warnings, tt.wantWarn)
			}
			rs.mu.Lock()
			log := append([]string(nil), rs.log...)
			rs.mu.Unlock()
			sortStrings(log)
			if !reflect.DeepEqual(log, tt.wantLog) {
				t.Errorf("pages fetched = %v, want %v", log, tt.wantLog)
			}
			providertest.CheckSnapshot(t, snap)
		})
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

// TestFullPageWithoutNextLink: a full page (1000 rows) that lacks its NextPageLink is
// followed with $skip=1000 instead of ending the scan early.
func TestFullPageWithoutNextLink(t *testing.T) {
	var items []map[string]any
	for i := range 1000 {
		items = append(items, map[string]any{
			"currencyCode": "USD", "retailPrice": 0.1 + float64(i)/1000, "unitPrice": 0.1, "armRegionName": "eastus",
			"meterName": "D2s v5", "productName": "Virtual Machines Dsv5 Series", "skuName": "D2s v5",
			"serviceName": "Virtual Machines", "unitOfMeasure": "1 Hour", "type": "Consumption",
			"isPrimaryMeterRegion": true, "armSkuName": "Standard_D2s_v5",
		})
	}
	full, _ := json.Marshal(map[string]any{"BillingCurrency": "USD", "Items": items, "NextPageLink": nil, "Count": 1000})
	page2, _ := os.ReadFile("testdata/eastus_page2.json")
	var pg map[string]any
	json.Unmarshal(page2, &pg)
	pg["NextPageLink"] = nil
	second, _ := json.Marshal(pg)
	rs := &retailServer{pages: map[string]string{"eastus/0": string(full), "eastus/1000": string(second)}}
	srv := newServer(t, rs)
	snap, err := newProvider(t, srv, srv.URL, []string{"eastus"}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	// Page 1 has no GPU rows; page 2 gives the T4 pair and the A10 slice; page 2 has
	// fewer than 1000 rows and no link, so the scan ends there.
	providertest.DiffOffers(t, snap.Offers, wantOffers[2:5])
	if got := rs.requests.Load(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name       string
		fail       func(w http.ResponseWriter, attempt int) bool // answers attempt (1-based) itself when true
		wantSleeps []time.Duration
		wantErr    string // "" means success with the eastus offers
		wantReq    int32
	}{
		{
			name: "429 with Retry-After seconds, then success",
			fail: func(w http.ResponseWriter, attempt int) bool {
				if attempt > 1 {
					return false
				}
				w.Header().Set("Retry-After", "7")
				http.Error(w, `{"error":"too many requests"}`, http.StatusTooManyRequests)
				return true
			},
			wantSleeps: []time.Duration{7 * time.Second},
			wantReq:    4, // 429, then pages 1..3
		},
		{
			name: "429 with an HTTP-date Retry-After, read against the clock",
			fail: func(w http.ResponseWriter, attempt int) bool {
				if attempt > 1 {
					return false
				}
				w.Header().Set("Retry-After", clock.Add(90*time.Second).Format(http.TimeFormat))
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			},
			wantSleeps: []time.Duration{90 * time.Second},
			wantReq:    4,
		},
		{
			name: "Retry-After of an hour is capped at 2 minutes",
			fail: func(w http.ResponseWriter, attempt int) bool {
				if attempt > 1 {
					return false
				}
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			},
			wantSleeps: []time.Duration{2 * time.Minute},
			wantReq:    4,
		},
		{
			name: "two 503s then success use the backoff",
			fail: func(w http.ResponseWriter, attempt int) bool {
				if attempt > 2 {
					return false
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			},
			wantSleeps: []time.Duration{time.Second, 2 * time.Second},
			wantReq:    5,
		},
		{
			name: "500 on every attempt fails after 5 attempts",
			fail: func(w http.ResponseWriter, attempt int) bool {
				http.Error(w, "internal error", http.StatusInternalServerError)
				return true
			},
			wantSleeps: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
			wantErr:    "azure: every region failed: azure: eastus: page 1: GET http://",
			wantReq:    5,
		},
		{
			name: "400 is not retried",
			fail: func(w http.ResponseWriter, attempt int) bool {
				http.Error(w, `{"Error":{"Code":"BadRequest","Message":"Invalid OData parameters supplied"}}`, http.StatusBadRequest)
				return true
			},
			wantErr: "HTTP 400 Bad Request: {\"Error\":{\"Code\":\"BadRequest\",\"Message\":\"Invalid OData parameters supplied\"}}",
			wantReq: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var attempt atomic.Int32
			rs := &retailServer{hook: func(w http.ResponseWriter, r *http.Request, region string, n int) bool {
				if n != 1 {
					return false
				}
				return tt.fail(w, int(attempt.Add(1)))
			}}
			srv := newServer(t, rs)
			sl := &providertest.Sleeps{}
			p, err := New(Config{Common: providers.Common{Endpoint: srv.URL, Regions: []string{"eastus"}}},
				append(providertest.HTTPOptions(srv, clock, sl), httpx.WithBackoff(providertest.DoublingBackoff))...)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := p.Fetch(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				providertest.DiffOffers(t, snap.Offers, wantOffers[:5])
			} else {
				if err == nil {
					t.Fatal("Fetch succeeded; want an error")
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q\nwant it to contain %q", err, tt.wantErr)
				}
				if c := pricing.ErrorCode(err); c != pricing.Unavailable {
					t.Errorf("error code %q, want %q", c, pricing.Unavailable)
				}
			}
			if got := sl.Waits(); !reflect.DeepEqual(got, tt.wantSleeps) && !(len(got) == 0 && len(tt.wantSleeps) == 0) {
				t.Errorf("sleeps = %v, want %v", got, tt.wantSleeps)
			}
			if got := rs.requests.Load(); got != tt.wantReq {
				t.Errorf("requests = %d, want %d", got, tt.wantReq)
			}
		})
	}
}

// TestFailedRegion: one region failing for good is reported in Failed and left out of
// Regions; the other region's offers still land.
func TestFailedRegion(t *testing.T) {
	rs := &retailServer{hook: func(w http.ResponseWriter, r *http.Request, region string, n int) bool {
		if region != "westeurope" {
			return false
		}
		w.WriteHeader(http.StatusBadGateway)
		return true
	}}
	srv := newServer(t, rs)
	snap, err := newProvider(t, srv, srv.URL, []string{"eastus", "westeurope"}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	providertest.DiffOffers(t, snap.Offers, wantOffers[:5])
	if !reflect.DeepEqual(snap.Regions, []string{"eastus"}) {
		t.Errorf("Regions = %v, want [eastus]", snap.Regions)
	}
	if err := snap.Failed["westeurope"]; err == nil || !strings.Contains(err.Error(), "azure: westeurope: page 1: GET") || !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("Failed[westeurope] = %v, want an HTTP 502 error naming the region and page", err)
	}
}

func TestBrokenBodies(t *testing.T) {
	page1, err := os.ReadFile("testdata/eastus_page1.json")
	if err != nil {
		t.Fatal(err)
	}
	// Cut the body inside the second item's retailPrice ("retailPrice": 0.73|45).
	second := strings.Index(string(page1), `"retailPrice": 0.7345`)
	truncated := string(page1[:second+len(`"retailPrice": 0.73`)])
	badType := strings.Replace(string(page1), `"retailPrice": 3.673,`, `"retailPrice": "3.673",`, 1)
	noItems := `{"BillingCurrency": "USD", "NextPageLink": null, "Count": 0}`
	noPrice := strings.Replace(string(page1), `"retailPrice": 3.673,
            "unitPrice": 3.673,`, ``, 1)
	tests := []struct {
		name, body, want string
	}{
		{"truncated", truncated, "azure: eastus: page 1: truncated JSON body: ends inside Items[1].retailPrice"},
		{"wrong type", badType, "azure: eastus: page 1: malformed JSON at Items.retailPrice: want float64, got string"},
		{"Items missing", noItems, "azure: eastus: page 1: Items is missing"},
		{"price missing on a GPU row", noPrice, "azure: eastus: page 1: Items[0]: Standard_NC24ads_A100_v4: retailPrice is missing"},
		{"empty body", "", "azure: eastus: page 1: empty body where JSON was expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &retailServer{pages: map[string]string{"eastus/0": tt.body}}
			srv := newServer(t, rs)
			_, err := newProvider(t, srv, srv.URL, []string{"eastus"}, nil).Fetch(context.Background())
			if err == nil {
				t.Fatal("Fetch succeeded; want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestEmptyResult: regions that answer with prices but no GPU prices are an error, and so
// is a region that answers no rows at all.
func TestEmptyResult(t *testing.T) {
	exact, err := os.ReadFile("testdata/retail_prices_e4ds_v4_exact.json") // one westeurope E4ds v4 row
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body, want string
	}{
		{"no GPU rows", string(exact), "azure: no GPU prices found in westeurope"},
		{"no rows at all", `{"BillingCurrency":"USD","Items":[],"NextPageLink":null,"Count":0}`, "azure: westeurope: no prices at all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &retailServer{pages: map[string]string{"westeurope/0": tt.body}}
			srv := newServer(t, rs)
			_, err := newProvider(t, srv, srv.URL, []string{"westeurope"}, nil).Fetch(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Fetch error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providers.Provider {
		srv := newServer(t, &retailServer{})
		// The conformance suite rejects raw GPU names, and every row here maps to a table
		// size; the unknown GB200 size is skipped with a warning, not offered.
		return newProvider(t, srv, srv.URL, []string{"eastus", "westeurope"}, nil)
	})
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // error substring; "" for success
	}{
		{"defaults", Config{}, ""},
		{"endpoint with path", Config{Common: providers.Common{Endpoint: "http://localhost:8080/azure/"}}, ""},
		{"relative endpoint", Config{Common: providers.Common{Endpoint: "prices.azure.com"}}, "azure: endpoint \"prices.azure.com\": want an absolute http:// or https:// URL"},
		{"quote in region", Config{Common: providers.Common{Regions: []string{"eastus' or 1 eq 1"}}}, "azure: region \"eastus' or 1 eq 1\""},
		{"upper-case region", Config{Common: providers.Common{Regions: []string{"EastUS"}}}, "want an ARM region name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if len(tt.cfg.Regions) == 0 && len(p.Regions()) != len(DefaultRegions) {
					t.Errorf("Regions() = %v, want the %d default regions", p.Regions(), len(DefaultRegions))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
			if c := pricing.ErrorCode(err); c != pricing.Invalid {
				t.Errorf("code %q, want invalid", c)
			}
		})
	}
}

func TestDescriptor(t *testing.T) {
	if Descriptor.Name != "azure" {
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
}

// TestSizeTable: every size is a GPU family size, its GPU is canonical, and where the
// pricing package knows the family it agrees on the GPU.
func TestSizeTable(t *testing.T) {
	sz, err := Sizes()
	if err != nil {
		t.Fatal(err)
	}
	if len(sz) < 30 {
		t.Errorf("size table has %d rows, want the snapshot's 32", len(sz))
	}
	for name, s := range sz {
		if !IsGPUSize(name) {
			t.Errorf("%s: not a GPU family name", name)
		}
		g, ok := pricing.LookupGPU(s.GPUModel)
		if !ok || g.Model != s.GPUModel {
			t.Errorf("%s: GPU %q is not canonical", name, s.GPUModel)
			continue
		}
		if m, ok := familyGPU(name); ok && m != s.GPUModel {
			t.Errorf("%s: table says %s, familyGPU says %s", name, s.GPUModel, m)
		}
		if s.GPUCount >= 1 && s.GPUMemGiB != g.MemGB {
			t.Errorf("%s: %v GiB per GPU, catalog says %v for %s", name, s.GPUMemGiB, g.MemGB, g.Model)
		}
		if s.GPUCount < 1 && s.GPUMemGiB > g.MemGB*s.GPUCount*1.01+0.01 {
			t.Errorf("%s: slice of %v GPU has %v GiB, more than its share of %v", name, s.GPUCount, s.GPUMemGiB, g.MemGB)
		}
	}
	for _, tt := range []struct {
		size string
		gpu  bool
	}{
		{"Standard_NC24ads_A100_v4", true}, {"Standard_ND96isr_H200_v5", true}, {"Standard_NV36ads_A10_v5", true},
		{"Standard_NG32ads_V620_v1", true}, {"Standard_E4ds_v4", false}, {"Standard_D2s_v5", false},
		{"NCsv3 Type 1", false}, {"Standard_NP10s", false},
	} {
		if got := IsGPUSize(tt.size); got != tt.gpu {
			t.Errorf("IsGPUSize(%q) = %v, want %v", tt.size, got, tt.gpu)
		}
	}
}

func TestNextURL(t *testing.T) {
	link := "https://prices.azure.com:443/api/retail/prices?api-version=2023-01-01-preview&$filter=serviceName%20eq%20%27Virtual%20Machines%27&$skip=1000"
	tests := []struct{ endpoint, want string }{
		{"", "https://prices.azure.com/api/retail/prices?api-version=2023-01-01-preview&$filter=serviceName%20eq%20%27Virtual%20Machines%27&$skip=1000"},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000/api/retail/prices?api-version=2023-01-01-preview&$filter=serviceName%20eq%20%27Virtual%20Machines%27&$skip=1000"},
		{"http://proxy.internal/azure/", "http://proxy.internal/azure/api/retail/prices?api-version=2023-01-01-preview&$filter=serviceName%20eq%20%27Virtual%20Machines%27&$skip=1000"},
	}
	for _, tt := range tests {
		p, err := New(Config{Common: providers.Common{Endpoint: tt.endpoint}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.nextURL(link)
		if err != nil || got != tt.want {
			t.Errorf("endpoint %q: nextURL = %q, %v\nwant %q", tt.endpoint, got, err, tt.want)
		}
	}
	if got, want := withSkip("http://h/api/retail/prices?a=1&$skip=1000&b=2", 2000), "http://h/api/retail/prices?a=1&b=2&$skip=2000"; got != want {
		t.Errorf("withSkip = %q, want %q", got, want)
	}
}

func TestCancelledDuringRetry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rs := &retailServer{hook: func(w http.ResponseWriter, r *http.Request, region string, n int) bool {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}}
	srv := newServer(t, rs)
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL, Regions: []string{"eastus"}}},
		httpx.WithHTTPClient(srv.Client()), httpx.WithSleep(func(ctx context.Context, d time.Duration) error {
			cancel() // the user presses ^C while we wait out the 429
			<-ctx.Done()
			return ctx.Err()
		}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Fetch(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch error = %v, want context.Canceled", err)
	}
	if got := rs.requests.Load(); got != 1 {
		t.Errorf("requests = %d, want 1 (no retry after cancellation)", got)
	}
}
