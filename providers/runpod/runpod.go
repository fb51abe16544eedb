// Package runpod prices RunPod's GPU pods from its GraphQL API
// (POST https://api.runpod.io/graphql, query gpuTypes). RunPod prices one GPU per hour;
// a pod of k GPUs costs k times that, so the adapter offers each GPU type at the GPU
// counts a pod may have (1, 2, 4, 8 up to the type's maxGpuCount).
//
// Secure Cloud (RunPod's data centres) and Community Cloud (vetted hosts) are priced
// apart and kept apart in the instance type's suffix, as the embedded snapshot does:
// "2x_H100-SXM_SECURE" and "2x_H100-SXM_COMMUNITY". The gpuTypes prices are global, so
// every offer's region is "global" and a fetch covers all regions.
package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every RunPod offer.
const Name = "runpod"

// DefaultEndpoint is RunPod's API base URL; the GraphQL endpoint is /graphql under it.
const DefaultEndpoint = "https://api.runpod.io"

// DefaultAPIKeyEnv is the environment variable read when api_key_env is empty.
const DefaultAPIKeyEnv = "RUNPOD_API_KEY"

// Region is the region of every RunPod offer: gpuTypes prices do not vary by location.
const Region = "global"

// Cloud names.
const (
	Secure    = "secure"
	Community = "community"
)

// Config is the [providers.runpod] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable holding a RunPod API key. The price
	// query works without one; when the variable is set, the key is sent.
	APIKeyEnv string `toml:"api_key_env"`
	// Clouds selects "secure", "community" or both (the default).
	Clouds []string `toml:"clouds"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name: Name,
	Description: "RunPod GraphQL API (key optional): per-GPU on-demand and spot prices of Secure and Community Cloud pods, " +
		"offered per GPU count as 1x_<GPU>_SECURE / 1x_<GPU>_COMMUNITY in region \"global\"",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds a RunPod API key; sent when set (prices are readable without one)", Default: DefaultAPIKeyEnv},
		{Key: "clouds", Help: "which clouds to price: \"secure\" (RunPod data centres), \"community\" (vetted hosts), or both", Default: `["secure", "community"]`},
	},
	Needs:  providers.Needs{Kind: providers.NeedsOptionalKey, KeyEnv: DefaultAPIKeyEnv, Where: "RunPod console, Settings, API Keys (read-only is enough)"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithPolicy, WithSleep and
// WithBackoff set the HTTP client, the clock and the shared retry policy.
type Option = httpx.Option

// Provider fetches RunPod prices.
type Provider struct {
	url            string
	keyEnv         string
	secure, commun bool
	ignoredRegions []string
	client         *httpx.Client
	now            func() time.Time
}

// New checks cfg and returns a provider. The API key is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	base, err := httpx.BaseURL(Name, cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	u := *base
	u.Path += "/graphql"
	env := cfg.APIKeyEnv
	if env == "" {
		env = DefaultAPIKeyEnv
	}
	p := &Provider{url: u.String(), keyEnv: env, ignoredRegions: slices.Clone(cfg.Regions)}
	clouds := cfg.Clouds
	if len(clouds) == 0 {
		clouds = []string{Secure, Community}
	}
	for _, c := range clouds {
		switch strings.ToLower(strings.TrimSpace(c)) {
		case Secure:
			p.secure = true
		case Community:
			p.commun = true
		default:
			return nil, pricing.ParamErrorf(pricing.Invalid, "clouds", "runpod: clouds: %q is not \"secure\" or \"community\"", c)
		}
	}
	s := httpx.Apply(opts...)
	p.client, p.now = httpx.NewClient("", s), s.Now
	return p, nil
}

// query asks for every GPU type with its per-GPU prices. lowestPrice (for one GPU)
// carries the lowest spot bid, the minimum vCPUs and RAM a pod gets per GPU, and the
// stock: stockStatus ("High", "Medium", "Low"; null when nothing is rentable) and
// maxUnreservedGpuCount, the most GPUs rentable now (gpuhunt's and SkyPilot's fields;
// reference README §8.1).
const query = `query GpuTypes {
  gpuTypes {
    id
    displayName
    memoryInGb
    maxGpuCount
    secureCloud
    communityCloud
    securePrice
    communityPrice
    secureSpotPrice
    communitySpotPrice
    lowestPrice(input: {gpuCount: 1}) {
      minimumBidPrice
      uninterruptablePrice
      minVcpu
      minMemory
      stockStatus
      maxUnreservedGpuCount
    }
  }
}`

type gqlResponse struct {
	Data *struct {
		GPUTypes *[]gpuType `json:"gpuTypes"`
	} `json:"data"`
	Errors []gqlError `json:"errors"`
}

type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
	} `json:"extensions"`
}

// gpuType is one element of gpuTypes. Prices are USD per GPU per hour; most fields are
// nullable.
type gpuType struct {
	ID                 string       `json:"id"`
	DisplayName        string       `json:"displayName"`
	MemoryInGB         *float64     `json:"memoryInGb"`
	MaxGPUCount        *int         `json:"maxGpuCount"`
	SecureCloud        bool         `json:"secureCloud"`
	CommunityCloud     bool         `json:"communityCloud"`
	SecurePrice        *float64     `json:"securePrice"`
	CommunityPrice     *float64     `json:"communityPrice"`
	SecureSpotPrice    *float64     `json:"secureSpotPrice"`
	CommunitySpotPrice *float64     `json:"communitySpotPrice"`
	LowestPrice        *lowestPrice `json:"lowestPrice"`
}

// lowestPrice is gpuTypes' lowestPrice(input: {gpuCount: 1}).
type lowestPrice struct {
	MinimumBidPrice      *float64 `json:"minimumBidPrice"`
	UninterruptablePrice *float64 `json:"uninterruptablePrice"`
	MinVCPU              *float64 `json:"minVcpu"`
	MinMemory            *float64 `json:"minMemory"`
	// StockStatus is raw so that null (no stock: sold out) differs from absent (an
	// answer without the field: unknown).
	StockStatus           json.RawMessage `json:"stockStatus"`
	MaxUnreservedGPUCount *int            `json:"maxUnreservedGpuCount"`
}

// Fetch runs the gpuTypes query and returns the offers.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "runpod: %w", err)
	}
	key, err := httpx.APIKey(Name, p.keyEnv, false)
	if err != nil {
		return nil, err
	}
	now := p.now().UTC()
	tr := providers.NewTracker(ctx, "requests", 1)
	var r gqlResponse
	for attempt := 1; ; attempt++ {
		r, err = p.query(ctx, key)
		if err != nil {
			return nil, err
		}
		if len(r.Errors) == 0 {
			break
		}
		gerr := pricing.Errorf(pricing.Unavailable, "runpod: gpuTypes: GraphQL error: %s", r.errorText())
		if !r.transient() {
			return nil, gerr
		}
		// RunPod answers an overloaded backend with HTTP 200 and an
		// INTERNAL_SERVER_ERROR "try again" error: retried like a 5xx.
		if attempt >= p.client.Policy.Attempts() {
			return nil, pricing.Errorf(pricing.Unavailable, "%w (gave up after %d attempts)", gerr, attempt)
		}
		if err := p.client.Policy.Wait(ctx, attempt); err != nil {
			return nil, pricing.Errorf(pricing.Unavailable, "runpod: gpuTypes: %w (last error: %v)", err, gerr)
		}
	}
	if r.Data == nil {
		return nil, httpx.Field(Name, "gpuTypes", "data")
	}
	if r.Data.GPUTypes == nil {
		return nil, httpx.Field(Name, "gpuTypes", "data.gpuTypes")
	}
	snap, err := p.snapshot(*r.Data.GPUTypes, now)
	if err == nil {
		tr.Done("gpuTypes", len(snap.Offers))
	}
	return snap, err
}

// query sends the gpuTypes query once (under the HTTP retry policy) and decodes it.
func (p *Provider) query(ctx context.Context, key string) (gqlResponse, error) {
	var r gqlResponse
	body, _ := json.Marshal(map[string]any{"query": query})
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	resp, err := p.client.Do(ctx, httpx.Request{Method: http.MethodPost, URL: p.url, Header: h, Body: body})
	if err != nil {
		var se *httpx.StatusError
		if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
			return r, pricing.Errorf(pricing.Invalid, "runpod: gpuTypes: the API refused the key read from %s: %w", p.keyEnv, err)
		}
		return r, fmt.Errorf("runpod: gpuTypes: %w", err)
	}
	err = httpx.DecodeJSON(Name, "gpuTypes", resp.Body, &r)
	return r, err
}

func (r *gqlResponse) errorText() string {
	msgs := make([]string, 0, len(r.Errors))
	for _, e := range r.Errors {
		m := e.Message
		if e.Extensions.Code != "" {
			m = e.Extensions.Code + ": " + m
		}
		msgs = append(msgs, m)
	}
	return strings.Join(msgs, "; ")
}

// transient reports whether every GraphQL error is one worth another attempt: a server
// error code (INTERNAL_SERVER_ERROR, SERVICE_UNAVAILABLE, TIMEOUT, rate limiting) or a
// message that asks to try again. A query, validation or auth error is not.
func (r *gqlResponse) transient() bool {
	for _, e := range r.Errors {
		code := strings.ToUpper(e.Extensions.Code)
		msg := strings.ToLower(e.Message)
		switch {
		case code == "INTERNAL_SERVER_ERROR", code == "SERVICE_UNAVAILABLE", code == "TIMEOUT", code == "TOO_MANY_REQUESTS", code == "RATE_LIMITED":
		case strings.Contains(msg, "try again"):
		default:
			return false
		}
	}
	return true
}

// counts are the GPU counts offered for a type: 1, 2, 4, 8 up to maxCount, plus maxCount
// itself when it is another count (up to 16). A missing maxCount means 1, 2, 4, 8.
func counts(maxCount *int) []int {
	limit := 8
	if maxCount != nil && *maxCount > 0 {
		limit = *maxCount
	}
	var out []int
	for _, k := range []int{1, 2, 4, 8} {
		if k <= limit {
			out = append(out, k)
		}
	}
	if !slices.Contains(out, limit) && limit <= 16 {
		out = append(out, limit)
	}
	return out
}

// Compiled on first use, not in package init, which every picker command runs.
var slugRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9.]+`) })

// slug turns a display name into an instance-type part: "H100 SXM" -> "H100-SXM".
func slug(s string) string {
	return strings.Trim(slugRe().ReplaceAllString(strings.TrimSpace(s), "-"), "-")
}

func positive(v *float64) (float64, bool) {
	if v == nil || !(*v > 0) {
		return 0, false
	}
	return *v, true
}

// cloudPrices are one cloud's per-GPU prices of a type.
type cloudPrices struct {
	suffix   string
	onDemand float64 // 0: not sold on demand in this cloud
	spot     float64 // 0: no spot price
}

func (p *Provider) snapshot(types []gpuType, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{}
	if len(p.ignoredRegions) > 0 {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("runpod: regions %s ignored: gpuTypes prices are global (region %q)", strings.Join(p.ignoredRegions, ", "), Region))
	}
	for _, t := range types {
		id := strings.TrimSpace(t.ID)
		if id == "" || strings.EqualFold(id, "unknown") {
			continue // RunPod's pseudo type
		}
		mem, _ := positive(t.MemoryInGB)
		model, ok := pricing.NormalizeGPU(id, mem)
		if !ok && t.DisplayName != "" {
			model, ok = pricing.NormalizeGPU(t.DisplayName, mem)
		}
		if !ok {
			model = id
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("runpod: unknown GPU %q kept as is", model))
		}
		if mem == 0 {
			if g, ok := pricing.LookupGPU(model); ok {
				mem = g.MemGB
			} else {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("runpod: %s skipped: no memoryInGb and not in the GPU catalog", id))
				continue
			}
		}
		name := slug(t.DisplayName)
		if name == "" {
			name = slug(id)
		}
		sec := cloudPrices{suffix: "SECURE"}
		com := cloudPrices{suffix: "COMMUNITY"}
		if v, ok := positive(t.SecurePrice); ok && t.SecureCloud {
			sec.onDemand = v
		}
		if v, ok := positive(t.CommunityPrice); ok && t.CommunityCloud {
			com.onDemand = v
		}
		if v, ok := positive(t.SecureSpotPrice); ok && t.SecureCloud {
			sec.spot = v
		}
		if v, ok := positive(t.CommunitySpotPrice); ok && t.CommunityCloud {
			com.spot = v
		}
		var vcpu, ram float64
		if lp := t.LowestPrice; lp != nil {
			vcpu, _ = positive(lp.MinVCPU)
			ram, _ = positive(lp.MinMemory)
			// Without per-cloud spot prices, the lowest bid belongs to the cloud that
			// lowestPrice describes: the cheaper one on demand.
			if bid, ok := positive(lp.MinimumBidPrice); ok && sec.spot == 0 && com.spot == 0 {
				switch {
				case com.onDemand > 0 && (sec.onDemand == 0 || com.onDemand <= sec.onDemand):
					com.spot = bid
				case sec.onDemand > 0:
					sec.spot = bid
				}
			}
		}
		var clouds []cloudPrices
		if p.secure {
			clouds = append(clouds, sec)
		}
		if p.commun {
			clouds = append(clouds, com)
		}
		for _, c := range clouds {
			for _, k := range counts(t.MaxGPUCount) {
				for _, pp := range []struct {
					purchase pricing.Purchase
					perGPU   float64
				}{{pricing.OnDemand, c.onDemand}, {pricing.Spot, c.spot}} {
					if pp.perGPU == 0 {
						continue
					}
					o := pricing.Offer{
						Provider:     Name,
						Region:       Region,
						InstanceType: fmt.Sprintf("%dx_%s_%s", k, name, c.suffix),
						GPUModel:     model,
						GPUCount:     float64(k),
						GPUMemGiB:    mem,
						VCPUs:        vcpu * float64(k),
						RAMGiB:       ram * float64(k),
						Purchase:     pp.purchase,
						PriceUSDHr:   round6(pp.perGPU * float64(k)),
						Currency:     "USD",
						ObservedAt:   now,
						Source:       pricing.SourceAPI,
						Available:    stock(t.LowestPrice, k),
					}
					snap.Offers = append(snap.Offers, o)
				}
			}
		}
	}
	var warn []string
	snap.Offers, warn = providers.Finalize(Name, snap.Offers)
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) == 0 {
		return nil, pricing.Errorf(pricing.Unavailable, "runpod: no GPU type has a price in the selected clouds (%d types listed)", len(types))
	}
	return snap, nil
}

// stock is what lowestPrice says of renting k GPUs of the type now: sold out when its
// stockStatus is null or k is past maxUnreservedGpuCount, available when k is within it
// (or, without the count, for one GPU with a stock status), unknown when the answer
// does not say. The query's lowestPrice is the global one (no dataCenterId), so this is
// RunPod's stock anywhere, not per data center, and it is applied to both clouds' offers.
func stock(lp *lowestPrice, k int) pricing.Availability {
	if lp == nil || len(lp.StockStatus) == 0 {
		return pricing.AvailabilityUnknown
	}
	if string(lp.StockStatus) == "null" {
		return pricing.SoldOut
	}
	if n := lp.MaxUnreservedGPUCount; n != nil {
		return pricing.AvailabilityOf(k <= *n)
	}
	if k == 1 {
		return pricing.AvailableNow
	}
	return pricing.AvailabilityUnknown
}

// round6 removes float noise from k x price (3 x 0.1 = 0.30000000000000004).
func round6(v float64) float64 {
	const f = 1e6
	return float64(int64(v*f+0.5)) / f
}
