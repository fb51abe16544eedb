// Package aws is picker's Amazon EC2 price adapter, built on aws-sdk-go-v2.
//
// Per configured region it joins three calls:
//
//   - Price List Query API GetProducts (ServiceCode AmazonEC2, TERM_MATCH filters for
//     Linux, shared tenancy, no pre-installed software, used capacity, no licence) for
//     the on-demand hourly price of every GPU instance type (families g*, gr*, p*);
//   - EC2 DescribeInstanceTypeOfferings for the region's GPU instance types, and
//     DescribeInstanceTypes, once per type per fetch, for the GPU facts (model, count,
//     memory) the price list lacks, with overrides for AWS's known bad data (see gpu.go);
//   - EC2 DescribeSpotPriceHistory (StartTime now, Linux/UNIX) for the current spot
//     price, keeping the cheapest availability zone per instance type and region.
//
// Regions are isolated: a region whose calls fail is reported in Snapshot.Failed and left
// out of Snapshot.Regions, so the store keeps its last good prices; the fetch fails only
// when every region fails or the context ends. The Provider is a providers.Streamer:
// Stream hands each region's offers over as the region completes.
package aws

import (
	"cmp"
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

// regionResult is what one region's calls produced.
type regionResult struct {
	region string
	onDem  []pricing.Offer
	spot   []spotRecord
	// regionFacts is the region's GPU facts until Stream merges them into sharedFacts.
	regionFacts map[string]gpuFacts
	warn        []string
	err         error
}

// Fetch prices every configured region (see the package comment): Stream's parts in
// one Snapshot, each region's on-demand offers followed by its spot offers, regions in
// configured order.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	parts := map[string][]pricing.Offer{}
	snap, err := p.Stream(ctx, func(offers []pricing.Offer) error {
		parts[offers[0].Region] = append(parts[offers[0].Region], offers...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	n := 0
	for _, offers := range parts {
		n += len(offers)
	}
	snap.Offers = make([]pricing.Offer, 0, n)
	for _, region := range p.regions {
		snap.Offers = append(snap.Offers, parts[region]...)
		delete(parts, region)
	}
	return snap, nil
}

// Stream prices every configured region and emits each region's on-demand offers as
// soon as the region's calls complete, so at most a few regions' offers (those being
// fetched) are held at once (issue 17). Spot records are placed by their zone, over
// every successful call (with one endpoint for all regions a record may belong to
// another region than the call's), so each region's spot offers are emitted at the
// end, one part per region, from the cheapest record per type kept meanwhile.
func (p *Provider) Stream(ctx context.Context, emit func([]pricing.Offer) error) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	awsCfg, err := p.loadConfig(ctx)
	if err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "aws: load config: %w", err)
	}
	now := p.opts.now().UTC()
	pc := awspricing.NewFromConfig(awsCfg)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	st := &streamState{
		emit: emit, regions: p.regions, failed: map[string]error{}, ok: map[string]bool{},
		emitted: map[string]bool{}, best: map[regionType]spotRecord{},
		warn: make([][]string, len(p.regions)), finalWarn: make([][]string, len(p.regions)),
	}
	facts := &sharedFacts{m: map[string]rankedFacts{}}
	cache := newFactsCache()
	tr := providers.NewTracker(ctx, "regions", len(p.regions))
	var g errgroup.Group
	g.SetLimit(concurrency)
	for i, region := range p.regions {
		g.Go(func() error {
			if err := ctx.Err(); err != nil { // cancelled while waiting for a slot
				return nil
			}
			ec := ec2.NewFromConfig(awsCfg, func(o *ec2.Options) { o.Region = region })
			r := p.fetchRegion(ctx, pc, ec, region, now, cache, tr)
			if r.err == nil {
				facts.merge(i, r.regionFacts)
				r.regionFacts = nil
			}
			if err := st.regionDone(i, r); err != nil {
				cancel(err)
			}
			tr.Done(region, 0)
			return nil
		})
	}
	_ = g.Wait() // a region's failure is in its result, never a group error
	if err := context.Cause(ctx); err != nil {
		if st.emitErr != nil {
			return nil, fmt.Errorf("aws: %w", st.emitErr)
		}
		return nil, fmt.Errorf("aws: %w", err)
	}
	if err := st.emitSpot(facts.m, now, tr); err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	snap, err := st.snapshot()
	if err == nil && providers.WantsQuotas(ctx) {
		var warns []string
		snap.Quotas, warns = p.readQuotas(ctx, awsCfg, facts.vcpus(), now) // quota.go
		snap.Warnings = append(snap.Warnings, warns...)
	}
	if err == nil && providers.WantsMarket(ctx) {
		snap.Market = p.readMarket(ctx, awsCfg, pc, facts.types(), now) // market.go
	}
	return snap, err
}

// regionType keys a spot price.
type regionType struct{ region, typ string }

// streamState is a Stream's bookkeeping; regionDone is called by the region workers,
// one at a time (it holds mu while emitting, so emit is never called concurrently).
type streamState struct {
	mu        sync.Mutex
	emit      func([]pricing.Offer) error
	emitErr   error
	regions   []string
	failed    map[string]error
	ok        map[string]bool // regions whose calls succeeded
	emitted   map[string]bool // regions with offers emitted
	best      map[regionType]spotRecord
	warn      [][]string // per region index: the region's own warnings
	finalWarn [][]string // per region index: Finalize's
}

func (st *streamState) regionDone(i int, r regionResult) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.emitErr != nil {
		return st.emitErr
	}
	if r.err != nil {
		st.failed[r.region] = fmt.Errorf("aws: %s: %w", r.region, r.err)
		return nil
	}
	st.ok[r.region] = true
	st.warn[i] = r.warn
	// Cheapest zone per (region, instance type), over every successful call: with one
	// endpoint for all regions, a record is placed by its zone, not by which call saw it.
	for _, s := range r.spot {
		region := regionOfZone(s.zone, st.regions)
		if region == "" {
			continue
		}
		k := regionType{region, s.instanceType}
		if b, seen := st.best[k]; !seen || s.price < b.price || (s.price == b.price && s.zone < b.zone) {
			st.best[k] = s
		}
	}
	valid, warn := providers.Finalize(Name, r.onDem)
	st.finalWarn[i] = warn
	if len(valid) == 0 {
		return nil
	}
	if err := st.emit(valid); err != nil {
		st.emitErr = err
		return err
	}
	st.emitted[r.region] = true
	return nil
}

// emitSpot emits each successful region's spot offers, the cheapest zone per type,
// for the types whose GPU facts some region gave.
func (st *streamState) emitSpot(allFacts map[string]rankedFacts, now time.Time, tr *providers.Tracker) error {
	keys := make([]regionType, 0, len(st.best))
	for k := range st.best {
		if st.ok[k.region] {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b regionType) int {
		return cmp.Or(strings.Compare(a.region, b.region), strings.Compare(a.typ, b.typ))
	})
	byRegion := map[string][]pricing.Offer{}
	for _, k := range keys {
		s := st.best[k]
		f, known := allFacts[k.typ]
		if !known {
			continue
		}
		o := f.offer(k.region, k.typ, pricing.Spot, s.price, now)
		o.Zone = s.zone
		byRegion[k.region] = append(byRegion[k.region], o)
	}
	st.best = nil
	for i, region := range st.regions {
		offers := byRegion[region]
		if len(offers) == 0 {
			continue
		}
		valid, warn := providers.Finalize(Name, offers)
		st.finalWarn[i] = append(st.finalWarn[i], warn...)
		if len(valid) == 0 {
			continue
		}
		if err := st.emit(valid); err != nil {
			return err
		}
		st.emitted[region] = true
		tr.Found(region, len(valid))
	}
	return nil
}

// snapshot is the Stream's result: covered regions (those that emitted offers) in
// configured order, failed ones, warnings; or "no prices found" when nothing was emitted.
func (st *streamState) snapshot() (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Failed: st.failed}
	for _, w := range st.warn {
		snap.Warnings = append(snap.Warnings, w...)
	}
	for _, w := range st.finalWarn {
		snap.Warnings = append(snap.Warnings, w...)
	}
	for _, region := range st.regions {
		switch {
		case st.emitted[region]:
			snap.Regions = append(snap.Regions, region)
		case st.ok[region]:
			snap.Failed[region] = pricing.Errorf(pricing.Unavailable, "aws: %s: no GPU prices found", region)
		}
	}
	if len(snap.Regions) == 0 {
		errs := make([]error, 0, len(snap.Failed))
		for _, r := range st.regions {
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

// fetchRegion runs one region's calls; tr hears of each price-list page and the
// on-demand offers found on it (spot offers are counted when emitted, at the end).
func (p *Provider) fetchRegion(ctx context.Context, pc getProductsAPI, ec ec2API, region string, now time.Time, cache *factsCache, tr *providers.Tracker) regionResult {
	res := regionResult{region: region}
	facts, warn, err := describeGPUInstanceTypes(ctx, ec, cache)
	if err != nil {
		res.err = err
		return res
	}
	res.regionFacts = facts
	res.warn = append(res.warn, warn...)

	ing := newIngester(region, facts, now)
	counted := 0
	page := func() {
		tr.Page(region, len(ing.offers)-counted)
		counted = len(ing.offers)
	}
	if err := getProducts(ctx, pc, region, pageSize, ing.add, page); err != nil {
		res.err = fmt.Errorf("get products: %w", err)
		return res
	}
	res.onDem = ing.offers
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

var _ providers.Streamer = (*Provider)(nil)
