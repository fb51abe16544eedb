// Package tensordock prices TensorDock's marketplace from its v2 API (GET
// https://dashboard.tensordock.com/api/v2/hostnodes, Bearer API token). Every hostnode is
// one host with its own GPUs, per-GPU price, per-resource prices (vCPU, RAM, disk by the
// hour), uptime and network speed. Each GPU model of a host becomes offers of 1, 2, 4 and
// 8 GPUs up to its available count, priced as TensorDock bills a virtual machine: GPUs
// plus the vCPUs, RAM and disk that go with them.
package tensordock

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every TensorDock offer.
const Name = "tensordock"

// DefaultEndpoint is TensorDock's dashboard API base URL (docs "Fetch Hostnodes and
// Locations").
const DefaultEndpoint = "https://dashboard.tensordock.com"

// DefaultAPIKeyEnv is read when api_key_env is empty.
const DefaultAPIKeyEnv = "TENSORDOCK_API_TOKEN"

// DefaultDiskGB is the disk every price includes: TensorDock's smallest VM disk (docs
// "Instance Creation & Hostnodes": storage of at least 100 GB).
const DefaultDiskGB = 100.0

// Config is the [providers.tensordock] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable with the API token (dashboard, API).
	APIKeyEnv string `toml:"api_key_env"`
	// DiskGB is the disk every price includes (default DefaultDiskGB).
	DiskGB float64 `toml:"disk_gb"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "TensorDock marketplace v2 API (API token): each host's GPUs with vCPUs, RAM and disk priced by the hour, its uptime and network speed",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds the TensorDock API token (required)", Default: DefaultAPIKeyEnv},
		{Key: "disk_gb", Help: "disk in GB that every price includes (TensorDock's minimum is 100)", Default: "100"},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "TensorDock dashboard, API"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New (httpx.WithHTTPClient, WithClock, WithSleep, WithBackoff).
type Option = httpx.Option

// Provider fetches TensorDock's hostnodes.
type Provider struct {
	url     string
	keyEnv  string
	disk    float64
	regions []string
	client  *httpx.Client
	now     func() time.Time
}

// New checks cfg and returns a provider. The token is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	base, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	disk := cfg.DiskGB
	switch {
	case disk == 0:
		disk = DefaultDiskGB
	case !(disk > 0) || disk > pricing.MaxHostDiskGB:
		return nil, pricing.ParamErrorf(pricing.Invalid, "disk_gb", "tensordock: disk_gb %v: want a positive size in GB", cfg.DiskGB)
	}
	env := cfg.APIKeyEnv
	if env == "" {
		env = DefaultAPIKeyEnv
	}
	s := httpx.Apply(opts...)
	return &Provider{url: base.String() + "/api/v2/hostnodes", keyEnv: env, disk: disk, regions: providers.RegionFilter(cfg.Regions),
		client: httpx.NewClient("", s), now: s.Now}, nil
}

type answer struct {
	Data *struct {
		Hostnodes *[]hostnode `json:"hostnodes"`
	} `json:"data"`
}

// hostnode is one host, as two public Go clients decode the v2 answer (shared
// reference tensordock/hostnodes_v2.json).
type hostnode struct {
	ID                 string  `json:"id"`
	UptimePercentage   float64 `json:"uptime_percentage"`
	AvailableResources struct {
		GPUs []struct {
			V0Name         string        `json:"v0Name"`
			AvailableCount float64       `json:"availableCount"`
			PricePerHr     *httpx.Number `json:"price_per_hr"`
		} `json:"gpus"`
		VCPUCount      float64 `json:"vcpu_count"`
		RAMGB          float64 `json:"ram_gb"`
		StorageGB      float64 `json:"storage_gb"`
		MaxVCPUsPerGPU float64 `json:"max_vcpus_per_gpu"`
		MaxRAMPerGPU   float64 `json:"max_ram_per_gpu"`
	} `json:"available_resources"`
	Pricing *struct {
		PerVCPUHr      httpx.Number `json:"per_vcpu_hr"`
		PerGBRAMHr     httpx.Number `json:"per_gb_ram_hr"`
		PerGBStorageHr httpx.Number `json:"per_gb_storage_hr"`
	} `json:"pricing"`
	Location struct {
		City          string  `json:"city"`
		StateProvince string  `json:"stateprovince"`
		Country       string  `json:"country"`
		DownGbps      float64 `json:"network_speed_gbps"`
		UpGbps        float64 `json:"network_speed_upload_gbps"`
	} `json:"location"`
}

// Fetch reads the hostnodes and returns their offers.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "tensordock: %w", err)
	}
	key, err := httpx.APIKey(Name, p.keyEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	var a answer
	if err := p.client.GetJSON(ctx, Name, "hostnodes", p.url, http.Header{"Authorization": {"Bearer " + key}}, p.keyEnv, &a); err != nil {
		return nil, err
	}
	if a.Data == nil || a.Data.Hostnodes == nil {
		return nil, httpx.Field(Name, "hostnodes", "data.hostnodes")
	}
	snap, err := p.snapshot(*a.Data.Hostnodes, now)
	if err == nil {
		tr.Done("hostnodes", len(snap.Offers))
	}
	return snap, err
}

// counts are the GPU counts offered of a host's model: 1, 2, 4, 8 up to what it has
// free, and that number when it is another.
func counts(available float64) []float64 {
	var out []float64
	for _, n := range []float64{1, 2, 4, 8} {
		if n <= available {
			out = append(out, n)
		}
	}
	if available >= 1 && !slices.Contains(out, available) && available == float64(int(available)) {
		out = append(out, available)
	}
	return out
}

func (p *Provider) snapshot(hosts []hostnode, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Regions: p.regions}
	var offers []pricing.Offer
	listed := 0
	for _, h := range hosts {
		region := region(h.Location.City, h.Location.Country)
		if p.regions != nil && !slices.Contains(p.regions, region) {
			continue
		}
		if h.Pricing == nil {
			return nil, httpx.Field(Name, "hostnode "+h.ID, "pricing")
		}
		res := h.AvailableResources
		host := pricing.Host{
			Reliability: math.Round(h.UptimePercentage*1e4) / 1e6, // percent to a fraction, 6 decimals
			// Gb/s in the answer; Mb/s in picker's facts.
			NetDownMbps: h.Location.DownGbps * 1000, NetUpMbps: h.Location.UpGbps * 1000,
			DiskGB: res.StorageGB,
		}
		for _, g := range res.GPUs {
			listed++
			where := "hostnode " + h.ID + " " + g.V0Name
			if g.PricePerHr == nil {
				return nil, httpx.Field(Name, where, "price_per_hr")
			}
			model, mem, ok := providers.GPUFromName(strings.TrimPrefix(strings.ToLower(g.V0Name), "geforce"), 0)
			if !ok {
				model = g.V0Name
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("tensordock: %s: unknown GPU %q kept as is", where, g.V0Name))
			}
			for _, n := range counts(g.AvailableCount) {
				// The VM gets the host's share per GPU of vCPUs and RAM (its per-GPU
				// maxima, within what is free) and the configured disk, each billed
				// by the hour: price = GPUs + vCPUs + RAM + disk (docs' per-resource
				// pricing; public adapters compute it so).
				vcpus := min(res.MaxVCPUsPerGPU*n, res.VCPUCount)
				ram := min(res.MaxRAMPerGPU*n, res.RAMGB)
				price := n*float64(*g.PricePerHr) + vcpus*float64(h.Pricing.PerVCPUHr) + ram*float64(h.Pricing.PerGBRAMHr) + p.disk*float64(h.Pricing.PerGBStorageHr)
				offers = append(offers, pricing.Offer{
					Provider: Name, Region: region, InstanceType: fmt.Sprintf("%gx_%s_%s", n, g.V0Name, h.ID),
					GPUModel: model, GPUCount: n, GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: ram,
					Purchase: pricing.OnDemand, PriceUSDHr: providers.RoundPrice(price), Currency: "USD",
					ObservedAt: now, Source: pricing.SourceAPI, Available: pricing.AvailableNow, Host: host,
				})
			}
		}
	}
	return providers.Finish(Name, snap, offers, listed)
}

// region is a host's place as a region name: "united-states-austin".
func region(city, country string) string {
	slug := func(s string) string {
		return strings.Join(strings.Fields(strings.ToLower(strings.NewReplacer(",", " ", ".", " ").Replace(s))), "-")
	}
	switch c, t := slug(country), slug(city); {
	case c == "" && t == "":
		return "unknown"
	case t == "":
		return c
	case c == "":
		return t
	default:
		return c + "-" + t
	}
}
