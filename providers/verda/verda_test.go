package verda

import (
	"context"
	"encoding/json"
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
	idEnv, secretEnv = "PICKER_TEST_VERDA_ID", "PICKER_TEST_VERDA_SECRET"
	testID, testKey  = "EXAMPLE_CLIENT_ID", "EXAMPLE_CLIENT_SECRET"
	token            = "eyJhbGciOiJIUzI1NiJ9.test-access-token"
	tokenRoute       = "POST /oauth2/token"
	typesRoute       = "GET /instance-types"
	availRoute       = "GET /instance-availability"
)

// newServer is api.verda.com/v1: POST /oauth2/token trades the client credentials (the
// SDK's body, testdata/oauth2_token_request.json) for testdata/oauth2_token.json; the
// GETs want that token (else testdata/error.json with 401); /instance-availability
// answers the spot list when asked is_spot=true (the Go SDK's spelling) or isSpot=true.
func newServer() *providertest.Routes {
	s := &providertest.Routes{Files: map[string]string{
		tokenRoute: "testdata/oauth2_token.json", typesRoute: "testdata/instance_types.json",
		"GET /locations": "testdata/locations.json", availRoute: "testdata/instance_availability.json",
	}, Denied: "testdata/error.json"}
	want, _ := os.ReadFile("testdata/oauth2_token_request.json")
	s.Auth = func(r *http.Request) bool {
		if r.URL.Path == "/oauth2/token" {
			var got, w map[string]string
			json.Unmarshal(s.Last(tokenRoute).Body, &got)
			json.Unmarshal(want, &w)
			return got["grant_type"] == w["grant_type"] && got["client_id"] == w["client_id"] && got["client_secret"] == w["client_secret"]
		}
		return r.Header.Get("Authorization") == "Bearer "+token
	}
	s.Hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/instance-types" && q.Get("currency") != "usd":
			http.Error(w, `{"code": "invalid_request", "message": "currency"}`, http.StatusBadRequest)
			return true
		case r.URL.Path == "/instance-availability" && (q.Get("is_spot") == "true" || q.Get("isSpot") == "true"):
			b, _ := os.ReadFile("testdata/instance_availability_spot.json")
			w.Write(b)
			return true
		}
		return false
	}
	return s
}

func setup(t *testing.T, s *providertest.Routes, cfg Config) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint, cfg.ClientIDEnv, cfg.ClientSecretEnv = srv.URL, idEnv, secretEnv
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, nil), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func credentials(t *testing.T) {
	t.Setenv(idEnv, testID)
	t.Setenv(secretEnv, testKey)
}

func offer(region, typ, model string, count, mem, vcpus, ram float64, buy pricing.Purchase, price float64, avail bool) pricing.Offer {
	return pricing.Offer{Provider: "verda", Region: region, InstanceType: typ, GPUModel: model, GPUCount: count, GPUMemGiB: mem,
		VCPUs: vcpus, RAMGiB: ram, Purchase: buy, PriceUSDHr: price, Currency: "USD", ObservedAt: clock, Source: pricing.SourceAPI,
		Available: pricing.AvailabilityOf(avail)}
}

// want is worked out by hand from testdata: three GPU types (the CPU type is not an
// offer) in each of the three locations, on demand then spot, at the string prices per
// instance; memory per GPU is gpu_memory / GPUs (96 / 2 for the A6000 pair); available
// where the availability lists name the type: on demand the A6000 and V100 in FIN-01,
// spot the H100 and V100 in FIN-01.
func want(regions ...string) []pricing.Offer {
	od := map[string]bool{"FIN-01|2A6000.20V": true, "FIN-01|1V100.6V": true}
	sp := map[string]bool{"FIN-01|1H100.80S.30V": true, "FIN-01|1V100.6V": true}
	var out []pricing.Offer
	for _, ty := range []struct {
		typ, model           string
		count, mem, cpu, ram float64
		price, spot          float64
	}{
		{"1H100.80S.30V", "H100", 1, 80, 30, 120, 3.95, 1.70},
		{"2A6000.20V", "A6000", 2, 48, 20, 120, 1.98, 0.70},
		{"1V100.6V", "V100", 1, 16, 6, 23, 0.89, 0.25},
	} {
		for _, r := range regions {
			out = append(out, offer(r, ty.typ, ty.model, ty.count, ty.mem, ty.cpu, ty.ram, pricing.OnDemand, ty.price, od[r+"|"+ty.typ]),
				offer(r, ty.typ, ty.model, ty.count, ty.mem, ty.cpu, ty.ram, pricing.Spot, ty.spot, sp[r+"|"+ty.typ]))
		}
	}
	return out
}

func TestFetch(t *testing.T) {
	credentials(t)
	for _, tt := range []struct {
		name string
		cfg  Config
		want []pricing.Offer
	}{
		{"every location", Config{}, want("FIN-01", "FIN-02", "ICE-01")},
		{"regions", Config{Common: providers.Common{Regions: []string{"FIN-01"}}}, want("FIN-01")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer()
			snap, err := setup(t, s, tt.cfg).Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			providertest.DiffOffers(t, snap.Offers, tt.want)
			if len(snap.Warnings) != 0 {
				t.Errorf("warnings %q", snap.Warnings)
			}
			if s.Requests() != 5 {
				t.Errorf("%d requests; want the token and four reads", s.Requests())
			}
			providertest.CheckSnapshot(t, snap)
		})
	}
}

func TestErrors(t *testing.T) {
	b, _ := os.ReadFile("testdata/instance_types.json")
	types := string(b)
	for _, tt := range []struct {
		name, id, secret, route, body, want string
		code                                pricing.Code
	}{
		{name: "no client id", secret: testKey, want: "verda: no API key: environment variable " + idEnv + " is unset or empty", code: pricing.Invalid},
		{name: "no secret", id: testID, want: "environment variable " + secretEnv + " is unset or empty", code: pricing.Invalid},
		{name: "credentials refused", id: testID, secret: "wrong", want: "verda: token: the API refused the client credentials read from " + idEnv + " and " + secretEnv, code: pricing.Invalid},
		{name: "no token in the answer", id: testID, secret: testKey, route: tokenRoute, body: `{"token_type": "Bearer"}`, want: "verda: token: access_token is missing", code: pricing.Unavailable},
		{name: "types truncated", id: testID, secret: testKey, route: typesRoute, body: types[:300], want: "verda: instance types: truncated JSON body", code: pricing.Unavailable},
		{name: "price missing", id: testID, secret: testKey, route: typesRoute, body: strings.Replace(types, `"price_per_hour": "3.95",`, "", 1), want: "verda: instance type 1H100.80S.30V: price_per_hour is missing", code: pricing.Unavailable},
		{name: "price a word", id: testID, secret: testKey, route: typesRoute, body: strings.Replace(types, `"3.95"`, `"soon"`, 1), want: "verda: instance types: malformed JSON at price_per_hour", code: pricing.Unavailable},
		{name: "no GPU types", id: testID, secret: testKey, route: typesRoute, body: `[]`, want: "verda: the API listed no GPU offers", code: pricing.Unavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(idEnv, tt.id)
			t.Setenv(secretEnv, tt.secret)
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
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), token) {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	credentials(t)
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, newServer(), Config{}) })
}

func TestProgress(t *testing.T) {
	credentials(t)
	providertest.FetchProgress(t, setup(t, newServer(), Config{}), "requests", 5)
}

// BenchmarkFetch is one refresh's fetch of the fixtures (token, types, locations, two
// availability lists) from a local fake API (issue 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	b.Setenv(idEnv, testID)
	b.Setenv(secretEnv, testKey)
	srv := providertest.Serve(b, newServer())
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, ClientIDEnv: idEnv, ClientSecretEnv: secretEnv}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}
