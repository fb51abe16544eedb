// Package verda prices Verda's (formerly DataCrunch) GPU instances from its public API
// (https://api.verda.com/v1), which wants an OAuth2 client-credentials token: POST
// /oauth2/token with the client id and secret, then GET /instance-types (prices per
// instance per hour, on demand and spot, as strings), /locations and
// /instance-availability (on demand, and again with is_spot=true). Every GPU type is
// offered in every location, marked available where the availability lists say so.
package verda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Verda offer (the embedded snapshot's name).
const Name = "verda"

// DefaultEndpoint is the API base URL the Python SDK uses (DataCrunch-io/datacrunch-
// python verda/_verda.py; the legacy host api.datacrunch.io serves the same API).
const DefaultEndpoint = "https://api.verda.com/v1"

// Default environment variables of the OAuth2 client credentials (Verda console, Keys,
// Cloud API credentials).
const (
	DefaultClientIDEnv     = "VERDA_CLIENT_ID"
	DefaultClientSecretEnv = "VERDA_CLIENT_SECRET"
)

// Config is the [providers.verda] section.
type Config struct {
	providers.Common
	// ClientIDEnv and ClientSecretEnv name the environment variables holding the OAuth2
	// client credentials.
	ClientIDEnv     string `toml:"client_id_env"`
	ClientSecretEnv string `toml:"client_secret_env"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "Verda (ex DataCrunch) API (OAuth2 client credentials): on-demand and spot prices of GPU instance types in every location, with availability",
	Options: []providers.Option{
		{Key: "client_id_env", Help: "environment variable that holds the Verda OAuth2 client id (required)", Default: DefaultClientIDEnv},
		{Key: "client_secret_env", Help: "environment variable that holds the Verda OAuth2 client secret (required)", Default: DefaultClientSecretEnv},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultClientIDEnv + " $" + DefaultClientSecretEnv, Where: "Verda console, Keys, Cloud API credentials"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New (httpx.WithHTTPClient, WithClock, WithSleep, WithBackoff).
type Option = httpx.Option

// Provider fetches Verda prices.
type Provider struct {
	base             string
	idEnv, secretEnv string
	regions          []string
	client           *httpx.Client
	now              func() time.Time
}

// New checks cfg and returns a provider. The credentials are read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	base, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	p := &Provider{base: base.String(), idEnv: cfg.ClientIDEnv, secretEnv: cfg.ClientSecretEnv, regions: providers.RegionFilter(cfg.Regions)}
	if p.idEnv == "" {
		p.idEnv = DefaultClientIDEnv
	}
	if p.secretEnv == "" {
		p.secretEnv = DefaultClientSecretEnv
	}
	s := httpx.Apply(opts...)
	p.client, p.now = httpx.NewClient("", s), s.Now
	return p, nil
}

type instanceType struct {
	InstanceType string `json:"instance_type"`
	CPU          struct {
		Cores float64 `json:"number_of_cores"`
	} `json:"cpu"`
	GPU struct {
		Description string  `json:"description"`
		Count       float64 `json:"number_of_gpus"`
	} `json:"gpu"`
	GPUMemory struct {
		GB float64 `json:"size_in_gigabytes"` // the instance's total
	} `json:"gpu_memory"`
	Memory struct {
		GB float64 `json:"size_in_gigabytes"`
	} `json:"memory"`
	Price     *httpx.Number `json:"price_per_hour"`
	SpotPrice *httpx.Number `json:"spot_price"`
}

type location struct {
	Code string `json:"code"`
}

type availability struct {
	Location string   `json:"location_code"`
	Types    []string `json:"availabilities"`
}

// Fetch gets a token and reads the types, locations and availability.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "verda: %w", err)
	}
	id, err := httpx.APIKey(Name, p.idEnv, true)
	if err != nil {
		return nil, err
	}
	secret, err := httpx.APIKey(Name, p.secretEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.now().UTC()
	tr := providers.NewTracker(ctx, "requests", 5)
	token, err := p.token(ctx, id, secret)
	if err != nil {
		return nil, err
	}
	tr.Done("token", 0)
	h := http.Header{"Authorization": {"Bearer " + token}}
	last := ""
	get := func(what, path string, v any) error {
		if last != "" {
			tr.Done(last, 0)
		}
		last = what
		return p.client.GetJSON(ctx, Name, what, p.base+path, h, p.idEnv, v)
	}
	var types []instanceType
	var locs []location
	var onDemand, spot []availability
	if err := get("instance types", "/instance-types?currency=usd", &types); err != nil {
		return nil, err
	}
	if err := get("locations", "/locations", &locs); err != nil {
		return nil, err
	}
	if err := get("availability", "/instance-availability", &onDemand); err != nil {
		return nil, err
	}
	if err := get("spot availability", "/instance-availability?is_spot=true", &spot); err != nil {
		return nil, err
	}
	snap, err := p.snapshot(types, locs, onDemand, spot, now)
	if err == nil {
		tr.Done(last, len(snap.Offers))
	}
	return snap, err
}

// token trades the client credentials for an access token (grant client_credentials,
// the Python SDK's request body).
func (p *Provider) token(ctx context.Context, id, secret string) (string, error) {
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "client_id": id, "client_secret": secret})
	resp, err := p.client.Do(ctx, httpx.Request{Method: http.MethodPost, URL: p.base + "/oauth2/token", Body: body,
		Header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}})
	if err != nil {
		var se *httpx.StatusError
		if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden || se.Status == http.StatusBadRequest) {
			return "", pricing.Errorf(pricing.Invalid, "verda: token: the API refused the client credentials read from %s and %s: %w", p.idEnv, p.secretEnv, err)
		}
		return "", fmt.Errorf("verda: token: %w", err)
	}
	var t struct {
		AccessToken string `json:"access_token"`
	}
	if err := httpx.DecodeJSON(Name, "token", resp.Body, &t); err != nil {
		return "", err
	}
	if t.AccessToken == "" {
		return "", httpx.Field(Name, "token", "access_token")
	}
	return t.AccessToken, nil
}

func (p *Provider) snapshot(types []instanceType, locs []location, onDemand, spot []availability, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Regions: p.regions}
	index := func(av []availability) map[string]bool {
		out := map[string]bool{}
		for _, a := range av {
			for _, t := range a.Types {
				out[a.Location+"|"+t] = true
			}
		}
		return out
	}
	odAt, spotAt := index(onDemand), index(spot)
	var regions []string
	for _, l := range locs {
		if l.Code != "" && (p.regions == nil || slices.Contains(p.regions, l.Code)) {
			regions = append(regions, l.Code)
		}
	}
	var offers []pricing.Offer
	listed := 0
	for _, t := range types {
		if t.GPU.Count <= 0 {
			continue // a CPU-only type
		}
		listed++
		where := "instance type " + t.InstanceType
		if t.Price == nil {
			return nil, httpx.Field(Name, where, "price_per_hour")
		}
		// "1x H100 SXM5 80GB": the model after the count; memory per GPU is the
		// instance's total over the count (gpuhunt's verda.py divides so).
		name := t.GPU.Description
		if _, rest, ok := strings.Cut(name, "x "); ok {
			name = rest
		}
		model, mem, ok := providers.GPUFromName(name, t.GPUMemory.GB/t.GPU.Count)
		if !ok {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("verda: %s: unknown GPU %q kept as is", t.InstanceType, name))
		}
		for _, region := range regions {
			o := pricing.Offer{Provider: Name, Region: region, InstanceType: t.InstanceType, GPUModel: model, GPUCount: t.GPU.Count,
				GPUMemGiB: mem, VCPUs: t.CPU.Cores, RAMGiB: t.Memory.GB, Purchase: pricing.OnDemand, PriceUSDHr: float64(*t.Price),
				Currency: "USD", ObservedAt: now, Source: pricing.SourceAPI, Available: pricing.AvailabilityOf(odAt[region+"|"+t.InstanceType])}
			offers = append(offers, o)
			if t.SpotPrice != nil && *t.SpotPrice > 0 {
				o.Purchase, o.PriceUSDHr = pricing.Spot, float64(*t.SpotPrice)
				o.Available = pricing.AvailabilityOf(spotAt[region+"|"+t.InstanceType])
				offers = append(offers, o)
			}
		}
	}
	if len(regions) == 0 && listed > 0 {
		return nil, pricing.Errorf(pricing.Unavailable, "verda: no location to offer %d GPU types in (locations: %d listed, regions filter %v)", listed, len(locs), p.regions)
	}
	return providers.Finish(Name, snap, offers, listed)
}
