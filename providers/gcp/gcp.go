// Package gcp is picker's Google Compute Engine price adapter.
//
// Shapes come from the Compute Engine REST API (cloud.google.com/go/compute/apiv1:
// MachineTypes.AggregatedList for the GPU families a2, a3, a4, g2, g4 and the n1-standard
// hosts of attachable GPUs; AcceleratorTypes.AggregatedList for where T4, V100, P100
// and P4 can be attached). Prices come from the Cloud Billing Catalog (ListSkus of
// Compute Engine, service 6F81-5844-456A), which prices parts, not machines: each
// machine's hourly price per region is composed from its family's per-vCPU and per-GiB
// SKUs plus its GPUs' SKU (see compose.go and README.md).
package gcp

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	billing "cloud.google.com/go/billing/apiv1"
	"cloud.google.com/go/billing/apiv1/billingpb"
	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/gcp/gcpconf"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name used in offers and config.
const Name = gcpconf.Name

// ComputeService is Compute Engine's id in the Cloud Billing Catalog.
const ComputeService = "6F81-5844-456A"

// DefaultAPIKeyEnv names the environment variable holding the Cloud Billing API key
// when api_key_env is not set.
const DefaultAPIKeyEnv = gcpconf.DefaultAPIKeyEnv

// Config is the [providers.gcp] section; it lives in the light package gcpconf, which
// the picker binary links instead of this one.
type Config = gcpconf.Config

// Descriptor presents the SDK adapter: picker-fetch's list holds it (picker's registry
// holds gcpconf's, which runs picker-fetch).
var Descriptor = gcpconf.Descriptor(providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }))

// Option adjusts a Provider; tests use them to inject the clock, the HTTP client and a
// fast retry backoff.
type Option func(*options)

type options struct {
	now        func() time.Time
	httpClient *http.Client
	policy     httpx.Policy
}

// WithClock sets the clock that stamps ObservedAt.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithHTTPClient sets the base HTTP client of every Google call; Application Default
// Credentials are then not looked up (the Cloud Billing API key is still sent unless the
// endpoint is an http:// emulator). The retry policy wraps its transport.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithRetry sets the attempts per call (first try included) and the maximum backoff
// (and Retry-After) of the REST retry policy.
func WithRetry(maxAttempts int, maxBackoff time.Duration) Option {
	return func(o *options) {
		o.policy.MaxAttempts = max(maxAttempts, 1)
		o.policy.BaseDelay = min(defaultBaseDelay, maxBackoff)
		o.policy.MaxDelay, o.policy.MaxRetryAfter = maxBackoff, maxBackoff
	}
}

// WithPolicy replaces the whole retry policy (httpx's, shared by every HTTP adapter).
func WithPolicy(p httpx.Policy) Option { return func(o *options) { o.policy = p } }

// The REST list calls' retry policy: five attempts, backoff from 100 ms doubling up to
// 20 s, a server's Retry-After honoured up to 20 s.
const (
	defaultBaseDelay = 100 * time.Millisecond
	defaultMaxDelay  = 20 * time.Second
)

// Provider fetches GCP GPU offers. It is safe for concurrent use.
type Provider struct {
	cfg  Config
	opts options
}

// New validates cfg and returns the provider; it opens no connection.
func New(cfg Config, opts ...Option) (*Provider, error) {
	o := options{now: time.Now, policy: httpx.Policy{
		MaxAttempts: 5, BaseDelay: defaultBaseDelay, MaxDelay: defaultMaxDelay, MaxRetryAfter: defaultMaxDelay,
	}}
	for _, fn := range opts {
		fn(&o)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = DefaultAPIKeyEnv
	}
	return &Provider{cfg: cfg, opts: o}, nil
}

// emulator reports whether the endpoint is a plain-http emulator: no credentials sent.
func (p *Provider) emulator() bool { return strings.HasPrefix(p.cfg.Endpoint, "http://") }

// httpClient builds the client of one API for one fetch (ctx is bound to its requests): the injected or default base, credentials
// (ADC scopes, or the API key for billing), then the retry policy on top.
func (p *Provider) httpClient(ctx context.Context, apiKey string, scopes ...string) (*http.Client, error) {
	var base http.RoundTripper
	switch {
	case p.opts.httpClient != nil:
		base = p.opts.httpClient.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		if apiKey != "" && !p.emulator() {
			base = &apiKeyTransport{base: base, key: apiKey}
		}
	case p.emulator():
		base = http.DefaultTransport
	case apiKey != "":
		base = &apiKeyTransport{base: http.DefaultTransport, key: apiKey}
	default:
		c, _, err := htransport.NewClient(ctx, option.WithScopes(scopes...))
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		base = c.Transport
	}
	// Credentials are added by the transport to every request, so a redirect to another
	// host would carry them: the client refuses such redirects (httpx.CheckRedirect);
	// the transport caps every answer at httpx.MaxBodyBytes; pageGuard stops a list
	// whose page tokens loop.
	return &http.Client{Transport: &pageGuard{next: &httpx.Transport{Ctx: ctx, Base: base, Policy: p.opts.policy}}, CheckRedirect: httpx.CheckRedirect}, nil
}

func (p *Provider) clientOptions(hc *http.Client) []option.ClientOption {
	opts := []option.ClientOption{option.WithHTTPClient(hc)}
	if p.cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(p.cfg.Endpoint, "/")))
	}
	return opts
}

// listTimeout bounds one page of a list call (the libraries' own default is 60 s for
// billing and 600 s for compute); the retry policy lives in the transport instead of
// gax, so the gax retry settings are dropped to avoid retrying twice.
var listTimeout = []gax.CallOption{gax.WithTimeout(5 * time.Minute)}

// Fetch lists shapes and SKUs and composes the offers.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gcp: %w", err)
	}
	now := p.opts.now().UTC()
	computeHC, err := p.httpClient(ctx, "", "https://www.googleapis.com/auth/compute.readonly")
	if err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "gcp: compute: %w", err)
	}
	billingHC, err := p.httpClient(ctx, strings.TrimSpace(os.Getenv(p.cfg.APIKeyEnv)), "https://www.googleapis.com/auth/cloud-billing.readonly")
	if err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "gcp: billing: %w", err)
	}

	// Three lists, read page by page; the offers are composed from them at the end.
	tr := providers.NewTracker(ctx, "lists", 3)
	machines, err := p.listMachineTypes(ctx, computeHC, tr)
	if err != nil {
		return nil, p.wrap("list machine types", ctx, err)
	}
	tr.Done(listMachineTypes, 0)
	accels, err := p.listAcceleratorTypes(ctx, computeHC, tr)
	if err != nil {
		return nil, p.wrap("list accelerator types", ctx, err)
	}
	tr.Done(listAcceleratorTypes, 0)
	cat, err := p.listSkus(ctx, billingHC, tr)
	if err != nil {
		return nil, p.wrap("list skus", ctx, err)
	}
	snap := compose(machines, accels, cat, p.cfg.Regions, now)
	var warn []string
	snap.Offers, warn = providers.Finalize(Name, snap.Offers)
	tr.Done(listSKUs, len(snap.Offers))
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) == 0 {
		return nil, pricing.Errorf(pricing.Unavailable, "gcp: no prices found (%d machine types, %d SKUs used; %s)",
			len(machines), cat.n, strings.Join(snap.Warnings, "; "))
	}
	if len(p.cfg.Regions) > 0 {
		snap.Regions = slices.Clone(p.cfg.Regions)
	}
	if providers.WantsQuotas(ctx) {
		snap.Quotas = p.readQuotas(ctx, computeHC, quotaRegions(p.cfg.Regions, snap.Offers), now) // quota.go
	}
	if providers.WantsMarket(ctx) {
		snap.Market = cat.disks.report(quotaRegions(p.cfg.Regions, snap.Offers), now) // storage.go
	}
	return snap, nil
}

// The lists a fetch reads, as its progress names them.
const (
	listMachineTypes     = "machine types"
	listAcceleratorTypes = "accelerator types"
	listSKUs             = "SKUs"
)

// pageEnd tells tr that a page of list was read when the item just returned was the
// last its page held (the iterator fetches the next page on the next call).
func pageEnd(tr *providers.Tracker, list string, pi *iterator.PageInfo) {
	if pi.Remaining() == 0 {
		tr.Page(list, 0)
	}
}

func (p *Provider) wrap(what string, ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("gcp: %s: %w", what, ctx.Err())
	}
	return pricing.Errorf(pricing.Unavailable, "gcp: %s: %w", what, err)
}

// machineFilter narrows the aggregated list server-side (RE2 on the name); the same
// families are checked again client-side.
const machineFilter = `name eq "(a2|a3|a4|g2|g4)-.*|n1-standard-.*"`

// zoneMachine is one machine type in one zone.
type zoneMachine struct {
	zone    string
	name    string
	vcpus   int32
	memMiB  int32
	accel   string
	nAccel  int32
	deprecd bool
}

func (p *Provider) listMachineTypes(ctx context.Context, hc *http.Client, tr *providers.Tracker) ([]zoneMachine, error) {
	c, err := compute.NewMachineTypesRESTClient(ctx, p.clientOptions(hc)...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.CallOptions.AggregatedList = listTimeout
	it := c.AggregatedList(ctx, &computepb.AggregatedListMachineTypesRequest{
		Project:    p.cfg.Project,
		Filter:     strPtr(machineFilter),
		MaxResults: u32Ptr(500),
	})
	var out []zoneMachine
	for {
		pair, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		pageEnd(tr, listMachineTypes, it.PageInfo())
		for _, m := range pair.Value.GetMachineTypes() {
			zm := zoneMachine{zone: m.GetZone(), name: m.GetName(), vcpus: m.GetGuestCpus(), memMiB: m.GetMemoryMb()}
			if zm.zone == "" {
				zm.zone = strings.TrimPrefix(pair.Key, "zones/")
			}
			if a := m.GetAccelerators(); len(a) > 0 {
				zm.accel, zm.nAccel = a[0].GetGuestAcceleratorType(), a[0].GetGuestAcceleratorCount()
			}
			switch m.GetDeprecated().GetState() {
			case "DEPRECATED", "OBSOLETE", "DELETED":
				zm.deprecd = true
			}
			out = append(out, zm)
		}
	}
}

// zoneAccel is an accelerator type available in a zone.
type zoneAccel struct {
	zone     string
	name     string
	maxCards int32
}

func (p *Provider) listAcceleratorTypes(ctx context.Context, hc *http.Client, tr *providers.Tracker) ([]zoneAccel, error) {
	c, err := compute.NewAcceleratorTypesRESTClient(ctx, p.clientOptions(hc)...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.CallOptions.AggregatedList = listTimeout
	it := c.AggregatedList(ctx, &computepb.AggregatedListAcceleratorTypesRequest{
		Project:    p.cfg.Project,
		MaxResults: u32Ptr(500),
	})
	var out []zoneAccel
	for {
		pair, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		pageEnd(tr, listAcceleratorTypes, it.PageInfo())
		for _, a := range pair.Value.GetAcceleratorTypes() {
			if strings.HasSuffix(a.GetName(), "-vws") { // virtual workstation: licence surcharge
				continue
			}
			zone := a.GetZone() // a URL here, a bare name on machine types
			zone = zone[strings.LastIndexByte(zone, '/')+1:]
			if zone == "" {
				zone = strings.TrimPrefix(pair.Key, "zones/")
			}
			out = append(out, zoneAccel{zone: zone, name: a.GetName(), maxCards: a.GetMaximumCardsPerInstance()})
		}
	}
}

func (p *Provider) listSkus(ctx context.Context, hc *http.Client, tr *providers.Tracker) (*catalog, error) {
	c, err := billing.NewCloudCatalogRESTClient(ctx, p.clientOptions(hc)...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.CallOptions.ListSkus = listTimeout
	it := c.ListSkus(ctx, &billingpb.ListSkusRequest{
		Parent:       "services/" + ComputeService,
		CurrencyCode: "USD",
		PageSize:     5000,
	})
	cat := newCatalog()
	for {
		sku, err := it.Next()
		if err == iterator.Done {
			return cat, nil
		}
		if err != nil {
			return nil, err
		}
		pageEnd(tr, listSKUs, it.PageInfo())
		cat.add(sku)
		cat.disks.add(sku) // storage.go
	}
}

func strPtr(s string) *string { return &s }
func u32Ptr(v uint32) *uint32 { return &v }
