// Package vast prices Vast.ai's marketplace from its public search (POST
// https://console.vast.ai/api/v0/bundles/, no key needed). Every answer row is one host's
// listing: its own price, GPUs, reliability, driver, network and disk. Each becomes an
// on-demand offer at dph_total (machine plus the allocated disk) and, where the host takes
// bids, a spot offer at min_bid plus the same disk: Vast's interruptible instances.
package vast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Vast.ai offer.
const Name = "vast"

// DefaultEndpoint is the Vast.ai console API's base URL (the vast CLI's default,
// vast-ai/vast-cli vastai/api/client.py; env VAST_URL there).
const DefaultEndpoint = "https://console.vast.ai"

// DefaultAPIKeyEnv is read when api_key_env is empty; the search works without a key.
const DefaultAPIKeyEnv = "VAST_API_KEY"

// Defaults of the search: at most DefaultLimit listings (SkyPilot's Vast fetcher asks
// 10,000; there is no paging), priced with DefaultDiskGB of disk (the vast CLI's
// --storage default, 5.0 GiB).
const (
	DefaultLimit  = 10000
	DefaultDiskGB = 5.0
	// MaxLimit bounds limit: a larger answer would pass the body cap anyway.
	MaxLimit = 100000
)

// mibPerGiB converts Vast's memory figures: gpu_ram and cpu_ram are MiB as nvidia-smi
// and the kernel report them (24564 for an RTX 4090's 24 GiB), though the CLI calls them MB.
const mibPerGiB = 1024

// Config is the [providers.vast] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable with a Vast.ai API key (console,
	// Account, API keys); the search is public, and the key is sent only when set.
	APIKeyEnv string `toml:"api_key_env"`
	// IncludeUnverified also lists hosts Vast has not verified (the CLI's default
	// search has verified = true).
	IncludeUnverified bool `toml:"include_unverified"`
	// DatacenterOnly keeps only hosts in Vast's secure-cloud datacenters.
	DatacenterOnly bool `toml:"datacenter_only"`
	// Limit caps the listings one search returns (default DefaultLimit).
	Limit int `toml:"limit"`
	// DiskGB is the disk every price includes (allocated_storage; default DefaultDiskGB).
	DiskGB float64 `toml:"disk_gb"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "Vast.ai marketplace search (public): each host's on-demand and interruptible (spot) price with its reliability, max CUDA, driver, network and disk",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable with a Vast.ai API key (optional: the search is public)", Default: DefaultAPIKeyEnv},
		{Key: "include_unverified", Help: "also list hosts Vast.ai has not verified", Default: "false"},
		{Key: "datacenter_only", Help: "only hosts in Vast.ai's datacenter (secure cloud) tier", Default: "false"},
		{Key: "limit", Help: "most host listings one refresh reads (the search has no paging)", Default: strconv.Itoa(DefaultLimit)},
		{Key: "disk_gb", Help: "disk in GB that every price includes (Vast bills disk by the GB)", Default: "5"},
	},
	Needs:  providers.Needs{Kind: providers.NeedsOptionalKey, KeyEnv: DefaultAPIKeyEnv, Where: "Vast.ai console, Account, API keys"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New (httpx.WithHTTPClient, WithClock, WithSleep, WithBackoff).
type Option = httpx.Option

// Provider fetches Vast.ai's listings.
type Provider struct {
	url     string
	keyEnv  string
	body    []byte
	regions []string // upper-case country codes; nil means all
	client  *httpx.Client
	now     func() time.Time
}

// New checks cfg and returns a provider.
func New(cfg Config, opts ...Option) (*Provider, error) {
	base, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	u := *base
	u.Path += "/api/v0/bundles/"
	limit := cfg.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return nil, pricing.ParamErrorf(pricing.Invalid, "limit", "vast: limit %d: want 1 to %d", cfg.Limit, MaxLimit)
	}
	disk := cfg.DiskGB
	switch {
	case disk == 0:
		disk = DefaultDiskGB
	case !(disk > 0) || disk > pricing.MaxHostDiskGB:
		return nil, pricing.ParamErrorf(pricing.Invalid, "disk_gb", "vast: disk_gb %v: want a positive size in GB", cfg.DiskGB)
	}
	var regions []string
	for _, r := range cfg.Regions {
		r = strings.ToUpper(strings.TrimSpace(r))
		if len(r) != 2 {
			return nil, pricing.ParamErrorf(pricing.Invalid, "regions", "vast: region %q: want a two-letter country code (US, DE, ...)", r)
		}
		regions = append(regions, r)
	}
	slices.Sort(regions)
	regions = slices.Compact(regions)
	body, err := json.Marshal(query(cfg, regions, limit, disk))
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "vast: query: %v", err)
	}
	env := cfg.APIKeyEnv
	if env == "" {
		env = DefaultAPIKeyEnv
	}
	s := httpx.Apply(opts...)
	return &Provider{url: u.String(), keyEnv: env, body: body, regions: regions, client: httpx.NewClient("", s), now: s.Now}, nil
}

// query is the search body in the vast CLI's shape (vastai/api/query.py parse_query,
// "search offers" defaults: verified, not external, rentable, not rented), cheapest first.
func query(cfg Config, regions []string, limit int, disk float64) map[string]any {
	q := map[string]any{
		"external":          map[string]any{"eq": false},
		"rentable":          map[string]any{"eq": true},
		"rented":            map[string]any{"eq": false},
		"num_gpus":          map[string]any{"gte": 1},
		"order":             [][]string{{"dph_total", "asc"}},
		"type":              "on-demand",
		"limit":             limit,
		"allocated_storage": disk,
	}
	if !cfg.IncludeUnverified {
		q["verified"] = map[string]any{"eq": true}
	}
	if cfg.DatacenterOnly {
		q["datacenter"] = map[string]any{"eq": true}
	}
	if len(regions) > 0 {
		q["geolocation"] = map[string]any{"in": regions}
	}
	return q
}

// answer is the search's {"offers": [...]} envelope (the CLI reads r.json()["offers"]).
type answer struct {
	Offers *[]listing `json:"offers"`
}

// listing is one host's offer; the fields read, as `vastai search offers --raw` shows
// them (shared reference vast/bundles.json).
type listing struct {
	ID                int64    `json:"id"`
	MachineID         int64    `json:"machine_id"`
	GPUName           string   `json:"gpu_name"`
	NumGPUs           float64  `json:"num_gpus"`
	GPURAM            float64  `json:"gpu_ram"` // MiB per GPU
	CPUCores          float64  `json:"cpu_cores"`
	CPUCoresEffective float64  `json:"cpu_cores_effective"`
	CPURAM            float64  `json:"cpu_ram"` // MiB of the whole host
	Geolocation       string   `json:"geolocation"`
	Reliability       *float64 `json:"reliability"`
	Reliability2      *float64 `json:"reliability2"`
	Verification      string   `json:"verification"`
	CUDAMaxGood       float64  `json:"cuda_max_good"`
	DriverVersion     string   `json:"driver_version"`
	InetUp            float64  `json:"inet_up"`
	InetDown          float64  `json:"inet_down"`
	DiskSpace         float64  `json:"disk_space"`
	DPHTotal          *float64 `json:"dph_total"`
	DPHBase           float64  `json:"dph_base"`
	MinBid            float64  `json:"min_bid"`
	Rentable          *bool    `json:"rentable"`
	Rented            *bool    `json:"rented"`
}

// Fetch runs one search and returns an offer per listing and purchase.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "vast: %w", err)
	}
	key, err := httpx.APIKey(Name, p.keyEnv, false)
	if err != nil {
		return nil, err
	}
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	sentKey := ""
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
		sentKey = p.keyEnv
	}
	now := p.now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	resp, err := p.client.Do(ctx, httpx.Request{Method: http.MethodPost, URL: p.url, Header: h, Body: p.body})
	if err != nil {
		return nil, refused(err, sentKey)
	}
	var a answer
	if err := httpx.DecodeJSON(Name, "search", resp.Body, &a); err != nil {
		return nil, err
	}
	if a.Offers == nil {
		return nil, httpx.Field(Name, "search", "offers")
	}
	snap, err := p.snapshot(*a.Offers, now)
	if err == nil {
		tr.Done("search", len(snap.Offers))
	}
	return snap, err
}

// refused names the key's variable when the API refuses a request.
func refused(err error, keyEnv string) error {
	var se *httpx.StatusError
	if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
		if keyEnv != "" {
			return pricing.Errorf(pricing.Invalid, "vast: search: the API refused the key read from %s: %w", keyEnv, err)
		}
		return pricing.Errorf(pricing.Invalid, "vast: search: the API wants a key (set %s): %w", DefaultAPIKeyEnv, err)
	}
	return fmt.Errorf("vast: search: %w", err)
}

func (p *Provider) snapshot(ls []listing, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{}
	if p.regions != nil {
		snap.Regions = slices.Clone(p.regions)
	}
	unknown := map[string]bool{}
	for i := range ls {
		l := &ls[i]
		where := fmt.Sprintf("offer %d", l.ID)
		if l.DPHTotal == nil {
			return nil, httpx.Field(Name, where, "dph_total")
		}
		if l.GPUName == "" || !(l.NumGPUs >= 1) || l.MachineID == 0 {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("vast: %s: no GPU name, GPU count or machine id; skipped", where))
			continue
		}
		mem := l.GPURAM / mibPerGiB
		model, ok := pricing.NormalizeGPU(l.GPUName, mem)
		if !ok && !unknown[l.GPUName] {
			unknown[l.GPUName] = true
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("vast: unknown GPU %q kept as is", l.GPUName))
		}
		vcpus := l.CPUCoresEffective
		ram := l.CPURAM / mibPerGiB
		if l.CPUCores > 0 && l.CPUCoresEffective > 0 && l.CPUCoresEffective < l.CPUCores {
			// The instance gets its share of the host's RAM (gpuhunt's vast.py scales so).
			ram *= l.CPUCoresEffective / l.CPUCores
		}
		rel := l.Reliability2
		if rel == nil {
			rel = l.Reliability
		}
		host := pricing.Host{
			MaxCUDA: l.CUDAMaxGood, Driver: l.DriverVersion,
			NetUpMbps: l.InetUp, NetDownMbps: l.InetDown, DiskGB: l.DiskSpace,
			Verification: verification(l.Verification),
		}
		if rel != nil {
			host.Reliability = *rel
		}
		avail := pricing.AvailabilityUnknown
		if l.Rentable != nil {
			avail = pricing.AvailabilityOf(*l.Rentable && (l.Rented == nil || !*l.Rented))
		}
		o := pricing.Offer{
			Provider: Name, Region: country(l.Geolocation),
			InstanceType: fmt.Sprintf("%gx_%s_m%d", l.NumGPUs, strings.ReplaceAll(strings.TrimSpace(l.GPUName), " ", "-"), l.MachineID),
			GPUModel:     model, GPUCount: l.NumGPUs, GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: round2(ram),
			Purchase: pricing.OnDemand, PriceUSDHr: *l.DPHTotal, Currency: "USD",
			ObservedAt: now, Source: pricing.SourceAPI, Available: avail, Host: host,
		}
		if p.regions != nil && !slices.Contains(p.regions, o.Region) {
			continue // the server filters by country; an answer outside them is not ours to close
		}
		snap.Offers = append(snap.Offers, o)
		if l.MinBid > 0 {
			// The interruptible price is the minimum bid for the machine; the disk is
			// billed alike (dph_total - dph_base), as gpuhunt and SkyPilot price it.
			spot := o
			spot.Purchase = pricing.Spot
			spot.PriceUSDHr = l.MinBid + max(*l.DPHTotal-l.DPHBase, 0)
			snap.Offers = append(snap.Offers, spot)
		}
	}
	var warn []string
	snap.Offers, warn = providers.Finalize(Name, snap.Offers)
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) == 0 {
		if len(ls) == 0 {
			return nil, pricing.Errorf(pricing.Unavailable, "vast: the search listed no offers")
		}
		return nil, pricing.Errorf(pricing.Unavailable, "vast: no valid offers among %d listings (see warnings: %s)", len(ls), strings.Join(snap.Warnings, "; "))
	}
	return snap, nil
}

// country is a listing's country code: "Guangxi, CN" and "CN" are both CN; a
// listing without one is in region "unknown".
func country(geo string) string {
	geo = strings.TrimSpace(geo)
	if i := strings.LastIndex(geo, ","); i >= 0 {
		geo = strings.TrimSpace(geo[i+1:])
	}
	if len(geo) != 2 {
		return "unknown"
	}
	return strings.ToUpper(geo)
}

// verification maps Vast's verification ("verified", "unverified", "deverified").
func verification(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "verified":
		return pricing.HostVerified
	case "unverified", "deverified":
		return pricing.HostUnverified
	}
	return ""
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
