// Package aws is picker's Amazon EC2 price adapter, built on aws-sdk-go-v2.
//
// Per configured region it joins three calls:
//
//   - Price List Query API GetProducts (ServiceCode AmazonEC2, TERM_MATCH filters for
//     Linux, shared tenancy, no pre-installed software, used capacity, no licence) for
//     the on-demand hourly price of every GPU instance type (families g*, gr*, p*);
//   - EC2 DescribeInstanceTypes for the GPU facts (model, count, memory) the price list
//     lacks, with overrides for AWS's known bad data (see gpu.go);
//   - EC2 DescribeSpotPriceHistory (StartTime now, Linux/UNIX) for the current spot
//     price, keeping the cheapest availability zone per instance type and region.
//
// Regions are isolated: a region whose calls fail is reported in Snapshot.Failed and left
// out of Snapshot.Regions, so the store keeps its last good prices; the fetch fails only
// when every region fails or the context ends.
package aws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/smithy-go/logging"
	"golang.org/x/sync/errgroup"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/aws/awsconf"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name used in offers and config.
const Name = awsconf.Name

// DefaultRegions are priced when the config names none.
var DefaultRegions = awsconf.DefaultRegions

// PricingRegions are the regions that host the Price List Query API endpoint.
var PricingRegions = awsconf.PricingRegions

// Config is the [providers.aws] section; it lives in the light package awsconf, which
// the picker binary links instead of this one.
type Config = awsconf.Config

// Descriptor presents the SDK adapter: picker-fetch's list holds it (picker's registry
// holds awsconf's, which runs picker-fetch).
var Descriptor = awsconf.Descriptor(providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }))

// Option adjusts a Provider; tests use them to inject the clock, the HTTP client and a
// fast retry backoff.
type Option func(*options)

type options struct {
	now         func() time.Time
	httpClient  *http.Client
	maxAttempts int
	maxBackoff  time.Duration
}

const (
	// concurrency bounds how many regions are fetched at once.
	concurrency = 4
	// pageSize is GetProducts' MaxResults: the API's maximum, 100.
	pageSize = 100
)

// WithClock sets the clock that stamps ObservedAt and the spot history's StartTime.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithHTTPClient sets the HTTP client of every AWS call.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithRetry sets the SDK retryer's attempts per call (first try included) and its
// maximum backoff between attempts.
func WithRetry(maxAttempts int, maxBackoff time.Duration) Option {
	return func(o *options) { o.maxAttempts, o.maxBackoff = maxAttempts, maxBackoff }
}

// Provider fetches AWS GPU offers. It is safe for concurrent use.
type Provider struct {
	cfg     Config
	regions []string
	opts    options
}

// New validates cfg and returns the provider. It reads no credentials: the standard
// chain is resolved on each Fetch.
func New(cfg Config, opts ...Option) (*Provider, error) {
	o := options{now: time.Now, maxAttempts: 5, maxBackoff: 20 * time.Second}
	for _, fn := range opts {
		fn(&o)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PricingRegion == "" {
		cfg.PricingRegion = "us-east-1"
	}
	regions := cfg.Regions
	if len(regions) == 0 {
		regions = DefaultRegions
	}
	seen := map[string]bool{}
	var rs []string
	for _, r := range regions {
		r = strings.TrimSpace(r)
		if r == "" || seen[r] {
			continue
		}
		seen[r] = true
		rs = append(rs, r)
	}
	if o.maxAttempts < 1 {
		o.maxAttempts = 1
	}
	return &Provider{cfg: cfg, regions: rs, opts: o}, nil
}

// Regions returns the regions the provider prices.
func (p *Provider) Regions() []string { return slices.Clone(p.regions) }

// newRetryer is the SDK's standard retryer, configured: throttling (ThrottlingException
// from Pricing, RequestLimitExceeded from EC2, HTTP 429) and 5xx are retried with
// exponential jittered backoff capped at maxBackoff; so is a body cut short
// (io.ErrUnexpectedEOF), which the SDK would otherwise report as a deserialization error.
func (p *Provider) newRetryer() awssdk.Retryer {
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = p.opts.maxAttempts
		so.MaxBackoff = p.opts.maxBackoff
		so.Retryables = append(so.Retryables,
			retry.RetryableErrorCode{Codes: map[string]struct{}{"ThrottlingException": {}, "RequestLimitExceeded": {}, "InternalErrorException": {}}},
			retry.RetryableHTTPStatusCode{Codes: map[int]struct{}{429: {}, 500: {}, 502: {}, 503: {}, 504: {}}},
			retry.IsErrorRetryableFunc(func(err error) awssdk.Ternary {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return awssdk.TrueTernary
				}
				return awssdk.UnknownTernary
			}),
		)
		so.Throttles = append(so.Throttles, retry.ThrottleErrorCode{Codes: map[string]struct{}{"ThrottlingException": {}, "RequestLimitExceeded": {}}})
	})
}

func (p *Provider) loadConfig(ctx context.Context) (awssdk.Config, error) {
	lo := []func(*config.LoadOptions) error{
		config.WithRegion(p.cfg.PricingRegion),
		config.WithRetryer(p.newRetryer),
		config.WithLogger(sdkLogger),
	}
	if p.opts.httpClient != nil {
		lo = append(lo, config.WithHTTPClient(p.opts.httpClient))
	}
	if p.cfg.Endpoint != "" {
		lo = append(lo, config.WithBaseEndpoint(p.cfg.Endpoint))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return cfg, err
	}
	cfg.HTTPClient = limitHTTPClient(cfg.HTTPClient)
	return cfg, nil
}

// limitHTTPClient gives the SDK's HTTP client picker's limits: every answer capped at
// httpx.MaxBodyBytes ([refresh] max_answer_mib) and no redirect to another host (a
// signed request's headers and security token must not follow one). The SDK's own
// client keeps its transport (AWS_CA_BUNDLE, proxies, timeouts) under the limits.
func limitHTTPClient(hc config.HTTPClient) config.HTTPClient {
	var c http.Client
	switch v := hc.(type) {
	case *http.Client:
		c = *v
	case *awshttp.BuildableClient:
		c = http.Client{Transport: v.GetTransport(), Timeout: v.GetTimeout()}
	default:
		return hc // a client picker does not know how to wrap; used as given
	}
	c.Transport = httpx.LimitBody(c.Transport)
	c.CheckRedirect = httpx.CheckRedirect
	return &c
}

// sdkLogger takes the SDK's own log lines to slog at debug level. The SDK writes them to
// stderr by default, past picker's -q: 60-240 lines per 90k-offer refresh of "failed to
// discard remaining HTTP response body", its close middleware's complaint on bodies the
// deserializer had already read and closed (connection reuse is unaffected, the
// transport already had the whole body).
var sdkLogger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
	slog.Debug("aws sdk: "+fmt.Sprintf(format, v...), "classification", string(c))
})

// onDemandOffer is an on-demand offer while its region waits for the others: the rest
// of its pricing.Offer is the region's, the same for all (72 bytes instead of 200).
type onDemandOffer struct {
	typ   string
	price float64
	facts gpuFacts
}

// regionResult is what one region's calls produced.
type regionResult struct {
	region string
	onDem  []onDemandOffer
	spot   []spotRecord
	// regionFacts is the region's GPU facts until Fetch merges them into sharedFacts.
	regionFacts map[string]gpuFacts
	warn        []string
	err         error
}

// Fetch prices every configured region; see the package comment.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	awsCfg, err := p.loadConfig(ctx)
	if err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "aws: load config: %w", err)
	}
	now := p.opts.now().UTC()
	pc := awspricing.NewFromConfig(awsCfg)

	results := make([]regionResult, len(p.regions))
	facts := &sharedFacts{m: map[string]rankedFacts{}}
	var g errgroup.Group
	g.SetLimit(concurrency)
	for i, region := range p.regions {
		g.Go(func() error {
			if err := ctx.Err(); err != nil { // cancelled while waiting for a slot
				results[i] = regionResult{region: region, err: err}
				return nil
			}
			ec := ec2.NewFromConfig(awsCfg, func(o *ec2.Options) { o.Region = region })
			results[i] = p.fetchRegion(ctx, pc, ec, region, now)
			if results[i].err == nil {
				facts.merge(i, results[i].regionFacts)
			}
			results[i].regionFacts = nil
			return nil
		})
	}
	_ = g.Wait() // a region's failure is in its result, never a group error
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	return p.assemble(results, facts.m, now)
}

// sharedFacts is the GPU facts of every successful region's instance types, merged as
// each region finishes rather than held per region until all have (at 300 regions the
// per-region maps were 12 MB of a 90k-offer refresh's live heap, issue 17). When
// regions disagree on a type, the last configured region's facts win, as they did when
// assemble merged the regions in order.
type sharedFacts struct {
	mu sync.Mutex
	m  map[string]rankedFacts
}

// rankedFacts are one type's facts and the index of the region that gave them.
type rankedFacts struct {
	gpuFacts
	region int
}

func (s *sharedFacts) merge(region int, facts map[string]gpuFacts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, f := range facts {
		if cur, ok := s.m[t]; !ok || cur.region < region {
			s.m[t] = rankedFacts{f, region}
		}
	}
}

func (p *Provider) fetchRegion(ctx context.Context, pc getProductsAPI, ec ec2API, region string, now time.Time) regionResult {
	res := regionResult{region: region}
	facts, warn, err := describeGPUInstanceTypes(ctx, ec)
	if err != nil {
		res.err = fmt.Errorf("describe instance types: %w", err)
		return res
	}
	res.regionFacts = facts
	res.warn = append(res.warn, warn...)

	ing := newIngester(region, facts, now)
	if err := getProducts(ctx, pc, region, pageSize, ing.add); err != nil {
		res.err = fmt.Errorf("get products: %w", err)
		return res
	}
	res.onDem = make([]onDemandOffer, len(ing.offers))
	for i, o := range ing.offers {
		res.onDem[i] = onDemandOffer{typ: o.InstanceType, price: o.PriceUSDHr, facts: gpuFacts{
			model: o.GPUModel, count: o.GPUCount, memGiB: o.GPUMemGiB, vcpus: o.VCPUs, ramGiB: o.RAMGiB}}
	}
	res.warn = append(res.warn, ing.warnings()...)

	types := make([]string, 0, len(facts))
	for t := range facts {
		types = append(types, t)
	}
	slices.Sort(types)
	spot, err := spotPrices(ctx, ec, types, now)
	if err != nil {
		res.err = fmt.Errorf("describe spot price history: %w", err)
		return res
	}
	res.spot = spot
	return res
}

// assemble joins the regions' results: on-demand offers of the regions that succeeded,
// and spot offers attributed to regions by their availability zone.
func (p *Provider) assemble(results []regionResult, allFacts map[string]rankedFacts, now time.Time) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Failed: map[string]error{}}
	ok := map[string]bool{}
	for _, r := range results {
		if r.err != nil {
			snap.Failed[r.region] = fmt.Errorf("aws: %s: %w", r.region, r.err)
			continue
		}
		ok[r.region] = true
	}
	// Cheapest zone per (region, instance type), over every successful call: with one
	// endpoint for all regions, a record is placed by its zone, not by which call saw it.
	type rk struct{ region, typ string }
	best := map[rk]spotRecord{}
	for _, r := range results {
		if r.err != nil {
			continue
		}
		for _, s := range r.spot {
			region := regionOfZone(s.zone, p.regions)
			if region == "" || !ok[region] {
				continue
			}
			k := rk{region, s.instanceType}
			if b, seen := best[k]; !seen || s.price < b.price || (s.price == b.price && s.zone < b.zone) {
				best[k] = s
			}
		}
	}
	// Regions hold their on-demand offers compact until here; each region's are made
	// whole only while it is finalized, so a 90k-offer refresh holds one full copy of
	// its offers, in snap.Offers (issue 17's peak-RSS bound).
	onDem := map[string][]onDemandOffer{}
	perRegion := map[string][]pricing.Offer{} // spot offers
	total := 0
	for i := range results {
		r := &results[i]
		if r.err == nil {
			onDem[r.region] = append(onDem[r.region], r.onDem...)
			r.onDem = nil
			total += len(onDem[r.region])
			snap.Warnings = append(snap.Warnings, r.warn...)
		}
	}
	total += len(best)
	keys := make([]rk, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rk) int { return strings.Compare(a.region+"/"+a.typ, b.region+"/"+b.typ) })
	for _, k := range keys {
		s := best[k]
		f, known := allFacts[k.typ]
		if !known {
			continue
		}
		o := f.offer(k.region, k.typ, pricing.Spot, s.price, now)
		o.Zone = s.zone
		perRegion[k.region] = append(perRegion[k.region], o)
	}
	// Sized once: growing by doubling would hold up to three copies of the offers at once.
	snap.Offers = make([]pricing.Offer, 0, total)
	for _, region := range p.regions {
		if !ok[region] {
			continue
		}
		offers := make([]pricing.Offer, 0, len(onDem[region])+len(perRegion[region]))
		for _, c := range onDem[region] {
			offers = append(offers, c.facts.offer(region, c.typ, pricing.OnDemand, c.price, now))
		}
		offers = append(offers, perRegion[region]...)
		delete(onDem, region)
		valid, warn := providers.Finalize(Name, offers)
		snap.Warnings = append(snap.Warnings, warn...)
		if len(valid) == 0 {
			snap.Failed[region] = pricing.Errorf(pricing.Unavailable, "aws: %s: no GPU prices found", region)
			continue
		}
		snap.Regions = append(snap.Regions, region)
		snap.Offers = append(snap.Offers, valid...)
	}
	if len(snap.Offers) == 0 {
		errs := make([]error, 0, len(snap.Failed))
		for _, r := range p.regions {
			if e := snap.Failed[r]; e != nil {
				errs = append(errs, e)
			}
		}
		return nil, pricing.Errorf(pricing.Unavailable, "aws: no prices found: %w", errors.Join(errs...))
	}
	if len(snap.Failed) == 0 {
		snap.Failed = nil
	}
	return snap, nil
}

// regionOfZone maps an availability zone (us-east-1a, or a Local Zone such as
// us-west-2-lax-1a) to the configured region it belongs to, "" when none: the longest
// configured region that prefixes the zone and is followed by a zone letter or a dash.
func regionOfZone(zone string, regions []string) string {
	best := ""
	for _, r := range regions {
		rest, ok := strings.CutPrefix(zone, r)
		if !ok || rest == "" {
			continue
		}
		if c := rest[0]; (c >= 'a' && c <= 'z') || c == '-' {
			if len(r) > len(best) {
				best = r
			}
		}
	}
	return best
}
