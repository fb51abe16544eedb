// Package azure prices Azure's GPU virtual machines from the public Retail Prices API
// (https://prices.azure.com/api/retail/prices, no credentials). The API carries prices
// only; the GPU, vCPU and RAM of each size come from the embedded size table
// (sizes.csv). Prices are USD, Linux, pay-as-you-go and spot.
package azure

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Azure offer.
const Name = "azure"

// DefaultEndpoint is the Retail Prices API's base URL.
const DefaultEndpoint = "https://prices.azure.com"

// apiVersion is the Retail Prices API version asked for; from it on, filter values are
// case-sensitive.
const apiVersion = "2023-01-01-preview"

// pageSize is the API's page length. A full page without a NextPageLink (observed by
// mistake, Microsoft Q&A 2023-03-10) is followed with $skip instead of ending the scan.
const pageSize = 1000

// maxPages bounds one region's scan, so a server that keeps linking never loops forever.
const maxPages = 500

// concurrency is how many regions are fetched at once.
const concurrency = 4

// DefaultRegions are the regions priced when `regions` is empty: the ones with the most
// GPU sizes in the embedded snapshot (US, Europe, Asia-Pacific).
var DefaultRegions = []string{
	"eastus", "eastus2", "southcentralus", "westus", "westus2", "westus3",
	"westeurope", "northeurope", "uksouth", "swedencentral",
	"japaneast", "australiaeast", "southeastasia",
}

// Config is the [providers.azure] section. The currency is fixed to USD.
type Config struct {
	providers.Common
	// APIKeyEnv is accepted for symmetry with the other HTTP adapters and ignored: the
	// Retail Prices API is public.
	APIKeyEnv string `toml:"api_key_env"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name: Name,
	Description: "Azure Retail Prices API (public, no credentials): Linux pay-as-you-go and spot prices of NC/ND/NV GPU VM sizes; " +
		"regions default to " + strings.Join(DefaultRegions, ", "),
	Options: []providers.Option{
		{Key: "api_key_env", Help: "not used: the Retail Prices API needs no key (accepted so every HTTP provider takes the same keys)"},
	},
	Needs:  providers.Needs{Kind: providers.NeedsNothing, Where: "public Retail Prices API"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithPolicy, WithSleep and
// WithBackoff set the HTTP client, the clock and the shared retry policy.
type Option = httpx.Option

// Provider fetches Azure GPU prices.
type Provider struct {
	base    *url.URL
	regions []string
	client  *httpx.Client
	now     func() time.Time
	sizes   map[string]Size
}

// Compiled on first use, not in package init, which every picker command runs.
var regionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9]*$`) })

// New checks cfg and returns a provider.
func New(cfg Config, opts ...Option) (*Provider, error) {
	base, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	regions := slices.Clone(cfg.Regions)
	if len(regions) == 0 {
		regions = slices.Clone(DefaultRegions)
	}
	for _, r := range regions {
		if !regionRe().MatchString(r) {
			return nil, pricing.ParamErrorf(pricing.Invalid, "regions", "azure: region %q: want an ARM region name such as eastus", r)
		}
	}
	slices.Sort(regions)
	regions = slices.Compact(regions)
	sz, err := Sizes()
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "%w", err)
	}
	s := httpx.Apply(opts...)
	return &Provider{base: base, regions: regions, client: httpx.NewClient("", s), now: s.Now, sizes: sz}, nil
}

// Regions returns the regions a Fetch prices.
func (p *Provider) Regions() []string { return slices.Clone(p.regions) }

// Fetch prices every configured region. A failed region is reported in Snapshot.Failed
// and left out of Snapshot.Regions; the fetch fails when every region failed, when ctx
// is done, or when no region had any GPU price.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "azure: %w", err)
	}
	now := p.now().UTC()
	type result struct {
		offers  []pricing.Offer
		unknown []string // GPU sizes not in the table
		err     error
	}
	results := make([]result, len(p.regions))
	tr := providers.NewTracker(ctx, "regions", len(p.regions))
	var g errgroup.Group
	g.SetLimit(concurrency)
	for i, region := range p.regions {
		g.Go(func() error {
			if err := ctx.Err(); err != nil { // cancelled while waiting for a slot
				results[i].err = pricing.Errorf(pricing.Unavailable, "azure: %s: %w", region, err)
				return nil
			}
			results[i].offers, results[i].unknown, results[i].err = p.fetchRegion(ctx, region, now, tr)
			tr.Done(region, 0)
			return nil
		})
	}
	_ = g.Wait() // a region's failure is in its result, never a group error
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "azure: %w", err)
	}

	snap := &providers.Snapshot{}
	unknownIn := map[string][]string{}
	var errs []error
	for i, r := range results {
		region := p.regions[i]
		if r.err != nil {
			if snap.Failed == nil {
				snap.Failed = map[string]error{}
			}
			snap.Failed[region] = r.err
			errs = append(errs, r.err)
			continue
		}
		snap.Regions = append(snap.Regions, region)
		snap.Offers = append(snap.Offers, r.offers...)
		for _, s := range r.unknown {
			unknownIn[s] = append(unknownIn[s], region)
		}
	}
	if len(snap.Regions) == 0 {
		return nil, pricing.Errorf(pricing.Unavailable, "azure: every region failed: %w", errors.Join(errs...))
	}
	for _, s := range slices.Sorted(maps.Keys(unknownIn)) {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("azure: GPU size %s is not in the size table (seen in %s); its prices were skipped", s, strings.Join(unknownIn[s], ", ")))
	}
	// Each region already keeps one offer per Key (the better meter) and refuses an
	// invalid one as a malformed page; Finalize is the shared contract step on top.
	var warn []string
	snap.Offers, warn = providers.Finalize(Name, snap.Offers)
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) == 0 {
		return nil, pricing.Errorf(pricing.Unavailable, "azure: no GPU prices found in %s", strings.Join(snap.Regions, ", "))
	}
	if providers.WantsMarket(ctx) {
		snap.Market = p.readDisks(ctx, snap.Regions, now) // storage.go
	}
	return snap, nil
}

// page is one Retail Prices answer.
type page struct {
	BillingCurrency string  `json:"BillingCurrency"`
	Items           *[]item `json:"Items"`
	NextPageLink    string  `json:"NextPageLink"`
	Count           int     `json:"Count"`
}

// item is one price row; only the fields the adapter reads.
type item struct {
	CurrencyCode         string   `json:"currencyCode"`
	RetailPrice          *float64 `json:"retailPrice"`
	UnitPrice            *float64 `json:"unitPrice"`
	ArmRegionName        string   `json:"armRegionName"`
	MeterName            string   `json:"meterName"`
	ProductName          string   `json:"productName"`
	SkuName              string   `json:"skuName"`
	ServiceName          string   `json:"serviceName"`
	UnitOfMeasure        string   `json:"unitOfMeasure"`
	Type                 string   `json:"type"`
	IsPrimaryMeterRegion *bool    `json:"isPrimaryMeterRegion"`
	ArmSkuName           string   `json:"armSkuName"`
	ReservationTerm      string   `json:"reservationTerm"`
}

// filter is the OData $filter for one region. Filter values are case-sensitive. The
// Windows clause (as gpuhunt sends it) halves the rows; the adapter still drops any
// Windows row the server lets through.
func filter(region string) string {
	return "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq '" + region +
		"' and contains(productName, 'Windows') eq false"
}

// odataEscape percent-encodes a query value with %20 for spaces, as Azure's own links do.
func odataEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

func (p *Provider) firstURL(region string) string { return p.queryURL(filter(region)) }

// queryURL is the first page's URL of a Retail Prices query with OData filter f.
func (p *Provider) queryURL(f string) string {
	u := *p.base
	u.Path += "/api/retail/prices"
	u.RawQuery = "api-version=" + apiVersion + "&$filter=" + odataEscape(f)
	return u.String()
}

// nextURL points Azure's absolute NextPageLink at the configured endpoint (httpx.Rebase).
func (p *Provider) nextURL(link string) (string, error) { return httpx.Rebase(p.base, link) }

// withSkip replaces (or adds) the $skip parameter of a page URL.
func withSkip(raw string, skip int) string {
	base, query, _ := strings.Cut(raw, "?")
	parts := slices.DeleteFunc(strings.Split(query, "&"), func(s string) bool {
		return s == "" || strings.HasPrefix(s, "$skip=") || strings.HasPrefix(s, "%24skip=")
	})
	return base + "?" + strings.Join(append(parts, "$skip="+strconv.Itoa(skip)), "&")
}

// fetchRegion reads every page of one region and returns its GPU offers and the GPU
// sizes the table lacks; tr hears of each page and the offers new on it.
func (p *Provider) fetchRegion(ctx context.Context, region string, now time.Time, tr *providers.Tracker) ([]pricing.Offer, []string, error) {
	best := map[pricing.Key]candidate{}
	var order []pricing.Key
	counted := 0 // offers in order that tr has heard of
	unknown := map[string]bool{}
	rows, err := p.eachPage(ctx, region, p.firstURL(region), func(n int, items []item) error {
		if len(items) == 0 {
			tr.Page(region, 0) // the empty last page
			return nil
		}
		for j, it := range items {
			o, ok, err := p.offer(it, region, now)
			if err != nil {
				return pricing.Errorf(pricing.Unavailable, "azure: %s: page %d: Items[%d]: %w", region, n, j, err)
			}
			if !ok {
				if IsGPUSize(it.ArmSkuName) && p.sizes[it.ArmSkuName].Name == "" && it.ArmRegionName == region {
					unknown[it.ArmSkuName] = true
				}
				continue
			}
			c := candidate{o, it.IsPrimaryMeterRegion == nil || *it.IsPrimaryMeterRegion}
			prev, dup := best[o.Key()]
			if !dup {
				order = append(order, o.Key())
			}
			if !dup || c.better(prev) {
				best[o.Key()] = c
			}
		}
		tr.Page(region, len(order)-counted)
		counted = len(order)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if rows == 0 {
		return nil, nil, pricing.Errorf(pricing.Unavailable, "azure: %s: no prices at all (is %q an Azure region?)", region, region)
	}
	offers := make([]pricing.Offer, 0, len(order))
	for _, k := range order {
		offers = append(offers, best[k].Offer)
	}
	return offers, slices.Sorted(maps.Keys(unknown)), nil
}

// eachPage reads every page of a Retail Prices query from first, handing each page's
// items to fn (an empty page ends the list), following NextPageLink (rebased on the
// endpoint) or $skip, and refusing a repeated page or more than maxPages; it returns the
// rows read.
func (p *Provider) eachPage(ctx context.Context, region, first string, fn func(n int, items []item) error) (int, error) {
	next := first
	seenURL := map[string]bool{}
	rows := 0
	for n := 1; ; n++ {
		if n > maxPages {
			return rows, pricing.Errorf(pricing.Unavailable, "azure: %s: more than %d pages; giving up", region, maxPages)
		}
		if seenURL[next] {
			return rows, pricing.Errorf(pricing.Unavailable, "azure: %s: page %d: NextPageLink repeats an earlier page", region, n)
		}
		seenURL[next] = true
		resp, err := p.client.Do(ctx, httpx.Request{URL: next, Header: http.Header{"Accept": {"application/json"}}})
		if err != nil {
			return rows, fmt.Errorf("azure: %s: page %d: %w", region, n, err)
		}
		var pg page
		if err := httpx.DecodeJSON(Name, fmt.Sprintf("%s: page %d", region, n), resp.Body, &pg); err != nil {
			return rows, err
		}
		if pg.Items == nil {
			return rows, httpx.Field(Name, fmt.Sprintf("%s: page %d", region, n), "Items")
		}
		if err := fn(n, *pg.Items); err != nil {
			return rows, err
		}
		if len(*pg.Items) == 0 {
			return rows, nil
		}
		rows += len(*pg.Items)
		switch {
		case pg.NextPageLink != "":
			if next, err = p.nextURL(pg.NextPageLink); err != nil {
				return rows, pricing.Errorf(pricing.Unavailable, "azure: %s: page %d: NextPageLink %q: %v", region, n, pg.NextPageLink, err)
			}
		case len(*pg.Items) >= pageSize:
			next = withSkip(next, rows)
		default:
			return rows, nil
		}
	}
}

// candidate is an offer with how trustworthy its row is, for choosing among rows that
// price the same offer (a size listed under two meters).
type candidate struct {
	pricing.Offer
	primary bool
}

// better prefers a primary-meter-region row, then the lower price.
func (c candidate) better(than candidate) bool {
	if c.primary != than.primary {
		return c.primary
	}
	return c.PriceUSDHr < than.PriceUSDHr
}

// offer maps one row to an offer; ok is false for rows that are not Linux hourly prices
// of a known GPU size. An error means the row is broken (a GPU row without a price).
func (p *Provider) offer(it item, region string, now time.Time) (pricing.Offer, bool, error) {
	switch {
	case it.Type != "Consumption": // Reservation (price per term), DevTestConsumption
		return pricing.Offer{}, false, nil
	case it.ServiceName != "" && it.ServiceName != "Virtual Machines":
		return pricing.Offer{}, false, nil
	case strings.HasSuffix(strings.TrimSpace(it.ProductName), "Windows"):
		return pricing.Offer{}, false, nil
	case strings.Contains(it.MeterName, "Low Priority") || strings.Contains(it.SkuName, "Low Priority"):
		return pricing.Offer{}, false, nil
	case it.UnitOfMeasure != "" && it.UnitOfMeasure != "1 Hour":
		return pricing.Offer{}, false, nil
	case it.ArmRegionName != region:
		return pricing.Offer{}, false, nil
	}
	size, known := p.sizes[it.ArmSkuName]
	if !known {
		return pricing.Offer{}, false, nil
	}
	price := it.RetailPrice
	if price == nil {
		price = it.UnitPrice
	}
	if price == nil {
		return pricing.Offer{}, false, fmt.Errorf("%s: retailPrice is missing", it.ArmSkuName)
	}
	if *price <= 0 {
		return pricing.Offer{}, false, nil // zero-price rows exist (retired or free meters)
	}
	if it.CurrencyCode != "" && it.CurrencyCode != "USD" {
		return pricing.Offer{}, false, fmt.Errorf("%s: currency %s, want USD", it.ArmSkuName, it.CurrencyCode)
	}
	purchase := pricing.OnDemand
	if strings.HasSuffix(it.MeterName, " Spot") || strings.HasSuffix(it.SkuName, " Spot") {
		purchase = pricing.Spot
	}
	model, _ := size.gpuModel() // TestSizeTable keeps every table model canonical
	// A fractional size (1/6 of an A10) keeps the whole GPU's memory with a fractional
	// count, as the embedded snapshot does; its slice holds count × memory
	// (pricing.Offer.MemPerDeviceGiB).
	mem := size.GPUMemGiB
	if size.GPUCount < 1 {
		if g, known := pricing.LookupGPU(model); known {
			mem = g.MemGB
		} else {
			mem = size.GPUMemGiB / size.GPUCount
		}
	}
	o := pricing.Offer{
		Provider:     Name,
		Region:       it.ArmRegionName,
		InstanceType: it.ArmSkuName,
		GPUModel:     model,
		GPUCount:     size.GPUCount,
		GPUMemGiB:    mem,
		VCPUs:        size.VCPUs,
		RAMGiB:       size.RAMGiB,
		Purchase:     purchase,
		PriceUSDHr:   *price,
		Currency:     "USD",
		ObservedAt:   now,
		Source:       pricing.SourceAPI,
	}
	if err := o.Validate(); err != nil {
		return pricing.Offer{}, false, err
	}
	return o, true, nil
}
