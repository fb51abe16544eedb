package vast

import (
	"context"
	"encoding/json"
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

var clock = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

const route = "POST /api/v0/bundles/"

// newServer is console.vast.ai's search: POST /api/v0/bundles/ with a JSON body
// answers testdata/bundles.json; a body that is not the CLI's JSON query is a 400.
func newServer() *providertest.Routes {
	s := &providertest.Routes{Files: map[string]string{route: "testdata/bundles.json"}}
	s.Hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
		var q map[string]any
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal(s.Last(route).Body, &q) != nil || q["type"] == nil {
			http.Error(w, `{"error": "bad query"}`, http.StatusBadRequest)
			return true
		}
		if a := r.Header.Get("Authorization"); a != "" && a != "Bearer vast-test-key" {
			http.Error(w, `{"success": false, "error": "invalid_api_key"}`, http.StatusUnauthorized)
			return true
		}
		return false
	}
	return s
}

func setup(t *testing.T, s *providertest.Routes, cfg Config, sl *providertest.Sleeps) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint = srv.URL
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "PICKER_TEST_VAST_KEY"
	}
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, sl), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offer(region, typ, model string, count, mem, vcpus, ram float64, buy pricing.Purchase, price float64, h pricing.Host) pricing.Offer {
	return pricing.Offer{Provider: "vast", Region: region, InstanceType: typ, GPUModel: model, GPUCount: count, GPUMemGiB: mem,
		VCPUs: vcpus, RAMGiB: ram, Purchase: buy, PriceUSDHr: price, Currency: "USD", ObservedAt: clock, Source: pricing.SourceAPI,
		Available: pricing.AvailableNow, Host: h}
}

// Worked out by hand from testdata/bundles.json (listing order, cheapest first as the
// search sorts): gpu_ram MiB / 1024 per GPU; vCPUs cpu_cores_effective; RAM cpu_ram MiB
// / 1024 times the effective share of the cores, to the cent; on demand dph_total; spot
// min_bid + (dph_total - dph_base) where min_bid > 0 (the A100 host takes no bids); the
// RTX 3090 host's second, dearer listing is dropped.
var (
	h4090 = pricing.Host{Reliability: 0.9700835, MaxCUDA: 12.2, Driver: "535.183.01", NetUpMbps: 77.7, NetDownMbps: 105.9, DiskGB: 1607.875, Verification: pricing.HostVerified}
	h100  = pricing.Host{Reliability: 0.9981, MaxCUDA: 12.8, Driver: "570.124.06", NetUpMbps: 8012.4, NetDownMbps: 9120.7, DiskGB: 7000, Verification: pricing.HostVerified}
	a100  = pricing.Host{Reliability: 0.9912, MaxCUDA: 12.4, Driver: "550.54.15", NetUpMbps: 912, NetDownMbps: 2310.5, DiskGB: 1800, Verification: pricing.HostVerified}
	h3090 = pricing.Host{Reliability: 0.912, MaxCUDA: 11.8, Driver: "520.61.05", NetUpMbps: 420.3, NetDownMbps: 880.1, DiskGB: 900, Verification: pricing.HostUnverified}

	want = []pricing.Offer{
		offer("CN", "1x_RTX-4090_m22990", "RTX4090", 1, 23.98828125, 24, 15.72, pricing.OnDemand, 0.2466759259259259, h4090),
		offer("CN", "1x_RTX-4090_m22990", "RTX4090", 1, 23.98828125, 24, 15.72, pricing.Spot, bid(0.2, 0.2466759259259259, 0.24666666666666665), h4090),
		offer("US", "8x_H100-SXM_m31001", "H100", 8, 79.6474609375, 224, 2015.36, pricing.OnDemand, 15.200009259259259, h100),
		offer("US", "8x_H100-SXM_m31001", "H100", 8, 79.6474609375, 224, 2015.36, pricing.Spot, bid(9.6, 15.200009259259259, 15.2), h100),
		offer("US", "2x_A100-SXM4_m31002", "A100-80GB", 2, 80, 32, 251.93, pricing.OnDemand, 1.6000092592592594, a100),
		offer("DE", "4x_RTX-3090_m31003", "RTX3090", 4, 24, 32, 125.78, pricing.OnDemand, 0.6000092592592592, h3090),
		offer("DE", "4x_RTX-3090_m31003", "RTX3090", 4, 24, 32, 125.78, pricing.Spot, bid(0.32, 0.6000092592592592, 0.6), h3090),
	}
)

// bid is a spot price: the minimum bid plus the disk, dph_total - dph_base (in float64
// arithmetic, as the adapter computes it, not Go's exact constant arithmetic).
func bid(minBid, total, base float64) float64 { return minBid + (total - base) }

func TestFetch(t *testing.T) {
	snap, err := setup(t, newServer(), Config{}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	providertest.DiffOffers(t, snap.Offers, want)
	wantWarn := []string{
		"vast: vast/DE/4x_RTX-3090_m31003/on-demand listed twice; kept the first",
		"vast: vast/DE/4x_RTX-3090_m31003/spot listed twice; kept the first",
	}
	if !reflect.DeepEqual(snap.Warnings, wantWarn) {
		t.Errorf("warnings %q\nwant %q", snap.Warnings, wantWarn)
	}
	if snap.Regions != nil {
		t.Errorf("regions %v; want nil (every country)", snap.Regions)
	}
	providertest.CheckSnapshot(t, snap)
}

// TestQuery: the search body is the vast CLI's (shared reference
// vast/bundles_request_body.json): the same operators on the same fields, the
// config's options added; the key goes as a Bearer header only when set.
func TestQuery(t *testing.T) {
	ref, err := os.ReadFile("testdata/bundles_request_body.json")
	if err != nil {
		t.Fatal(err)
	}
	var cli map[string]any
	if err := json.Unmarshal(ref, &cli); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		key  string
		want func(q map[string]any)
		auth string
	}{
		{"defaults", Config{}, "", func(q map[string]any) {}, ""},
		{"options", Config{Common: providers.Common{Regions: []string{"us", "DE"}}, IncludeUnverified: true, DatacenterOnly: true, Limit: 50, DiskGB: 40}, "vast-test-key",
			func(q map[string]any) {
				delete(q, "verified")
				q["datacenter"] = map[string]any{"eq": true}
				q["geolocation"] = map[string]any{"in": []any{"DE", "US"}}
				q["limit"] = 50.0
				q["allocated_storage"] = 40.0
			}, "Bearer vast-test-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PICKER_TEST_VAST_KEY", tt.key)
			s := newServer()
			if _, err := setup(t, s, tt.cfg, nil).Fetch(context.Background()); err != nil {
				t.Fatal(err)
			}
			seen := s.Last(route)
			var got map[string]any
			if err := json.Unmarshal(seen.Body, &got); err != nil {
				t.Fatal(err)
			}
			// The CLI's sample, less its GPU-name filter, ordered cheapest first (the
			// CLI's default order is its own score) and with picker's default limit.
			want := map[string]any{}
			for k, v := range cli {
				want[k] = v
			}
			delete(want, "gpu_name")
			want["order"] = []any{[]any{"dph_total", "asc"}}
			want["limit"] = float64(DefaultLimit)
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("query\n got  %v\n want %v", got, want)
			}
			if a := seen.Header.Get("Authorization"); a != tt.auth {
				t.Errorf("Authorization %q, want %q", a, tt.auth)
			}
		})
	}
}

// TestRegions: listings outside the configured countries are not offers, and the
// snapshot covers exactly those countries.
func TestRegions(t *testing.T) {
	snap, err := setup(t, newServer(), Config{Common: providers.Common{Regions: []string{"de"}}}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	providertest.DiffOffers(t, snap.Offers, want[5:])
	if !reflect.DeepEqual(snap.Regions, []string{"DE"}) {
		t.Errorf("regions %v, want [DE]", snap.Regions)
	}
}

func TestErrors(t *testing.T) {
	fixture, err := os.ReadFile("testdata/bundles.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(fixture)
	cut := strings.Index(body, `"dph_total": 15.2`) + len(`"dph_total": 1`)
	tests := []struct {
		name     string
		key      string
		body     string
		hook     func(w http.ResponseWriter, r *http.Request, n int) bool
		want     string
		code     pricing.Code
		requests int
	}{
		{name: "truncated", body: body[:cut], want: "vast: search: truncated JSON body: ends inside offers[1].dph_total", code: pricing.Unavailable, requests: 1},
		{name: "price missing", body: strings.Replace(body, `"dph_total": 0.2466759259259259,`, "", 1), want: "vast: offer 11684738: dph_total is missing", code: pricing.Unavailable, requests: 1},
		{name: "price a word", body: strings.Replace(body, `"dph_total": 0.2466759259259259`, `"dph_total": "cheap"`, 1), want: "vast: search: malformed JSON at offers.dph_total", code: pricing.Unavailable, requests: 1},
		{name: "no offers key", body: `{"success": true}`, want: "vast: search: offers is missing", code: pricing.Unavailable, requests: 1},
		{name: "no offers", body: `{"offers": []}`, want: "vast: the search listed no offers", code: pricing.Unavailable, requests: 1},
		{name: "key refused", key: "wrong", want: "vast: search: the API refused the key read from PICKER_TEST_VAST_KEY", code: pricing.Invalid, requests: 1},
		{name: "500 until the bound", hook: func(w http.ResponseWriter, _ *http.Request, _ int) bool {
			http.Error(w, "boom", http.StatusInternalServerError)
			return true
		}, want: "gave up after 5 attempts", code: pricing.Unavailable, requests: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PICKER_TEST_VAST_KEY", tt.key)
			s := newServer()
			if tt.body != "" {
				s.SetBody(route, tt.body)
			}
			if tt.hook != nil {
				check := s.Hook
				s.Hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
					return check(w, r, n) || tt.hook(w, r, n)
				}
			}
			_, err := setup(t, s, Config{}, nil).Fetch(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tt.want)
			}
			if c := pricing.ErrorCode(err); c != tt.code {
				t.Errorf("code %q, want %q", c, tt.code)
			}
			if tt.key != "" && strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q shows the key", err)
			}
			if s.Requests() != tt.requests {
				t.Errorf("%d requests, want %d", s.Requests(), tt.requests)
			}
		})
	}
}

// TestHostFactsCleaned: an implausible host fact becomes unknown with a warning; the
// offer stays.
func TestHostFactsCleaned(t *testing.T) {
	s := newServer()
	b, _ := os.ReadFile("testdata/bundles.json")
	var a struct{ Offers []map[string]any }
	json.Unmarshal(b, &a)
	a.Offers[0]["reliability2"] = 97.0 // a percentage where a fraction belongs
	a.Offers[0]["cuda_max_good"] = -1
	one, _ := json.Marshal(map[string]any{"offers": a.Offers[:1]})
	s.SetBody(route, string(one))
	snap, err := setup(t, s, Config{}, nil).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := h4090
	h.Reliability, h.MaxCUDA = 0, 0
	if len(snap.Offers) != 2 || snap.Offers[0].Host != h {
		t.Fatalf("offers %+v; want the two RTX 4090 offers with reliability and CUDA unknown", snap.Offers)
	}
	if w := "vast: 1x_RTX-4090_m22990: implausible host facts dropped (reliability, max CUDA)"; len(snap.Warnings) != 2 || snap.Warnings[0] != w {
		t.Errorf("warnings %q; want %q for each offer", snap.Warnings, w)
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, newServer(), Config{}, nil) })
}

func TestProgress(t *testing.T) {
	s := newServer()
	if _, log := providertest.FetchProgress(t, setup(t, s, Config{}, nil), "requests", 1); s.Requests() != 1 || len(log.DoneParts()) != 1 {
		t.Errorf("%d requests, parts %v; want the one search", s.Requests(), log.DoneParts())
	}
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		cfg   Config
		param string
	}{
		{Config{Limit: -1}, "limit"},
		{Config{Limit: MaxLimit + 1}, "limit"},
		{Config{DiskGB: -5}, "disk_gb"},
		{Config{Common: providers.Common{Regions: []string{"Texas"}}}, "region"},
		{Config{Common: providers.Common{Endpoint: "ftp://x"}}, "endpoint"},
	} {
		_, err := New(tt.cfg)
		if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), tt.param) {
			t.Errorf("New(%+v): %v; want an invalid %s", tt.cfg, err, tt.param)
		}
	}
	for _, cfg := range []any{Config{}, &Config{}} {
		if _, err := Descriptor.New(cfg); err != nil {
			t.Errorf("Descriptor.New(%T): %v", cfg, err)
		}
	}
}

// BenchmarkFetch is one refresh's fetch of the fixtures from a local fake API (issue 29's
// refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	srv := providertest.Serve(b, newServer())
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: "PICKER_TEST_VAST_UNSET"}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}

// BenchmarkFetch10k is a fetch of a full default search, DefaultLimit listings (the
// fixture's first listing on 10,000 machines at spread prices), from a local fake API:
// the marketplace-sized refresh.
func BenchmarkFetch10k(b *testing.B) {
	raw, err := os.ReadFile("testdata/bundles.json")
	if err != nil {
		b.Fatal(err)
	}
	var a struct{ Offers []map[string]any }
	if err := json.Unmarshal(raw, &a); err != nil {
		b.Fatal(err)
	}
	listings := make([]map[string]any, DefaultLimit)
	for i := range listings {
		l := map[string]any{}
		for k, v := range a.Offers[0] {
			l[k] = v
		}
		l["id"], l["machine_id"] = 1_000_000+i, 100_000+i
		l["dph_total"], l["dph_base"] = 0.2+float64(i)/1e4, 0.2+float64(i)/1e4-0.00001
		listings[i] = l
	}
	body, _ := json.Marshal(map[string]any{"offers": listings})
	s := newServer()
	s.SetBody(route, string(body))
	srv := providertest.Serve(b, s)
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: "PICKER_TEST_VAST_UNSET"}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		snap, err := p.Fetch(context.Background())
		if err != nil || len(snap.Offers) != 2*DefaultLimit {
			b.Fatalf("%v, %d offers", err, len(snap.Offers))
		}
	}
}
