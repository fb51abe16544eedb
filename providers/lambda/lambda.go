// Package lambda prices Lambda Cloud's GPU instances from its public API
// (GET https://cloud.lambda.ai/api/v1/instance-types, Bearer API key). Prices are integer
// US cents per hour for the whole instance and the same in every region; the answer
// lists, per instance type, the regions that have capacity right now. The adapter offers
// each type in those regions, or, with include_unavailable, in every region it has seen.
// Offers in a region with capacity are pricing.AvailableNow, the others include_unavailable
// lists are pricing.SoldOut (recommend ranks them after every launchable offer).
package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Lambda offer.
const Name = "lambda"

// DefaultEndpoint is Lambda Cloud's API base URL (the legacy host cloud.lambdalabs.com
// serves the same API).
const DefaultEndpoint = "https://cloud.lambda.ai"

// DefaultAPIKeyEnv is the environment variable read when api_key_env is empty.
const DefaultAPIKeyEnv = "LAMBDA_API_KEY"

// Config is the [providers.lambda] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable holding the API key (Lambda Cloud
	// dashboard, API keys). Default LAMBDA_API_KEY.
	APIKeyEnv string `toml:"api_key_env"`
	// IncludeUnavailable also offers each instance type in the regions where it has no
	// capacity now (its price is listed all the same).
	IncludeUnavailable bool `toml:"include_unavailable"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "Lambda Cloud API (API key): on-demand prices of GPU instance types, in the regions with capacity now",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds the Lambda Cloud API key (required)", Default: DefaultAPIKeyEnv},
		{Key: "include_unavailable", Help: "also list instance types in regions that have no capacity right now", Default: "false"},
	},
	Needs:  providers.Needs{Kind: providers.NeedsKey, KeyEnv: DefaultAPIKeyEnv, Where: "Lambda Cloud dashboard, API keys"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithPolicy, WithSleep and
// WithBackoff set the HTTP client, the clock and the shared retry policy.
type Option = httpx.Option

// Provider fetches Lambda Cloud prices.
type Provider struct {
	url         string
	keyEnv      string
	regions     []string // configured filter; nil means all
	unavailable bool
	client      *httpx.Client
	now         func() time.Time
}

// New checks cfg and returns a provider. The API key is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	base, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	u := *base
	u.Path += "/api/v1/instance-types"
	env := cfg.APIKeyEnv
	if env == "" {
		env = DefaultAPIKeyEnv
	}
	var regions []string
	if len(cfg.Regions) > 0 {
		regions = slices.Clone(cfg.Regions)
		slices.Sort(regions)
		regions = slices.Compact(regions)
	}
	s := httpx.Apply(opts...)
	return &Provider{url: u.String(), keyEnv: env, regions: regions, unavailable: cfg.IncludeUnavailable,
		client: httpx.NewClient("", s), now: s.Now}, nil
}

// response is the instance-types answer: a map keyed by instance type name.
type response struct {
	Data *map[string]entry `json:"data"`
}

type entry struct {
	InstanceType *instanceType `json:"instance_type"`
	Regions      []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"regions_with_capacity_available"`
}

type instanceType struct {
	Name           string `json:"name"`
	Description    string `json:"description"`
	GPUDescription string `json:"gpu_description"`
	// PriceCents is an integer in the OpenAPI schema; the spec's own example writes it
	// as a string, so both are read.
	PriceCents *httpx.Number `json:"price_cents_per_hour"`
	Specs      *struct {
		VCPUs      float64 `json:"vcpus"`
		MemoryGiB  float64 `json:"memory_gib"`
		StorageGiB float64 `json:"storage_gib"`
		GPUs       float64 `json:"gpus"`
	} `json:"specs"`
}

// errorBody is Lambda's error envelope.
type errorBody struct {
	Error *struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		Suggestion string `json:"suggestion"`
	} `json:"error"`
}

var (
	// "8x H100 (80 GB SXM5)", "1x GH200 (96 GB)", "1x Tesla V100 (16 GB)"
	// Compiled on first use, not in package init, which every picker command runs.
	descRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(\d+)\s*x\s+(.+?)\s*$`) })
	memRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\((\d+(?:\.\d+)?)\s*GB\b`) })
)

// Fetch reads the instance types and returns an offer per type and region.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "lambda: %w", err)
	}
	key, err := httpx.APIKey(Name, p.keyEnv, true)
	if err != nil {
		return nil, err
	}
	now := p.now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	resp, err := p.client.Do(ctx, httpx.Request{URL: p.url, Header: http.Header{
		"Authorization": {"Bearer " + key},
		"Accept":        {"application/json"},
	}})
	if err != nil {
		return nil, p.explain(err)
	}
	var r response
	if err := httpx.DecodeJSON(Name, "instance types", resp.Body, &r); err != nil {
		return nil, err
	}
	if r.Data == nil {
		return nil, httpx.Field(Name, "instance types", "data")
	}
	snap, err := p.snapshot(*r.Data, now)
	if err == nil {
		tr.Done("instance types", len(snap.Offers))
	}
	return snap, err
}

// explain turns Lambda's error envelope into a message: an invalid key says which
// variable held it.
func (p *Provider) explain(err error) error {
	se, ok := asStatus(err)
	if !ok {
		return fmt.Errorf("lambda: instance types: %w", err)
	}
	var eb errorBody
	if json.Unmarshal(se.Body, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		if se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden || strings.HasPrefix(eb.Error.Code, "global/invalid-api-key") {
			// The envelope says it all; the raw answer stays reachable through Unwrap.
			return &pricing.Error{Code: pricing.Invalid, Err: err, Message: fmt.Sprintf("lambda: instance types: HTTP %d: %s: %s (the key is read from %s)",
				se.Status, eb.Error.Code, strings.TrimSpace(eb.Error.Message), p.keyEnv)}
		}
		return pricing.Errorf(pricing.Unavailable, "lambda: instance types: %s: %s: %w", eb.Error.Code, eb.Error.Message, err)
	}
	if se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden {
		return pricing.Errorf(pricing.Invalid, "lambda: instance types: the API refused the key read from %s: %w", p.keyEnv, err)
	}
	return fmt.Errorf("lambda: instance types: %w", err)
}

func (p *Provider) snapshot(data map[string]entry, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{}
	if p.regions != nil {
		snap.Regions = slices.Clone(p.regions)
	}
	// Every region named anywhere, for include_unavailable: the answer lists only the
	// regions with capacity, so the known set is their union plus the configured ones.
	all := map[string]bool{}
	for _, e := range data {
		for _, r := range e.Regions {
			if r.Name != "" {
				all[r.Name] = true
			}
		}
	}
	for _, r := range p.regions {
		all[r] = true
	}
	allRegions := slices.Sorted(maps.Keys(all))
	types := 0
	var soldOut []string
	for _, name := range slices.Sorted(maps.Keys(data)) {
		e := data[name]
		where := "instance type " + name
		it := e.InstanceType
		if it == nil {
			return nil, httpx.Field(Name, where, "instance_type")
		}
		if it.PriceCents == nil {
			return nil, httpx.Field(Name, where, "instance_type.price_cents_per_hour")
		}
		typeName := it.Name
		if typeName == "" {
			typeName = name
		}
		count, gpuName := gpus(it)
		if count <= 0 {
			continue // a CPU-only type
		}
		types++
		mem := 0.0
		if m := memRe().FindStringSubmatch(gpuName); m != nil {
			mem, _ = strconv.ParseFloat(m[1], 64)
		}
		model, ok := pricing.NormalizeGPU(gpuName, mem)
		if !ok {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("lambda: %s: unknown GPU %q kept as is", typeName, model))
		} else if mem == 0 {
			if g, ok := pricing.LookupGPU(model); ok {
				mem = g.MemGB
			}
		}
		// The regions with capacity now: each offer there is available (issue 24); with
		// include_unavailable the others are listed too, sold out.
		var regions, withCapacity []string
		for _, r := range e.Regions {
			if r.Name != "" {
				withCapacity = append(withCapacity, r.Name)
			}
		}
		slices.Sort(withCapacity)
		withCapacity = slices.Compact(withCapacity)
		regions = slices.Clone(withCapacity) // the region filter below deletes in place
		if p.unavailable {
			regions = allRegions
		}
		if p.regions != nil {
			regions = slices.DeleteFunc(regions, func(r string) bool { return !slices.Contains(p.regions, r) })
		}
		if len(regions) == 0 {
			soldOut = append(soldOut, typeName)
			continue
		}
		var vcpus, ram float64
		if it.Specs != nil {
			vcpus, ram = it.Specs.VCPUs, it.Specs.MemoryGiB
		}
		for _, region := range regions {
			o := pricing.Offer{
				Provider:     Name,
				Region:       region,
				InstanceType: typeName,
				GPUModel:     model,
				GPUCount:     count,
				GPUMemGiB:    mem,
				VCPUs:        vcpus,
				RAMGiB:       ram,
				Purchase:     pricing.OnDemand,
				// Whole cents, so dividing by 100 is exact to the cent.
				PriceUSDHr: math.Round(float64(*it.PriceCents)) / 100,
				Currency:   "USD",
				ObservedAt: now,
				Source:     pricing.SourceAPI,
				Available:  pricing.AvailabilityOf(slices.Contains(withCapacity, region)),
			}
			snap.Offers = append(snap.Offers, o)
		}
	}
	var warn []string
	snap.Offers, warn = providers.Finalize(Name, snap.Offers)
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) == 0 {
		switch {
		case types == 0:
			return nil, pricing.Errorf(pricing.Unavailable, "lambda: the API listed no GPU instance types")
		case len(soldOut) > 0:
			in := "any region"
			if p.regions != nil {
				in = strings.Join(p.regions, ", ")
			}
			return nil, pricing.Errorf(pricing.Unavailable, "lambda: no instance type has capacity in %s (%d sold out); set include_unavailable = true to list them anyway", in, len(soldOut))
		}
		return nil, pricing.Errorf(pricing.Unavailable, "lambda: no valid offers (see warnings: %s)", strings.Join(snap.Warnings, "; "))
	}
	return snap, nil
}

// gpus returns the GPU count and the GPU's name ("H100 (80 GB SXM5)") of a type, from
// specs.gpus and gpu_description, falling back to the description "8x H100 (80 GB SXM5)".
func gpus(it *instanceType) (float64, string) {
	count := 0.0
	if it.Specs != nil {
		count = it.Specs.GPUs
	}
	name := strings.TrimSpace(it.GPUDescription)
	if m := descRe().FindStringSubmatch(it.Description); m != nil {
		if count == 0 {
			count, _ = strconv.ParseFloat(m[1], 64)
		}
		if name == "" {
			name = m[2]
		}
	}
	if name == "" {
		name = strings.TrimSpace(it.Description)
	}
	return count, name
}

func asStatus(err error) (*httpx.StatusError, bool) {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return se, true
	}
	return nil, false
}
