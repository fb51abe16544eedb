// Package oracle prices Oracle Cloud Infrastructure's GPU shapes from two public files
// that need no account: the cost estimator's shape list (which shapes exist, their GPUs,
// OCPUs and memory, and the price-list part each is billed by) and the Price List API
// (every part's pay-as-you-go USD price, paged by links rel=next). OCI prices are the
// same in every region; the lists do not say which region has which shape.
package oracle

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every OCI offer (the embedded snapshot's name).
const Name = "oci"

// Default endpoints: the Price List API (docs "Oracle Cloud Price List API") and the
// cost estimator's data files (gpuhunt's oci.py reads the same shapes.json).
const (
	DefaultPriceListEndpoint = "https://apexapps.oracle.com"
	DefaultEstimatorEndpoint = "https://www.oracle.com"
	priceListPath            = "/pls/apex/cetools/api/v1/products/"
	shapesPath               = "/a/ocom/docs/cloudestimator2/data/shapes.json"
	// GlobalRegion is the region of every offer when regions is empty: the price holds
	// in every region and the public lists do not say where a shape is offered.
	GlobalRegion = "global"
	// preemptibleDiscount: OCI preemptible capacity costs 50% of on-demand (OCI docs,
	// "Preemptible Instances"; gpuhunt prices it so), for shapes with allowPreemptible.
	preemptibleDiscount = 0.5
	// maxPages bounds the price list's next links, against a list that loops.
	maxPages = 100
)

// Config is the [providers.oci] section.
type Config struct {
	providers.Common
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "Oracle Cloud (OCI) public price list and cost-estimator shapes (no account): GPU shapes on demand, preemptible (spot) at half price where allowed",
	Needs:       providers.Needs{Kind: providers.NeedsNothing},
	Config:      Config{},
	New:         providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New (httpx.WithHTTPClient, WithClock, WithSleep, WithBackoff).
type Option = httpx.Option

// Provider fetches OCI prices.
type Provider struct {
	priceList *url.URL
	shapes    string
	regions   []string
	client    *httpx.Client
	now       func() time.Time
}

// New checks cfg and returns a provider. An endpoint replaces both hosts.
func New(cfg Config, opts ...Option) (*Provider, error) {
	pl, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultPriceListEndpoint)
	if err != nil {
		return nil, err
	}
	est, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEstimatorEndpoint)
	if err != nil {
		return nil, err
	}
	regions := []string{GlobalRegion}
	if len(cfg.Regions) > 0 {
		regions = slices.Clone(cfg.Regions)
		slices.Sort(regions)
		regions = slices.Compact(regions)
	}
	s := httpx.Apply(opts...)
	return &Provider{priceList: pl, shapes: est.String() + shapesPath, regions: regions, client: httpx.NewClient(Name, s), now: s.Now}, nil
}

type shapeList struct {
	Items *[]shape `json:"items"`
}

type shape struct {
	Name             string   `json:"name"`
	Hidden           bool     `json:"hidden"`
	Status           string   `json:"status"`
	AllowPreemptible bool     `json:"allowPreemptible"`
	BundleMemoryQty  float64  `json:"bundleMemoryQty"`
	GPUQty           *float64 `json:"gpuQty"`
	GPUMemoryQty     *float64 `json:"gpuMemoryQty"`
	ProcessorType    value    `json:"processorType"`
	ShapeType        value    `json:"shapeType"`
	SubType          value    `json:"subType"`
	Products         []struct {
		PartNumber string  `json:"partNumber"`
		Qty        float64 `json:"qty"`
		Type       value   `json:"type"`
	} `json:"products"`
}

type value struct {
	Value string `json:"value"`
}

type priceList struct {
	Items   *[]part `json:"items"`
	HasMore bool    `json:"hasMore"`
	Links   []struct {
		Rel  string `json:"rel"`
		Href string `json:"href"`
	} `json:"links"`
}

type part struct {
	PartNumber    string `json:"partNumber"`
	MetricName    string `json:"metricName"`
	Localizations []struct {
		CurrencyCode string `json:"currencyCode"`
		Prices       []struct {
			Model    string        `json:"model"`
			Value    *httpx.Number `json:"value"`
			RangeMin *float64      `json:"rangeMin"`
		} `json:"prices"`
	} `json:"currencyCodeLocalizations"`
}

// partPrice is a part's pay-as-you-go USD price and what it is counted by.
type partPrice struct {
	usd    float64
	perGPU bool // metric "GPU Per Hour": the price is per GPU of the shape
}

// Fetch reads the shapes and the price list and prices every GPU shape.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "oci: %w", err)
	}
	now := p.now().UTC()
	tr := providers.NewTracker(ctx, "requests", 2)
	var sl shapeList
	if err := p.client.GetJSON(ctx, Name, "shapes", p.shapes, nil, "", &sl); err != nil {
		return nil, err
	}
	if sl.Items == nil {
		return nil, httpx.Field(Name, "shapes", "items")
	}
	tr.Done("shapes", 0)
	prices, err := p.prices(ctx, tr)
	if err != nil {
		return nil, err
	}
	snap, err := p.snapshot(*sl.Items, prices, now)
	if err == nil {
		tr.Done("price list", len(snap.Offers))
	}
	return snap, err
}

// prices reads every page of the price list.
func (p *Provider) prices(ctx context.Context, tr *providers.Tracker) (map[string]partPrice, error) {
	u := *p.priceList
	u.Path += priceListPath
	u.RawQuery = "currencyCode=USD"
	next := u.String()
	out := map[string]partPrice{}
	for page := 1; next != ""; page++ {
		if page > maxPages {
			return nil, pricing.Errorf(pricing.Unavailable, "oci: price list: more than %d pages", maxPages)
		}
		what := fmt.Sprintf("price list page %d", page)
		var pl priceList
		if err := p.client.GetJSON(ctx, Name, what, next, nil, "", &pl); err != nil {
			return nil, err
		}
		if pl.Items == nil {
			return nil, httpx.Field(Name, what, "items")
		}
		for _, it := range *pl.Items {
			if v, ok := payg(it); ok {
				out[it.PartNumber] = partPrice{usd: v, perGPU: strings.EqualFold(strings.TrimSpace(it.MetricName), "GPU Per Hour")}
			}
		}
		tr.Page("price list", 0)
		next = ""
		if pl.HasMore {
			for _, l := range pl.Links {
				if l.Rel == "next" && l.Href != "" {
					// The link is absolute (apexapps.oracle.com); it goes to the
					// configured endpoint, so a proxy or test server sees every page.
					n, err := httpx.Rebase(p.priceList, l.Href)
					if err != nil {
						return nil, pricing.Errorf(pricing.Unavailable, "oci: %s: next link %q: %v", what, l.Href, err)
					}
					next = n
				}
			}
			if next == "" {
				return nil, pricing.Errorf(pricing.Unavailable, "oci: %s: hasMore without a next link", what)
			}
		}
	}
	return out, nil
}

// payg is the part's untiered pay-as-you-go USD price (the first tier of a tiered part).
func payg(it part) (float64, bool) {
	for _, l := range it.Localizations {
		if l.CurrencyCode != "USD" {
			continue
		}
		for _, pr := range l.Prices {
			if pr.Model == "PAY_AS_YOU_GO" && pr.Value != nil && (pr.RangeMin == nil || *pr.RangeMin == 0) {
				return float64(*pr.Value), true
			}
		}
	}
	return 0, false
}

var (
	// "BM.GPU.H100.8" -> H100; "BM.GPU.A100-v2.8" -> A100; "VM.GPU.A10.1" -> A10.
	gpuNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\.GPU\.([A-Z0-9]+)`) })
	// The older generations are named by number (gpuhunt's oci.py get_gpu_name).
	generations = map[string]string{"GPU2": "P100", "GPU3": "V100", "GPU4": "A100"}
)

// gpuName is the GPU a shape's name says it has, "" for none.
func gpuName(shape string) string {
	for _, part := range strings.Split(strings.ToUpper(shape), ".") {
		if g, ok := generations[part]; ok {
			return g
		}
	}
	if m := gpuNameRe().FindStringSubmatch(shape); m != nil {
		return strings.ToUpper(m[1])
	}
	return ""
}

func (p *Provider) snapshot(shapes []shape, prices map[string]partPrice, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{}
	if !slices.Equal(p.regions, []string{GlobalRegion}) {
		snap.Regions = slices.Clone(p.regions)
	}
	gpuShapes := 0
	for _, sh := range shapes {
		if sh.GPUQty == nil || *sh.GPUQty <= 0 || sh.Hidden || !strings.EqualFold(sh.Status, "ACTIVE") {
			continue
		}
		gpuShapes++
		count := *sh.GPUQty
		var ocpu *struct {
			PartNumber string  `json:"partNumber"`
			Qty        float64 `json:"qty"`
			Type       value   `json:"type"`
		}
		for i := range sh.Products {
			if sh.Products[i].Type.Value == "ocpu" {
				ocpu = &sh.Products[i]
			}
		}
		if ocpu == nil {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("oci: %s: no ocpu product to price it by; skipped", sh.Name))
			continue
		}
		pp, ok := prices[ocpu.PartNumber]
		if !ok {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("oci: %s: part %s is not in the price list; skipped", sh.Name, ocpu.PartNumber))
			continue
		}
		// A GPU shape's ocpu product is its GPU part, priced per GPU (metric "GPU Per
		// Hour"); an OCPU-priced part counts the shape's OCPUs.
		price := pp.usd * ocpu.Qty
		if pp.perGPU {
			price = pp.usd * count
		}
		mem := 0.0
		if sh.GPUMemoryQty != nil {
			mem = *sh.GPUMemoryQty / count
		}
		raw := gpuName(sh.Name)
		if raw == "" {
			raw = sh.Name
		}
		model, known := pricing.NormalizeGPU(raw, mem)
		if !known {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("oci: %s: unknown GPU %q kept as is", sh.Name, model))
		}
		if mem == 0 {
			if g, ok := pricing.LookupGPU(model); ok {
				mem = g.MemGB
			}
		}
		// 1 OCPU is 2 vCPUs on x86 and 1 on Arm; the data calls the A10 and A100 GPU
		// shapes Arm, which they are not (gpuhunt's oci.py is_arm_cpu).
		vcpus := ocpu.Qty * 2
		if strings.EqualFold(sh.ProcessorType.Value, "arm") && model != "A10" && !strings.HasPrefix(model, "A100") {
			vcpus = ocpu.Qty
		}
		for _, region := range p.regions {
			o := pricing.Offer{Provider: Name, Region: region, InstanceType: sh.Name, GPUModel: model, GPUCount: count,
				GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: sh.BundleMemoryQty, Purchase: pricing.OnDemand,
				PriceUSDHr: math.Round(price*1e6) / 1e6, Currency: "USD", ObservedAt: now, Source: pricing.SourceAPI}
			snap.Offers = append(snap.Offers, o)
			if sh.AllowPreemptible {
				o.Purchase = pricing.Spot
				o.PriceUSDHr = math.Round(price*preemptibleDiscount*1e6) / 1e6
				snap.Offers = append(snap.Offers, o)
			}
		}
	}
	var warn []string
	snap.Offers, warn = providers.Finalize(Name, snap.Offers)
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) == 0 {
		if gpuShapes == 0 {
			return nil, pricing.Errorf(pricing.Unavailable, "oci: the shape list has no GPU shapes")
		}
		return nil, pricing.Errorf(pricing.Unavailable, "oci: no GPU shape could be priced (see warnings: %s)", strings.Join(snap.Warnings, "; "))
	}
	return snap, nil
}
