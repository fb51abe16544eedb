// Package primeintellect prices the GPU offers that Prime Intellect, an aggregator,
// lists from other clouds (GET https://api.primeintellect.ai/api/v1/availability/gpus,
// Bearer key with Availability read, paged by page/page_size until totalCount). Each
// offer is one upstream provider's configuration in one data centre: its GPU count,
// the price of the whole configuration per hour (prices.onDemand, or communityPrice on
// Community Cloud as the prime CLI prefers), its vCPUs and RAM, and a stock status.
//
// Offers are named "<provider>:<cloudId>:<n>x" ("hyperstack:n3-H100x1:1x", with
// ":community" for Community Cloud) in the data centre as region, so upstreams never
// collide and stay visible; they are Prime Intellect's prices, kept apart from picker's
// direct adapters of the same clouds.
package primeintellect

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Prime Intellect offer.
const Name = "primeintellect"

// DefaultEndpoint is Prime Intellect's API base URL.
const DefaultEndpoint = "https://api.primeintellect.ai"

// DefaultAPIKeyEnv is the environment variable read when api_key_env is empty (the
// prime CLI's).
const DefaultAPIKeyEnv = "PRIME_API_KEY"

// pageSize is the largest page the API takes (docs: page_size 1 to 100).
const pageSize = 100

// Config is the [providers.primeintellect] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable holding an API key with the
	// Availability -> Read permission. Default PRIME_API_KEY.
	APIKeyEnv string `toml:"api_key_env"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name: Name,
	Description: "Prime Intellect availability API (API key): on-demand and spot prices of the GPU offers it aggregates, " +
		"as <provider>:<cloudId>:<n>x in each data centre, with their stock status",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds a Prime Intellect API key with Availability read (required)", Default: DefaultAPIKeyEnv},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Prime Intellect dashboard, API keys (Availability: Read)"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithSleep and WithBackoff.
type Option = httpx.Option

// Provider fetches Prime Intellect prices.
type Provider struct {
	httpx.Keyed
	regions []string // configured data centres; nil means all
}

// New checks cfg and returns a provider. The API key is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	k, err := httpx.NewKeyed(Name, cfg.Endpoint, DefaultEndpoint, cfg.APIKeyEnv, DefaultAPIKeyEnv, opts...)
	if err != nil {
		return nil, err
	}
	return &Provider{Keyed: k, regions: providers.RegionFilter(cfg.Regions)}, nil
}

// resource is an offer's disk, vcpu or memory block.
type resource struct {
	DefaultCount *float64 `json:"defaultCount"`
}

// offer is one item of the availability answer (docs "Get Availability Information";
// PrimeIntellect-ai/prime, prime_cli/api/availability.py).
type offer struct {
	CloudID     string    `json:"cloudId"`
	GPUType     string    `json:"gpuType"` // "H100_80GB"
	Socket      string    `json:"socket"`  // "PCIe", "SXM"
	Provider    string    `json:"provider"`
	DataCenter  string    `json:"dataCenter"`
	Country     string    `json:"country"`
	GPUCount    float64   `json:"gpuCount"`
	GPUMemory   float64   `json:"gpuMemory"`
	VCPU        *resource `json:"vcpu"`
	Memory      *resource `json:"memory"`
	StockStatus string    `json:"stockStatus"`
	Security    string    `json:"security"` // "secure_cloud", "community_cloud"
	Prices      *struct {
		OnDemand       *httpx.Number `json:"onDemand"`
		CommunityPrice *httpx.Number `json:"communityPrice"`
		Currency       string        `json:"currency"`
	} `json:"prices"`
	IsSpot *bool `json:"isSpot"`
}

type page struct {
	Items      *[]offer `json:"items"`
	TotalCount *int     `json:"totalCount"`
}

// Fetch reads every page of offers and returns them.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "primeintellect: %w", err)
	}
	key, err := httpx.APIKey(Name, p.KeyEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.Now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	header := http.Header{"Authorization": {"Bearer " + key}}
	var items []offer
	var guard providers.PageGuard // bounds the pages read at providers.MaxPages
	for n := 1; ; n++ {
		if err := guard.Next("primeintellect: availability", ""); err != nil {
			return nil, err
		}
		what := fmt.Sprintf("availability page %d", n)
		var pg page
		if err := p.Client.GetJSON(ctx, Name, what, p.URL("/api/v1/availability/gpus", fmt.Sprintf("page=%d&page_size=%d", n, pageSize)), header, p.KeyEnv, &pg); err != nil {
			return nil, err
		}
		if pg.Items == nil {
			return nil, httpx.Field(Name, what, "items")
		}
		if pg.TotalCount == nil {
			return nil, httpx.Field(Name, what, "totalCount")
		}
		items = append(items, *pg.Items...)
		tr.Page("availability", 0)
		if len(*pg.Items) == 0 || len(items) >= *pg.TotalCount {
			break
		}
	}
	snap := &providers.Snapshot{Regions: slices.Clone(p.regions)}
	var offers []pricing.Offer
	for i, it := range items {
		o, ok, err := p.offer(it, snap)
		if err != nil {
			return nil, pricing.Errorf(pricing.Unavailable, "primeintellect: items[%d] (%s %s): %w", i, it.Provider, it.CloudID, err)
		}
		if ok {
			o.ObservedAt = now
			offers = append(offers, o)
		}
	}
	snap, err = providers.Finish(Name, snap, offers, len(items))
	if err == nil {
		tr.Done("availability", len(snap.Offers))
	}
	return snap, err
}

// offer maps one item; ok is false for one left out (another region, no price), with a
// warning in snap where that is news.
func (p *Provider) offer(it offer, snap *providers.Snapshot) (pricing.Offer, bool, error) {
	region := it.DataCenter
	if region == "" {
		region = it.Country
	}
	if p.regions != nil && !slices.Contains(p.regions, region) {
		return pricing.Offer{}, false, nil
	}
	if it.Prices == nil {
		return pricing.Offer{}, false, fmt.Errorf("prices is missing")
	}
	if c := it.Prices.Currency; c != "" && !strings.EqualFold(c, "USD") {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("primeintellect: %s %s: price in %s, not USD; skipped", it.Provider, it.CloudID, c))
		return pricing.Offer{}, false, nil
	}
	community := it.Security == "community_cloud"
	price := it.Prices.OnDemand
	if community && it.Prices.CommunityPrice != nil {
		price = it.Prices.CommunityPrice // the prime CLI's Prices.price prefers it
	}
	if price == nil {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("primeintellect: %s %s in %s has no price; skipped", it.Provider, it.CloudID, region))
		return pricing.Offer{}, false, nil
	}
	model, mem, ok := providers.GPUFromName(it.GPUType+" "+it.Socket, 0)
	if !ok {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("primeintellect: %s %s: unknown GPU %q kept as is", it.Provider, it.CloudID, it.GPUType))
	}
	// gpuMemory is per GPU on the docs' one-GPU offers but a box total on some
	// multi-GPU ones (shared/reference/providers §21): divided when it exceeds one GPU.
	if m := it.GPUMemory; m > 0 {
		if it.GPUCount > 1 && mem > 0 && m > 1.15*mem {
			m /= it.GPUCount
		}
		mem = m
	}
	typ := fmt.Sprintf("%s:%s:%gx", it.Provider, strings.Join(strings.Fields(it.CloudID), "-"), it.GPUCount)
	if community {
		typ += ":community"
	}
	o := pricing.Offer{
		Provider: Name, Region: region, InstanceType: typ,
		GPUModel: model, GPUCount: it.GPUCount, GPUMemGiB: mem,
		VCPUs: count(it.VCPU), RAMGiB: count(it.Memory),
		Purchase: pricing.OnDemand, PriceUSDHr: float64(*price), Currency: "USD", Source: pricing.SourceAPI,
		Available: stock(it.StockStatus),
	}
	if it.IsSpot != nil && *it.IsSpot {
		o.Purchase = pricing.Spot
	}
	return o, true, nil
}

// count is a resource's default count (0 when not stated).
func count(r *resource) float64 {
	if r == nil || r.DefaultCount == nil {
		return 0
	}
	return *r.DefaultCount
}

// stock maps stockStatus: "Available", "High", "Medium" and "Low" have capacity;
// "Unavailable" and "Out of stock" have none; anything else says nothing known.
func stock(s string) pricing.Availability {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "available", "high", "medium", "low":
		return pricing.AvailableNow
	case "unavailable", "out of stock", "out_of_stock", "sold out":
		return pricing.SoldOut
	}
	return pricing.AvailabilityUnknown
}
