// Package digitalocean prices DigitalOcean's GPU Droplets (the former Paperspace GPU
// line now sold as Droplets) from its public API (GET https://api.digitalocean.com/v2/sizes,
// Bearer personal access token, paged by links.pages.next). A size's price_hourly is
// for the whole Droplet and the same in every region of its regions list; a GPU size
// with an empty list is not offered anywhere right now and is left out, so its offers
// close until it comes back; one listed with available false is kept, marked
// unavailable.
//
// Paperspace's own legacy API has no price endpoint (shared/reference/providers §17), so
// Paperspace machines are not priced live; the embedded snapshot keeps their rows.
package digitalocean

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

// Name is the provider name of every DigitalOcean offer.
const Name = "digitalocean"

// DefaultEndpoint is DigitalOcean's API base URL.
const DefaultEndpoint = "https://api.digitalocean.com"

// DefaultAPIKeyEnv is the environment variable read when api_key_env is empty (the name
// DigitalOcean's Terraform provider reads).
const DefaultAPIKeyEnv = "DIGITALOCEAN_TOKEN"

// perPage is the page size asked for: 200 is the most the API documents (the SDK docs
// for List All Droplet Sizes).
const perPage = 200

// Config is the [providers.digitalocean] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable holding a personal access token (read
	// scope). Default DIGITALOCEAN_TOKEN.
	APIKeyEnv string `toml:"api_key_env"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "DigitalOcean API (token): on-demand prices of GPU Droplet sizes (gpu-*), in each region that offers them now",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds a DigitalOcean personal access token with read scope (required)", Default: DefaultAPIKeyEnv},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "DigitalOcean control panel, API, Tokens (read scope)"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithSleep and WithBackoff.
type Option = httpx.Option

// Provider fetches DigitalOcean GPU Droplet prices.
type Provider struct {
	httpx.Keyed
	regions []string // configured filter; nil means all
}

// New checks cfg and returns a provider. The token is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	k, err := httpx.NewKeyed(Name, cfg.Endpoint, DefaultEndpoint, cfg.APIKeyEnv, DefaultAPIKeyEnv, opts...)
	if err != nil {
		return nil, err
	}
	return &Provider{Keyed: k, regions: providers.RegionFilter(cfg.Regions)}, nil
}

// page is one answer of GET /v2/sizes (OpenAPI digitalocean/openapi,
// specification/resources/sizes).
type page struct {
	Sizes *[]size `json:"sizes"`
	Links struct {
		Pages struct {
			Next string `json:"next"`
		} `json:"pages"`
	} `json:"links"`
}

type size struct {
	Slug        string        `json:"slug"`
	Memory      float64       `json:"memory"` // MB
	VCPUs       float64       `json:"vcpus"`
	PriceHourly *httpx.Number `json:"price_hourly"`
	Regions     []string      `json:"regions"`
	Available   *bool         `json:"available"`
	GPUInfo     *struct {
		Count float64 `json:"count"`
		Model string  `json:"model"` // "nvidia_h100", "amd_mi300x", "nvidia_rtx6000_ada"
		VRAM  struct {
			Amount float64 `json:"amount"` // the Droplet's total
			Unit   string  `json:"unit"`
		} `json:"vram"`
	} `json:"gpu_info"`
}

// Fetch reads every page of sizes and returns an offer per GPU size and region.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "digitalocean: %w", err)
	}
	key, err := httpx.APIKey(Name, p.KeyEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.Now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	next := p.URL("/v2/sizes", fmt.Sprintf("page=1&per_page=%d", perPage))
	header := http.Header{"Authorization": {"Bearer " + key}}
	var sizes []size
	var guard providers.PageGuard
	for n := 1; next != ""; n++ {
		var pg page
		if err := p.Client.GetJSON(ctx, Name, fmt.Sprintf("sizes page %d", n), next, header, p.KeyEnv, &pg); err != nil {
			return nil, err
		}
		if pg.Sizes == nil {
			return nil, httpx.Field(Name, fmt.Sprintf("sizes page %d", n), "sizes")
		}
		sizes = append(sizes, *pg.Sizes...)
		tr.Page("sizes", 0)
		if err := guard.Next("digitalocean: sizes", pg.Links.Pages.Next); err != nil {
			return nil, err
		}
		next = ""
		if link := pg.Links.Pages.Next; link != "" {
			if next, err = httpx.Rebase(p.Base, link); err != nil {
				return nil, pricing.Errorf(pricing.Unavailable, "digitalocean: sizes page %d: links.pages.next %q: %v", n, link, err)
			}
		}
	}
	snap, err := p.snapshot(sizes, now)
	if err == nil {
		tr.Done("sizes", len(snap.Offers))
	}
	return snap, err
}

func (p *Provider) snapshot(sizes []size, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Regions: slices.Clone(p.regions)}
	var offers []pricing.Offer
	gpuSizes := 0
	for _, s := range sizes {
		g := s.GPUInfo
		if g == nil || g.Count <= 0 {
			continue // a CPU Droplet
		}
		if !strings.HasPrefix(s.Slug, "gpu-") {
			// DigitalOcean's own doc example puts gpu_info on a Basic Droplet; only the
			// gpu-* sizes are GPU Droplets.
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("digitalocean: %s skipped: gpu_info on a size that is not a GPU Droplet (gpu-*)", s.Slug))
			continue
		}
		gpuSizes++
		if s.PriceHourly == nil {
			return nil, httpx.Field(Name, "size "+s.Slug, "price_hourly")
		}
		perGPU := 0.0
		if strings.EqualFold(g.VRAM.Unit, "gib") || strings.EqualFold(g.VRAM.Unit, "gb") {
			perGPU = g.VRAM.Amount / g.Count // vram.amount is the Droplet's total
		}
		model, mem, ok := providers.GPUFromName(g.Model, perGPU)
		if !ok {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("digitalocean: %s: unknown GPU %q kept as is", s.Slug, g.Model))
		}
		avail := pricing.AvailabilityUnknown
		if s.Available != nil {
			avail = pricing.AvailabilityOf(*s.Available) // false: cannot be created now
		}
		for _, region := range s.Regions {
			if p.regions != nil && !slices.Contains(p.regions, region) {
				continue
			}
			offers = append(offers, pricing.Offer{
				Provider:     Name,
				Region:       region,
				InstanceType: s.Slug,
				GPUModel:     model,
				GPUCount:     g.Count,
				GPUMemGiB:    mem,
				VCPUs:        s.VCPUs,
				RAMGiB:       s.Memory / 1024, // MB, a multiple of 1024 for GPU sizes
				Purchase:     pricing.OnDemand,
				PriceUSDHr:   float64(*s.PriceHourly),
				Currency:     "USD",
				ObservedAt:   now,
				Source:       pricing.SourceAPI,
				Available:    avail,
			})
		}
	}
	return providers.Finish(Name, snap, offers, gpuSizes)
}
