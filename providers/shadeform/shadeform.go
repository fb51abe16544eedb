// Package shadeform prices the GPU instances that Shadeform, an aggregator, resells
// from other clouds (GET https://api.shadeform.ai/v1/instances/types, header
// X-API-KEY). Each instance type is one upstream cloud's type, unique by (cloud,
// shade_instance_type), with an on-demand price in integer US cents per hour for the
// whole instance and, per region, whether it can be launched now; a spot entry of a
// region carries its own price in decimal dollars.
//
// Offers are named "<cloud>:<shade_instance_type>" ("hyperstack:A6000") in the upstream
// region, so two clouds' types never collide and the upstream stays visible. They are
// Shadeform's prices, kept apart from picker's direct adapters of the same clouds
// (clouds filters which upstreams to keep).
package shadeform

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Shadeform offer.
const Name = "shadeform"

// DefaultEndpoint is Shadeform's API base URL.
const DefaultEndpoint = "https://api.shadeform.ai"

// DefaultAPIKeyEnv is the environment variable read when api_key_env is empty.
const DefaultAPIKeyEnv = "SHADEFORM_API_KEY"

// Config is the [providers.shadeform] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable holding the API key (Shadeform
	// platform, Settings, API keys). Default SHADEFORM_API_KEY.
	APIKeyEnv string `toml:"api_key_env"`
	// Clouds keeps only the instance types of these upstream clouds ("lambdalabs",
	// "hyperstack", …); empty keeps every cloud.
	Clouds []string `toml:"clouds"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name: Name,
	Description: "Shadeform API (API key): on-demand and spot prices of the instance types it resells from other clouds, " +
		"as <cloud>:<type> in each upstream region, with each region's availability",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds the Shadeform API key (required)", Default: DefaultAPIKeyEnv},
		{Key: "clouds", Help: "upstream clouds to keep (aws, lambdalabs, hyperstack, …); empty keeps all"},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Shadeform platform, Settings, API keys"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithSleep and WithBackoff.
type Option = httpx.Option

// Provider fetches Shadeform prices.
type Provider struct {
	httpx.Keyed
	regions []string // configured filter; nil means all
	clouds  []string // nil means all
}

// New checks cfg and returns a provider. The API key is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	k, err := httpx.NewKeyed(Name, cfg.Endpoint, DefaultEndpoint, cfg.APIKeyEnv, DefaultAPIKeyEnv, opts...)
	if err != nil {
		return nil, err
	}
	var clouds []string
	for _, c := range cfg.Clouds {
		clouds = append(clouds, strings.ToLower(strings.TrimSpace(c)))
	}
	return &Provider{Keyed: k, regions: providers.RegionFilter(cfg.Regions), clouds: providers.RegionFilter(clouds)}, nil
}

// instanceType is one element of instance_types (shadeform/shadeform-cli,
// .speakeasy/out.openapi.yaml).
type instanceType struct {
	Cloud             string `json:"cloud"`
	ShadeInstanceType string `json:"shade_instance_type"`
	Configuration     *struct {
		MemoryInGB      float64 `json:"memory_in_gb"`
		VCPUs           float64 `json:"vcpus"`
		NumGPUs         float64 `json:"num_gpus"`
		GPUType         string  `json:"gpu_type"`
		Interconnect    string  `json:"interconnect"`
		VRAMPerGPUInGB  float64 `json:"vram_per_gpu_in_gb"`
		GPUManufacturer string  `json:"gpu_manufacturer"`
	} `json:"configuration"`
	// HourlyPrice is the on-demand price in integer cents.
	HourlyPrice  *httpx.Number `json:"hourly_price"`
	Availability []struct {
		Region    string `json:"region"`
		Available bool   `json:"available"`
		// RentalType is "on_demand" or "spot"; a spot entry has its own price, in
		// decimal dollars.
		RentalType  string        `json:"rental_type"`
		HourlyPrice *httpx.Number `json:"hourly_price"`
	} `json:"availability"`
}

// Fetch reads the instance types and returns an offer per type, region and rental type.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "shadeform: %w", err)
	}
	key, err := httpx.APIKey(Name, p.KeyEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.Now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	var r struct {
		InstanceTypes *[]instanceType `json:"instance_types"`
	}
	if err := p.Client.GetJSON(ctx, Name, "instance types", p.URL("/v1/instances/types", ""), http.Header{"X-API-KEY": {key}}, p.KeyEnv, &r); err != nil {
		return nil, err
	}
	if r.InstanceTypes == nil {
		return nil, httpx.Field(Name, "instance types", "instance_types")
	}
	snap := &providers.Snapshot{Regions: slices.Clone(p.regions)}
	var offers []pricing.Offer
	for i, it := range *r.InstanceTypes {
		name := it.Cloud + ":" + it.ShadeInstanceType
		where := fmt.Sprintf("instance_types[%d] (%s)", i, name)
		c := it.Configuration
		if c == nil {
			return nil, httpx.Field(Name, where, "configuration")
		}
		if c.NumGPUs <= 0 || (p.clouds != nil && !slices.Contains(p.clouds, strings.ToLower(it.Cloud))) {
			continue
		}
		if it.HourlyPrice == nil {
			return nil, httpx.Field(Name, where, "hourly_price")
		}
		// "H100" with interconnect "sxm5" or "pcie": the form factor tells the H100s apart.
		model, mem, ok := providers.GPUFromName(c.GPUType+" "+c.Interconnect, c.VRAMPerGPUInGB)
		if !ok {
			model = c.GPUType
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("shadeform: %s: unknown GPU %q kept as is", name, c.GPUType))
		}
		for _, a := range it.Availability {
			if p.regions != nil && !slices.Contains(p.regions, a.Region) {
				continue
			}
			o := pricing.Offer{
				Provider: Name, Region: a.Region, InstanceType: name,
				GPUModel: model, GPUCount: c.NumGPUs, GPUMemGiB: mem, VCPUs: c.VCPUs, RAMGiB: c.MemoryInGB,
				Currency: "USD", ObservedAt: now, Source: pricing.SourceAPI,
				Available: pricing.AvailabilityOf(a.Available),
			}
			switch a.RentalType {
			case "on_demand":
				// Whole cents, so dividing by 100 is exact to the cent.
				o.Purchase, o.PriceUSDHr = pricing.OnDemand, math.Round(float64(*it.HourlyPrice))/100
			case "spot":
				if a.HourlyPrice == nil {
					snap.Warnings = append(snap.Warnings, fmt.Sprintf("shadeform: %s: spot in %s has no hourly_price; skipped", name, a.Region))
					continue
				}
				o.Purchase, o.PriceUSDHr = pricing.Spot, float64(*a.HourlyPrice)
			default:
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("shadeform: %s: rental type %q in %s skipped", name, a.RentalType, a.Region))
				continue
			}
			offers = append(offers, o)
		}
	}
	snap, err = providers.Finish(Name, snap, offers, len(*r.InstanceTypes))
	if err == nil {
		tr.Done("instance types", len(snap.Offers))
	}
	return snap, err
}
