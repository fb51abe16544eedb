package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// recommendMemo keeps the daemon's recommendations while the current offers are
// unchanged: fit.Recommend is pure, so the same request over the same offers (the same
// store.DataVersion) gives the same answer, and /v1/recommend at 100k offers spends its
// time judging offers, not reading them. Concurrent misses of one request compute it
// once. Bounded by entries: when full, or when the version moves, it starts afresh.
// Freshness warnings depend on the clock and are added per request, after it.
type recommendMemo struct {
	maxEntries int

	mu      sync.Mutex
	version int64
	m       map[string]memoized
	flight  singleflight.Group
	// hits and misses count the lookups, for /metrics.
	hits, misses atomic.Uint64
}

// memoized is one answer: the recommendation (read-only once stored) and whether no
// offer matched the filters.
type memoized struct {
	rec      *recommend.Recommendation
	noOffers bool
	read     int // offers read to answer (-v's detail)
}

func newRecommendMemo(maxEntries int) *recommendMemo {
	return &recommendMemo{maxEntries: maxEntries, m: map[string]memoized{}}
}

// versioned is a store that says which version of the current offers it holds.
type versioned interface {
	DataVersion(ctx context.Context) (int64, error)
}

// memoKey identifies a request by everything that decides its answer.
func memoKey(o *RecommendOptions, q store.Query, in recommend.RecommendInput) string {
	setup := "default"
	if in.SetupHours != nil {
		setup = strconv.FormatFloat(*in.SetupHours, 'g', -1, 64)
	}
	return fmt.Sprintf("%q|%q|%#v|%v|%#v|%s|%g|%g|%d|%g|%g|%d|%s|%g|%g|%g|%s|%d|%q|%v|%v",
		o.Model, o.Params, in.Job, in.PinGPUs, q, in.Rank, in.Tokens, in.Images, in.Steps, in.HeadroomPct, in.MFU, in.Top,
		in.Engine, in.PromptTokens, in.OutputTokens, in.Requests, setup, in.Deadline, in.Vendor, in.ByRegion, in.IgnoreQuota) + billKey(in) // allin.go
}

// recommend returns fit.Recommend's answer over the offers recommendOffers reads, from
// the memo when there is one and it holds the request at the store's current version.
// The caller gets its own shallow copy (its Warnings may be appended to).
// read is how many offers were read to answer (when it was computed).
func (o *RecommendOptions) recommend(ctx context.Context, st offerStore, q store.Query, in recommend.RecommendInput) (rec *recommend.Recommendation, noOffers bool, read int, err error) {
	compute := func() (memoized, error) {
		offers, shaped, err := launchOffers(ctx, st, q, in, o.launch) // launch.go
		if err != nil {
			return memoized{}, err
		}
		in.Offers = offers
		rec, err := recommend.Recommend(in)
		if err != nil || !shaped {
			return memoized{rec, len(offers) == 0, len(offers)}, err
		}
		switch {
		case len(rec.Offers) == 0 && len(offers) > 0:
			// Nothing fits: the nearest miss counts and compares every offer.
			if in.Offers, err = st.Offers(ctx, q); err != nil {
				return memoized{}, err
			}
			offers = in.Offers
			rec, err = recommend.Recommend(in)
		case len(rec.Excluded) > 0:
			// Exclusion counts: every matching offer of each excluded GPU model.
			var models []string
			for _, x := range rec.Excluded {
				models = append(models, x.GPUModel)
			}
			counts, err := st.(gpuCounter).CountByGPUCUDA(ctx, q, models)
			if err != nil {
				return memoized{}, err
			}
			recommend.RecountExclusionsByHost(rec, counts)
		}
		return memoized{rec, len(offers) == 0, len(offers)}, err
	}
	vs, ok := st.(versioned)
	if o.Memo == nil || !ok {
		m, err := compute()
		return m.rec, m.noOffers, m.read, err
	}
	v, err := vs.DataVersion(ctx)
	if err != nil {
		return nil, false, 0, err
	}
	key := memoKey(o, q, in)
	m, ok := o.Memo.get(v, key)
	o.Memo.count(ok)
	if !ok {
		val, err, _ := o.Memo.flight.Do(strconv.FormatInt(v, 10)+"#"+key, func() (any, error) {
			m, err := compute()
			if err == nil {
				o.Memo.put(v, key, m)
			}
			return m, err
		})
		if err != nil {
			return nil, false, 0, err
		}
		m = val.(memoized)
	}
	r := *m.rec
	r.Warnings = slices.Clone(r.Warnings)
	return &r, m.noOffers, m.read, nil
}

func (c *recommendMemo) get(v int64, key string) (memoized, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != v {
		clear(c.m)
		c.version = v
	}
	m, ok := c.m[key]
	return m, ok
}

func (c *recommendMemo) put(v int64, key string, m memoized) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != v {
		return // the offers moved on meanwhile
	}
	if len(c.m) >= c.maxEntries {
		clear(c.m)
	}
	c.m[key] = m
}

// count records a lookup's hit or miss, for /metrics.
func (c *recommendMemo) count(hit bool) {
	if hit {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
}

// counts are the lookups that hit and missed so far.
func (c *recommendMemo) counts() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }
