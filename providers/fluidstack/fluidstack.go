// Package fluidstack prices Fluidstack's GPU configurations from its platform API
// (GET https://platform.fluidstack.io/list_available_configurations, header api-key).
// The answer lists, per GPU type, the GPU counts one can rent, the price of one GPU per
// hour (a decimal string) and the regions that have it now; an instance of k GPUs
// costs k times that. The adapter offers each (GPU type, count) in each listed region,
// as "H100_SXM5_80GB::8", the naming of the embedded snapshot's Fluidstack rows, so a
// refresh supersedes them.
package fluidstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Fluidstack offer.
const Name = "fluidstack"

// DefaultEndpoint is the platform API's base URL.
const DefaultEndpoint = "https://platform.fluidstack.io"

// DefaultAPIKeyEnv is the environment variable read when api_key_env is empty.
const DefaultAPIKeyEnv = "FLUIDSTACK_API_KEY"

// Config is the [providers.fluidstack] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable holding the API key (Fluidstack
	// console, API keys). Default FLUIDSTACK_API_KEY.
	APIKeyEnv string `toml:"api_key_env"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "Fluidstack platform API (API key): per-GPU on-demand prices of the available configurations, offered per GPU count as <GPU_TYPE>::<count> in each region listed",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds the Fluidstack API key (required)", Default: DefaultAPIKeyEnv},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Fluidstack console, API keys"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithSleep and WithBackoff.
type Option = httpx.Option

// Provider fetches Fluidstack prices.
type Provider struct {
	httpx.Keyed
	regions []string // configured filter; nil means all
}

// New checks cfg and returns a provider. The API key is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	k, err := httpx.NewKeyed(Name, cfg.Endpoint, DefaultEndpoint, cfg.APIKeyEnv, DefaultAPIKeyEnv, opts...)
	if err != nil {
		return nil, err
	}
	return &Provider{Keyed: k, regions: providers.RegionFilter(cfg.Regions)}, nil
}

// configuration is one element of the answer (the Fern SDK's wire type,
// fluidstackio/fluidstack-typescript-sdk, src/api/types).
type configuration struct {
	GPUType      string        `json:"gpu_type"`
	GPUCounts    []int         `json:"gpu_counts"`
	PricePerGPU  *httpx.Number `json:"price_per_gpu_hr"`
	Regions      []string      `json:"regions"`
	Provisioning *httpx.Number `json:"estimated_provisioning_time_minutes"`
	_            struct{}      `json:"-"`
}

// Fetch reads the available configurations and returns an offer per (GPU type, count,
// region).
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "fluidstack: %w", err)
	}
	key, err := httpx.APIKey(Name, p.KeyEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.Now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	var confs *[]configuration
	if err := p.Client.GetJSON(ctx, Name, "configurations", p.URL("/list_available_configurations", ""), http.Header{"api-key": {key}}, p.KeyEnv, &confs); err != nil {
		return nil, err
	}
	if confs == nil {
		return nil, pricing.Errorf(pricing.Unavailable, "fluidstack: configurations: the answer is null, not a list")
	}
	snap, err := p.snapshot(*confs, now)
	if err == nil {
		tr.Done("configurations", len(snap.Offers))
	}
	return snap, err
}

func (p *Provider) snapshot(confs []configuration, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Regions: slices.Clone(p.regions)}
	var offers []pricing.Offer
	for i, c := range confs {
		where := fmt.Sprintf("configurations[%d]", i)
		if strings.TrimSpace(c.GPUType) == "" {
			return nil, httpx.Field(Name, where, "gpu_type")
		}
		if c.PricePerGPU == nil {
			return nil, httpx.Field(Name, where+" ("+c.GPUType+")", "price_per_gpu_hr")
		}
		// "H100_SXM5_80GB": the memory is the trailing figure, the rest names the GPU.
		model, mem, ok := providers.GPUFromName(c.GPUType, 0)
		if !ok {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("fluidstack: %s: unknown GPU kept as is", c.GPUType))
		}
		if mem == 0 {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("fluidstack: %s skipped: no memory in the name and not in the GPU catalog", c.GPUType))
			continue
		}
		for _, region := range c.Regions {
			if p.regions != nil && !slices.Contains(p.regions, region) {
				continue
			}
			for _, k := range c.GPUCounts {
				offers = append(offers, pricing.Offer{
					Provider:     Name,
					Region:       region,
					InstanceType: fmt.Sprintf("%s::%d", c.GPUType, k),
					GPUModel:     model,
					GPUCount:     float64(k),
					GPUMemGiB:    mem,
					// The API states no vCPUs or RAM for a configuration: 0, unknown.
					Purchase:   pricing.OnDemand,
					PriceUSDHr: providers.RoundPrice(float64(*c.PricePerGPU) * float64(k)),
					Currency:   "USD",
					ObservedAt: now,
					Source:     pricing.SourceAPI,
					// Listed by list_available_configurations: available now.
					Available: pricing.AvailableNow,
				})
			}
		}
	}
	return providers.Finish(Name, snap, offers, len(confs))
}
