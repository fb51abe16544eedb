package oracle

import (
	"context"
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

const (
	shapesRoute = "GET " + shapesPath
	pricesRoute = "GET " + priceListPath
)

// newServer serves the cost estimator's shapes.json and the Price List API's two
// pages: page 1 links to page 2 (offset=4) at apexapps.oracle.com, which the adapter
// must send to the test server instead. Both want currencyCode=USD.
func newServer() *providertest.Routes {
	s := &providertest.Routes{Files: map[string]string{shapesRoute: "testdata/shapes.json", pricesRoute: "testdata/products_page1.json"}}
	s.Hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if r.URL.Path != priceListPath {
			return false
		}
		if r.URL.Query().Get("currencyCode") != "USD" {
			http.Error(w, `{"error": "currencyCode"}`, http.StatusBadRequest)
			return true
		}
		if r.URL.Query().Get("offset") == "4" {
			b, _ := os.ReadFile("testdata/products_page2.json")
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
	cfg.Endpoint = srv.URL
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, nil), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offer(region, typ, model string, count, mem, vcpus, ram float64, buy pricing.Purchase, price float64) pricing.Offer {
	return pricing.Offer{Provider: "oci", Region: region, InstanceType: typ, GPUModel: model, GPUCount: count, GPUMemGiB: mem,
		VCPUs: vcpus, RAMGiB: ram, Purchase: buy, PriceUSDHr: price, Currency: "USD", ObservedAt: clock, Source: pricing.SourceAPI}
}

// want is every priced shape in each region, in the adapter's order (shape by shape,
// each in every region, on demand then spot), worked out by hand from testdata: price =
// the GPU part's "GPU Per Hour" price x gpuQty (B200 $14, H100 $10 on page 1; A10 $2,
// A100 $3.05 on page 2); GPU memory gpuMemoryQty / gpuQty; vCPUs 2 per OCPU (the A10
// shape says arm, which it is not); the A10 shape allows preemptible capacity at half
// price. The hidden shape and the CPU shapes are not offers.
func want(regions ...string) []pricing.Offer {
	var out []pricing.Offer
	for _, sh := range [][]pricing.Offer{
		{offer("", "BM.GPU.B200.8", "B200", 8, 180, 256, 4096, pricing.OnDemand, 112)},
		{offer("", "BM.GPU.H100.8", "H100", 8, 80, 224, 2048, pricing.OnDemand, 80)},
		{offer("", "VM.GPU.A10.1", "A10", 1, 24, 30, 240, pricing.OnDemand, 2), offer("", "VM.GPU.A10.1", "A10", 1, 24, 30, 240, pricing.Spot, 1)},
		{offer("", "BM.GPU4.8", "A100", 8, 40, 128, 2048, pricing.OnDemand, 24.4)},
	} {
		for _, r := range regions {
			for _, o := range sh {
				o.Region = r
				out = append(out, o)
			}
		}
	}
	return out
}

func TestFetch(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		want        []pricing.Offer
		wantRegions []string
	}{
		{"global", Config{}, want("global"), nil},
		{"regions", Config{Common: providers.Common{Regions: []string{"us-ashburn-1", "eu-frankfurt-1"}}},
			want("eu-frankfurt-1", "us-ashburn-1"), []string{"eu-frankfurt-1", "us-ashburn-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer()
			snap, err := setup(t, s, tt.cfg).Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			providertest.DiffOffers(t, snap.Offers, tt.want)
			if !reflect.DeepEqual(snap.Regions, tt.wantRegions) {
				t.Errorf("regions %v, want %v", snap.Regions, tt.wantRegions)
			}
			if len(snap.Warnings) != 0 {
				t.Errorf("warnings %q", snap.Warnings)
			}
			if s.Requests() != 3 {
				t.Errorf("%d requests; want shapes and two price-list pages", s.Requests())
			}
			providertest.CheckSnapshot(t, snap)
		})
	}
}

func TestGPUName(t *testing.T) {
	for shape, want := range map[string]string{
		"VM.GPU.A10.2": "A10", "BM.GPU.A100-v2.8": "A100", "BM.GPU4.8": "A100", "VM.GPU3.4": "V100",
		"VM.GPU2.1": "P100", "BM.GPU.H100.8": "H100", "VM.Standard2.8": "", "BM.GPU.MI300X.8": "MI300X",
	} {
		if got := gpuName(shape); got != want {
			t.Errorf("gpuName(%q) = %q, want %q", shape, got, want)
		}
	}
}

func TestErrors(t *testing.T) {
	shapes, _ := os.ReadFile("testdata/shapes.json")
	tests := []struct {
		name  string
		route string
		body  string
		want  string
	}{
		{"shapes truncated", shapesRoute, string(shapes[:200]), "oci: shapes: truncated JSON body: ends inside items[0]"},
		{"shapes without items", shapesRoute, `{}`, "oci: shapes: items is missing"},
		{"no GPU shapes", shapesRoute, `{"items": []}`, "oci: the shape list has no GPU shapes"},
		{"price list without items", pricesRoute, `{"hasMore": false}`, "oci: price list page 1: items is missing"},
		{"more without a link", pricesRoute, `{"items": [], "hasMore": true, "links": []}`, "oci: price list page 1: hasMore without a next link"},
		{"no prices", pricesRoute, `{"items": [], "hasMore": false}`, "oci: no GPU shape could be priced (see warnings: oci: BM.GPU.B200.8: part B110978 is not in the price list; skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer()
			s.SetBody(tt.route, tt.body)
			_, err := setup(t, s, Config{}).Fetch(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tt.want)
			}
			if c := pricing.ErrorCode(err); c != pricing.Unavailable {
				t.Errorf("code %q, want unavailable", c)
			}
		})
	}
}

// TestLoopingPages: a price list whose next link never ends stops at maxPages.
func TestLoopingPages(t *testing.T) {
	s := newServer()
	s.SetBody(pricesRoute, `{"items": [], "hasMore": true, "links": [{"rel": "next", "href": "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD&offset=0"}]}`)
	_, err := setup(t, s, Config{}).Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "more than 100 pages") {
		t.Fatalf("error %v; want the page bound", err)
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, newServer(), Config{}) })
}

func TestProgress(t *testing.T) {
	s := newServer()
	_, log := providertest.FetchProgress(t, setup(t, s, Config{}), "requests", 2)
	if got := log.DoneParts(); !reflect.DeepEqual(got, []string{"shapes", "price list"}) {
		t.Errorf("parts done %v", got)
	}
}

// BenchmarkFetch is one refresh's fetch of the fixtures (shapes and two price-list
// pages) from a local fake API (issue 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	srv := providertest.Serve(b, newServer())
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}
