package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/providertest"
)

// marketFixture is one issue-29 adapter's fake API, serving its package's testdata (the
// wire formats of shared/reference/providers), and a price change to refresh twice with.
type marketFixture struct {
	name   string
	routes *providertest.Routes
	config string // the section's keys besides enabled and endpoint
	env    map[string]string
	offers int // offers the fixtures hold (the adapter's own tests work them out)
	// change replaces old with new in route's body for the second refresh: instance's
	// price moves, so its history has two points.
	route, old, new, instance string
	purchase                  pricing.Purchase
}

func providerFile(pkg, name string) string {
	return filepath.Join("..", "..", "providers", pkg, "testdata", name)
}

func marketFixtures() []marketFixture {
	file := func(pkg, name string) string { return providerFile(pkg, name) }
	oci := &providertest.Routes{Files: map[string]string{
		"GET /a/ocom/docs/cloudestimator2/data/shapes.json": file("oracle", "shapes.json"),
		"GET /pls/apex/cetools/api/v1/products/":            file("oracle", "products_page1.json"),
	}}
	oci.Hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if r.URL.Query().Get("offset") == "4" {
			b, _ := os.ReadFile(file("oracle", "products_page2.json"))
			w.Write(b)
			return true
		}
		return false
	}
	verda := &providertest.Routes{Files: map[string]string{
		"POST /oauth2/token": file("verda", "oauth2_token.json"), "GET /instance-types": file("verda", "instance_types.json"),
		"GET /locations": file("verda", "locations.json"), "GET /instance-availability": file("verda", "instance_availability.json"),
	}, Auth: func(r *http.Request) bool {
		return r.URL.Path == "/oauth2/token" || r.Header.Get("Authorization") == "Bearer eyJhbGciOiJIUzI1NiJ9.test-access-token"
	}}
	verda.Hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if r.URL.Query().Get("is_spot") == "true" {
			b, _ := os.ReadFile(file("verda", "instance_availability_spot.json"))
			w.Write(b)
			return true
		}
		return false
	}
	return []marketFixture{
		{name: "vast", routes: &providertest.Routes{Files: map[string]string{"POST /api/v0/bundles/": file("vast", "bundles.json")}},
			offers: 7, route: "POST /api/v0/bundles/", old: `"dph_total": 0.2466759259259259`, new: `"dph_total": 0.31`,
			instance: "1x_RTX-4090_m22990", purchase: pricing.OnDemand},
		{name: "oci", routes: oci, offers: 5, route: "GET /pls/apex/cetools/api/v1/products/", old: `"value": 14`, new: `"value": 15`,
			instance: "BM.GPU.B200.8", purchase: pricing.OnDemand},
		{name: "tensordock", routes: &providertest.Routes{Files: map[string]string{"GET /api/v2/hostnodes": file("tensordock", "hostnodes_v2.json")},
			Auth: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer td-e2e-token" }},
			config: `api_key_env = "PICKER_E2E_TENSORDOCK"`, env: map[string]string{"PICKER_E2E_TENSORDOCK": "td-e2e-token"},
			offers: 5, route: "GET /api/v2/hostnodes", old: `"price_per_hr": 0.5`, new: `"price_per_hr": 0.55`,
			instance: "1x_geforcertx4090-pcie-24gb_hostnode-uuid", purchase: pricing.OnDemand},
		{name: "verda", routes: verda, config: "client_id_env = \"PICKER_E2E_VERDA_ID\"\nclient_secret_env = \"PICKER_E2E_VERDA_SECRET\"",
			env:    map[string]string{"PICKER_E2E_VERDA_ID": "id", "PICKER_E2E_VERDA_SECRET": "secret"},
			offers: 18, route: "GET /instance-types", old: `"spot_price": "1.70"`, new: `"spot_price": "1.85"`,
			instance: "1H100.80S.30V", purchase: pricing.Spot},
		{name: "hyperstack", routes: &providertest.Routes{Files: map[string]string{
			"GET /core/flavors": file("hyperstack", "flavors.json"), "GET /pricebook": file("hyperstack", "pricebook.json"), "GET /core/stocks": file("hyperstack", "stocks.json"),
		}, Auth: func(r *http.Request) bool { return r.Header.Get("api_key") == "hs-e2e-key" }},
			config: `api_key_env = "PICKER_E2E_HYPERSTACK"`, env: map[string]string{"PICKER_E2E_HYPERSTACK": "hs-e2e-key"},
			offers: 5, route: "GET /pricebook", old: `"value": "1.90"`, new: `"value": "2.05"`,
			instance: "n3-H100x1", purchase: pricing.OnDemand},
	}
}

// TestRefreshMarketplacesEndToEnd: `picker refresh --provider NAME` of each issue-29
// adapter, its endpoint pointed at a fake API that speaks the provider's wire format,
// lands every fixture offer in the store as live prices; a second refresh after one price
// moved gives that offer a history of two intervals, the first closed.
func TestRefreshMarketplacesEndToEnd(t *testing.T) {
	for _, m := range marketFixtures() {
		t.Run(m.name, func(t *testing.T) {
			for k, v := range m.env {
				t.Setenv(k, v)
			}
			srv := providertest.Serve(t, m.routes)
			cfg := filepath.Join(t.TempDir(), "c.toml")
			body := fmt.Sprintf("[providers.%s]\nenabled = true\nendpoint = %q\n%s\n", m.name, srv.URL, m.config)
			if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			db := tempDB(t)
			refresh := func() {
				t.Helper()
				r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", m.name, "-o", "json")
				if r.code != 0 {
					t.Fatalf("refresh exit %d: %s", r.code, r.stderr)
				}
				var res []struct {
					Provider   string `json:"provider"`
					OffersSeen int    `json:"offers_seen"`
					Error      string `json:"error"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 || res[0].OffersSeen != m.offers || res[0].Error != "" {
					t.Fatalf("refresh %q (%v); want %d offers seen", r.stdout, err, m.offers)
				}
			}
			refresh()
			o := runCLI(t, db, false, "offers", "--provider", m.name, "--purchase", "any", "-o", "json")
			var offers []pricing.Offer
			if err := json.Unmarshal([]byte(o.stdout), &offers); err != nil {
				t.Fatalf("offers %q: %v", o.stdout, err)
			}
			if len(offers) != m.offers {
				t.Errorf("%d %s offers stored, want %d", len(offers), m.name, m.offers)
			}
			for _, of := range offers {
				if of.Source != pricing.SourceAPI {
					t.Errorf("offer %s: source %q", of.Key(), of.Source)
				}
			}

			b, err := os.ReadFile(m.routes.Files[m.route])
			if err != nil || !strings.Contains(string(b), m.old) {
				t.Fatalf("fixture %s lacks %q (%v)", m.route, m.old, err)
			}
			m.routes.SetBody(m.route, strings.Replace(string(b), m.old, m.new, 1))
			refresh()
			h := runCLI(t, db, false, "history", "--provider", m.name, "--instance-type", m.instance, "--purchase", string(m.purchase), "-o", "json")
			if h.code != 0 {
				t.Fatalf("history exit %d: %s", h.code, h.stderr)
			}
			var points []struct {
				Region  string  `json:"region"`
				Price   float64 `json:"price_usd_hr"`
				ValidTo *string `json:"valid_to"`
			}
			if err := json.Unmarshal([]byte(h.stdout), &points); err != nil {
				t.Fatalf("history %q: %v", h.stdout, err)
			}
			// In the region of its last point (the live one; the embedded snapshot's rows
			// of the provider, closed by the first refresh, come first): the old price
			// closed, the new one open.
			if len(points) == 0 {
				t.Fatalf("no history of %s", m.instance)
			}
			region := points[len(points)-1].Region
			var prices []float64
			closed := 0
			for _, p := range points {
				if p.Region == region {
					prices = append(prices, p.Price)
					if p.ValidTo != nil {
						closed++
					}
				}
			}
			if len(prices) != 2 || closed != 1 || prices[0] == prices[1] {
				t.Errorf("history of %s in %s: prices %v, %d closed; want the old and the new, one closed", m.instance, region, prices, closed)
			}
		})
	}
}

// TestRecommendHostFacts: after a Vast.ai refresh, recommend judges each host: the RTX
// 3090 host on an 11.8 driver is excluded as old-cuda, --min-reliability leaves out hosts
// that state a lower score, the JSON carries each offer's host and -v shows the facts.
func TestRecommendHostFacts(t *testing.T) {
	m := marketFixtures()[0]
	srv := providertest.Serve(t, m.routes)
	cfg := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[providers.vast]\nenabled = true\nendpoint = %q\n", srv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := tempDB(t)
	if r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", "vast"); r.code != 0 {
		t.Fatalf("refresh exit %d: %s", r.code, r.stderr)
	}
	type answer struct {
		Offers []struct {
			InstanceType string       `json:"instance_type"`
			Host         pricing.Host `json:"host"`
		} `json:"offers"`
		Excluded []struct {
			GPUModel string `json:"gpu_model"`
			Offers   int    `json:"offers"`
			Code     string `json:"code"`
		} `json:"excluded"`
	}
	rec := func(args ...string) answer {
		t.Helper()
		r := runCLI(t, db, false, append([]string{"recommend", "--model", "tinyllama-1.1b", "--provider", "vast", "--rank", "hourly", "-o", "json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("recommend %v: exit %d: %s", args, r.code, r.stderr)
		}
		var a answer
		if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	names := func(a answer) []string {
		var out []string
		for _, o := range a.Offers {
			out = append(out, o.InstanceType)
		}
		return out
	}
	all := rec()
	if got, want := names(all), []string{"1x_RTX-4090_m22990", "2x_A100-SXM4_m31002", "8x_H100-SXM_m31001"}; !slices.Equal(got, want) {
		t.Errorf("fits %v, want %v (cheapest first; the 11.8 host left out)", got, want)
	}
	if len(all.Excluded) != 1 || all.Excluded[0].Code != "old-cuda" || all.Excluded[0].GPUModel != "RTX3090" || all.Excluded[0].Offers != 1 {
		t.Errorf("excluded %+v; want the RTX 3090 host's one on-demand offer as old-cuda", all.Excluded)
	}
	if len(all.Offers) > 0 && all.Offers[0].Host.MaxCUDA != 12.2 {
		t.Errorf("first offer's host %+v; want max_cuda 12.2", all.Offers[0].Host)
	}
	if got, want := names(rec("--min-reliability", "0.99")), []string{"2x_A100-SXM4_m31002", "8x_H100-SXM_m31001"}; !slices.Equal(got, want) {
		t.Errorf("--min-reliability 0.99: %v, want %v (the 0.970 host left out)", got, want)
	}
	bad := runCLI(t, db, false, "recommend", "--model", "tinyllama-1.1b", "--min-reliability", "98")
	if bad.code != 2 || !strings.Contains(bad.stderr, "min-reliability") {
		t.Errorf("--min-reliability 98: exit %d, %q; want exit 2 naming the flag", bad.code, bad.stderr)
	}
	v := runCLI(t, db, false, "recommend", "--model", "tinyllama-1.1b", "--provider", "vast", "--rank", "hourly", "-v")
	for _, want := range []string{"RELIABILITY", "MAX CUDA", "NET MB/S", "0.97", "12.2", "106/78"} {
		if !strings.Contains(v.stdout, want) {
			t.Errorf("recommend -v lacks %q:\n%s", want, v.stdout)
		}
	}
	ov := runCLI(t, db, false, "offers", "--provider", "vast", "-v")
	for _, want := range []string{"RELIABILITY", "DRIVER", "VERIFIED", "520.61.05", "unverified", "7000"} {
		if !strings.Contains(ov.stdout, want) {
			t.Errorf("offers -v lacks %q:\n%s", want, ov.stdout)
		}
	}
	if plain := runCLI(t, db, false, "offers", "--provider", "vast"); strings.Contains(plain.stdout, "RELIABILITY") {
		t.Errorf("offers without -v shows host facts:\n%s", plain.stdout)
	}
}
