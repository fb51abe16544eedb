// Package hyperstack prices Hyperstack's (NexGen Cloud Infrahub) GPU flavors from its API
// (https://infrahub-api.nexgencloud.com/v1, header api_key): GET /core/flavors (each
// region's flavors: GPU model and count, vCPUs, RAM), GET /pricebook (the hourly price
// of one GPU of each model; "-spot" models are the spot prices) and GET /core/stocks
// (free GPUs per region, model and count, which say whether a flavor can launch now).
package hyperstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Hyperstack offer.
const Name = "hyperstack"

// DefaultEndpoint is the Infrahub API base URL (NexGenCloud/hyperstack-sdk-go
// api/openapi.yaml servers).
const DefaultEndpoint = "https://infrahub-api.nexgencloud.com/v1"

// DefaultAPIKeyEnv is read when api_key_env is empty.
const DefaultAPIKeyEnv = "HYPERSTACK_API_KEY"

// spotSuffix marks a spot GPU model and flavor ("H100-80G-PCIe-spot", "n3-H100x1-spot").
const spotSuffix = "-spot"

// Config is the [providers.hyperstack] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable with the API key (console, API keys).
	APIKeyEnv string `toml:"api_key_env"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "Hyperstack API (API key): GPU flavors priced from the pricebook, on demand and spot, with stock per region",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds the Hyperstack API key (required)", Default: DefaultAPIKeyEnv},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Hyperstack console, API keys"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New (httpx.WithHTTPClient, WithClock, WithSleep, WithBackoff).
type Option = httpx.Option

// Provider fetches Hyperstack prices.
type Provider struct {
	base    string
	keyEnv  string
	regions []string
	client  *httpx.Client
	now     func() time.Time
}

// New checks cfg and returns a provider. The key is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	base, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	env := cfg.APIKeyEnv
	if env == "" {
		env = DefaultAPIKeyEnv
	}
	s := httpx.Apply(opts...)
	return &Provider{base: base.String(), keyEnv: env, regions: providers.RegionFilter(cfg.Regions), client: httpx.NewClient("", s), now: s.Now}, nil
}

type flavorsAnswer struct {
	Data *[]struct {
		Flavors []flavor `json:"flavors"`
	} `json:"data"`
}

type flavor struct {
	Name           string  `json:"name"`
	Region         string  `json:"region_name"`
	CPU            float64 `json:"cpu"`
	RAM            float64 `json:"ram"`
	GPU            string  `json:"gpu"`
	GPUCount       float64 `json:"gpu_count"`
	StockAvailable *bool   `json:"stock_available"`
}

type priceItem struct {
	Name  string        `json:"name"`
	Value *httpx.Number `json:"value"` // a number in the spec, a string in practice
}

type stocksAnswer struct {
	Stocks *[]struct {
		Region string `json:"region"`
		Models []struct {
			Model          string             `json:"model"`
			Configurations map[string]float64 `json:"configurations"`
		} `json:"models"`
	} `json:"stocks"`
}

// Fetch reads flavors, pricebook and stocks and prices every GPU flavor.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "hyperstack: %w", err)
	}
	key, err := httpx.APIKey(Name, p.keyEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.now().UTC()
	h := http.Header{"api_key": {key}}
	tr := providers.NewTracker(ctx, "requests", 3)
	var fa flavorsAnswer
	if err := p.client.GetJSON(ctx, Name, "flavors", p.base+"/core/flavors", h, p.keyEnv, &fa); err != nil {
		return nil, err
	}
	if fa.Data == nil {
		return nil, httpx.Field(Name, "flavors", "data")
	}
	tr.Done("flavors", 0)
	var book []priceItem
	if err := p.client.GetJSON(ctx, Name, "pricebook", p.base+"/pricebook", h, p.keyEnv, &book); err != nil {
		return nil, err
	}
	tr.Done("pricebook", 0)
	var sa stocksAnswer
	if err := p.client.GetJSON(ctx, Name, "stocks", p.base+"/core/stocks", h, p.keyEnv, &sa); err != nil {
		return nil, err
	}
	if sa.Stocks == nil {
		return nil, httpx.Field(Name, "stocks", "stocks")
	}
	var flavors []flavor
	for _, g := range *fa.Data {
		flavors = append(flavors, g.Flavors...)
	}
	snap, err := p.snapshot(flavors, book, sa, now)
	if err == nil {
		tr.Done("stocks", len(snap.Offers))
	}
	return snap, err
}

func (p *Provider) snapshot(flavors []flavor, book []priceItem, sa stocksAnswer, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Regions: p.regions}
	prices := map[string]float64{}
	for _, it := range book {
		if it.Value != nil {
			prices[it.Name] = float64(*it.Value)
		}
	}
	// Free GPUs per region, model and count ("1x", "8x"): the stock a flavor needs.
	free := map[string]float64{}
	for _, s := range *sa.Stocks {
		for _, m := range s.Models {
			for cfg, n := range m.Configurations {
				free[s.Region+"|"+m.Model+"|"+cfg] = n
			}
		}
	}
	var offers []pricing.Offer
	listed := 0
	for _, f := range flavors {
		if f.GPUCount <= 0 || f.GPU == "" {
			continue // a CPU flavor
		}
		if p.regions != nil && !slices.Contains(p.regions, f.Region) {
			continue
		}
		listed++
		gpu, spot := strings.CutSuffix(f.GPU, spotSuffix)
		per, ok := prices[f.GPU]
		if !ok {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("hyperstack: %s: GPU %s is not in the pricebook; skipped", f.Name, f.GPU))
			continue
		}
		model, mem, known := providers.GPUFromName(gpu, 0)
		if !known {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("hyperstack: %s: unknown GPU %q kept as is", f.Name, gpu))
		}
		buy := pricing.OnDemand
		if spot {
			buy = pricing.Spot
		}
		// Stock says how many flavors of this count can start now; a flavor without a
		// stock row has its own stock_available word.
		avail := pricing.AvailabilityUnknown
		if f.StockAvailable != nil {
			avail = pricing.AvailabilityOf(*f.StockAvailable)
		}
		if n, ok := free[f.Region+"|"+gpu+"|"+strconv.FormatFloat(f.GPUCount, 'f', -1, 64)+"x"]; ok {
			avail = pricing.AvailabilityOf(n > 0)
		}
		offers = append(offers, pricing.Offer{
			Provider: Name, Region: f.Region, InstanceType: strings.TrimSuffix(f.Name, spotSuffix),
			GPUModel: model, GPUCount: f.GPUCount, GPUMemGiB: mem, VCPUs: f.CPU, RAMGiB: f.RAM, Purchase: buy,
			// The pricebook's value is one GPU's hourly price; vCPUs and RAM come with
			// the GPU flavor (SkyPilot's fetcher and other adapters price it so).
			PriceUSDHr: providers.RoundPrice(f.GPUCount * per), Currency: "USD",
			ObservedAt: now, Source: pricing.SourceAPI, Available: avail,
		})
	}
	return providers.Finish(Name, snap, offers, listed)
}
