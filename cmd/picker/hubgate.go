package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/modelref"
	"github.com/pickergpu/picker/pricing"
)

// The API spends the operator's HF_TOKEN and network only when [daemon] allow_hub says
// so, and then at a bounded rate with failures remembered: a caller naming random ids
// cannot turn the daemon into a Hub client.
const (
	hubBurst       = 5                // fetches allowed at once after a quiet spell
	hubRefill      = 6 * time.Second  // one more fetch allowed per refill (10 a minute)
	hubNegativeTTL = 10 * time.Minute // how long a failed id is answered from memory
	hubNegativeMax = 4096             // failed ids remembered at most
)

// hubGate wraps the Hub fetches of API requests (modelref.Options.Download).
type hubGate struct {
	allow bool
	now   func() time.Time

	mu     sync.Mutex
	tokens float64
	last   time.Time
	failed map[string]hubFailure
}

type hubFailure struct {
	err   error
	until time.Time
}

func newHubGate(allow bool, now func() time.Time) *hubGate {
	return &hubGate{allow: allow, now: now, tokens: hubBurst, failed: map[string]hubFailure{}}
}

// download is modelref.Options.Download for the API.
func (g *hubGate) download(ctx context.Context, id string, fetch func() ([]byte, error)) ([]byte, error) {
	if !g.allow {
		return nil, pricing.Errorf(pricing.Invalid, "model %s is neither in the catalog nor in the daemon's Hub cache, and the API does not fetch from the Hugging Face Hub ([daemon] allow_hub = false); use a catalog name, or the CLI", id)
	}
	now := g.now()
	g.mu.Lock()
	if f, ok := g.failed[id]; ok && now.Before(f.until) {
		g.mu.Unlock()
		return nil, fmt.Errorf("%w (remembered for %v)", f.err, hubNegativeTTL)
	}
	g.tokens = min(hubBurst, g.tokens+float64(now.Sub(g.last))/float64(hubRefill))
	g.last = now
	if g.tokens < 1 {
		wait := time.Duration((1 - g.tokens) * float64(hubRefill)).Round(time.Second)
		g.mu.Unlock()
		return nil, pricing.Errorf(pricing.Unavailable, "model %s: Hugging Face Hub fetches from the API are rate-limited (%d a minute); retry in %v", id, int(time.Minute/hubRefill), max(wait, time.Second))
	}
	g.tokens--
	g.mu.Unlock()

	data, err := fetch()
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		g.mu.Lock()
		if len(g.failed) >= hubNegativeMax {
			for k, f := range g.failed { // drop the expired, else everything: bounded memory
				if !now.Before(f.until) {
					delete(g.failed, k)
				}
			}
			if len(g.failed) >= hubNegativeMax {
				clear(g.failed)
			}
		}
		g.failed[id] = hubFailure{err: err, until: now.Add(hubNegativeTTL)}
		g.mu.Unlock()
	}
	return data, err
}

// apiResolveModel is the ModelResolver of API requests: modelref with the daemon's
// environment, Hub fetches through the gate (made by apiHandlerFor, before serving).
func (a *app) apiResolveModel(ctx context.Context, ref, params string) (*model.Model, error) {
	opt := modelref.FromEnv(a.m.Getenv)
	opt.Download = a.hub.download
	return modelref.Resolve(ctx, ref, params, opt)
}
